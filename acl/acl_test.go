package acl

import (
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/store"
)

// testTable is a small command table with a container, a category of its own and
// a command with no subcommands (select, for first arguments).
func testTable() *Table {
	return NewTable([]Command{
		{Name: "get", Categories: []string{"read", "fast", "string"}},
		{Name: "set", Categories: []string{"write", "slow", "string"}},
		{Name: "flushall", Categories: []string{"write", "slow", "keyspace", "dangerous"}},
		{Name: "select", Categories: []string{"fast", "connection"}},
		{Name: "auth", Categories: []string{"fast", "connection"}, NoAuth: true},
		{Name: "config", Categories: []string{"slow"}},
		{Name: "config|get", Categories: []string{"admin", "slow", "dangerous"}},
		{Name: "config|set", Categories: []string{"admin", "slow", "dangerous"}},
		{Name: "rl.token", Categories: []string{"write", "fast", "ratelimit"}},
		{Name: "rl.peek", Categories: []string{"read", "fast", "ratelimit"}},
	})
}

func TestSetUserRules(t *testing.T) {
	cases := []struct {
		rules []string
		want  string // ACL LIST's rules, or the error
	}{
		{nil, "off resetchannels -@all"},
		{[]string{"on", ">p1", "~tenantA:*", "+@ratelimit"}, "on #" + HashPassword("p1") + " ~tenantA:* resetchannels -@all +@ratelimit"},
		{[]string{"reset"}, "off sanitize-payload resetchannels -@all"},
		{[]string{"on", "nopass", "allkeys", "allchannels", "allcommands"}, "on nopass ~* &* +@all"},
		{[]string{"+@all", "-flushall"}, "off resetchannels +@all -@keyspace"}, // the only one of its category here
		{[]string{"+@all", "-set"}, "off resetchannels +@all -set"},
		{[]string{"+@all", "-@dangerous"}, "off resetchannels +@all -@dangerous"},
		{[]string{"+get", "+config|get"}, "off resetchannels -@all +get +config|get"},
		{[]string{"-@all", "+config"}, "off resetchannels -@all +@admin +config"}, // its subcommands are all of @admin
		{[]string{"+select|0", "+select|1"}, "off resetchannels -@all +select|0 +select|1"},
		{[]string{"%R~r:*", "%W~w:*", "%RW~rw:*", "~r:*"}, "off ~r:* %W~w:* ~rw:* resetchannels -@all"},
		{[]string{"&news.*", "&x"}, "off resetchannels &news.* &x -@all"},
		{[]string{">a", ">b", "<a"}, "off #" + HashPassword("b") + " resetchannels -@all"},
		{[]string{"#" + HashPassword("h"), "nopass"}, "off nopass resetchannels -@all"},
		{[]string{"~a", "resetkeys", "~b"}, "off ~b resetchannels -@all"},
		{[]string{"ON", "+GET"}, "on resetchannels -@all +get"},
		{[]string{""}, "off resetchannels -@all"},
		// Bad rules: Redis's texts.
		{[]string{"on", "bogus"}, "Error in ACL SETUSER modifier 'bogus': Syntax error"},
		{[]string{"+nosuch"}, "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"},
		{[]string{"-nosuch"}, "Error in ACL SETUSER modifier '-nosuch': Unknown command or category name in ACL"},
		{[]string{"+@nosuch"}, "Error in ACL SETUSER modifier '+@nosuch': Unknown command or category name in ACL"},
		{[]string{"+config|nosuch"}, "Error in ACL SETUSER modifier '+config|nosuch': Unknown command or category name in ACL"},
		{[]string{"+config|get|x"}, "Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported"},
		{[]string{"+select|"}, "Error in ACL SETUSER modifier '+select|': Syntax error"},
		{[]string{"allkeys", "~x"}, "Error in ACL SETUSER modifier '~x': " + errKeysAfterAll.Error()},
		{[]string{"allchannels", "&x"}, "Error in ACL SETUSER modifier '&x': " + errChannelsAfterAll.Error()},
		{[]string{"<nope"}, "Error in ACL SETUSER modifier '<nope': The password you are trying to remove from the user does not exist"},
		{[]string{"#abc"}, "Error in ACL SETUSER modifier '#abc': " + errBadHash.Error()},
		{[]string{"!" + strings.ToUpper(HashPassword("x"))}, "Error in ACL SETUSER modifier '!" + strings.ToUpper(HashPassword("x")) + "': " + errBadHash.Error()},
		{[]string{"%X~a"}, "Error in ACL SETUSER modifier '%X~a': Syntax error"},
		{[]string{"%RR~a"}, "Error in ACL SETUSER modifier '%RR~a': Syntax error"},
		{[]string{"(~x +get)"}, "Error in ACL SETUSER modifier '(~x +get)': Syntax error"},
	}
	for _, tc := range cases {
		r := NewRegistry(testTable())
		err := r.SetUser("alice", tc.rules)
		got := ""
		if err != nil {
			got = err.Error()
			if r.User("alice") != nil {
				t.Errorf("%q: refused, yet the user exists", tc.rules)
			}
		} else {
			got = strings.TrimPrefix(r.List()[0], "user alice ")
		}
		if got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.rules, got, tc.want)
		}
	}
}

// TestSetUserAllOrNothing: a list with one bad rule leaves the user as it was.
func TestSetUserAllOrNothing(t *testing.T) {
	r := NewRegistry(testTable())
	if err := r.SetUser("bob", []string{"on", ">pw", "~a:*", "+get"}); err != nil {
		t.Fatal(err)
	}
	before := r.List()
	if err := r.SetUser("bob", []string{"off", "resetpass", "~b:*", "+set", "+nosuch"}); err == nil {
		t.Fatal("a bad rule was accepted")
	}
	if after := r.List(); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("half applied:\n%v\n%v", before, after)
	}
	if r.Authenticate("bob", "pw") == nil {
		t.Fatal("bob's password no longer works")
	}
	if err := r.SetUser("has space", nil); err == nil || err.Error() != "Usernames can't contain spaces or null characters" {
		t.Fatalf("name with a space: %v", err)
	}
}

func TestChecks(t *testing.T) {
	tb := testTable()
	r := NewRegistry(tb)
	if !r.Default().Perms().All() {
		t.Fatal("the default user must skip all checks")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.SetUser("t", []string{"on", "nopass", "~tenantA:*", "%R~shared:*", "%W~sink:*", "+@ratelimit", "+config|get", "+select|0", "&news.*"}))
	p := r.User("t").Perms()
	if p.All() {
		t.Fatal("a restricted user skips checks")
	}
	args := func(s string) [][]byte {
		var out [][]byte
		for _, w := range strings.Fields(s) {
			out = append(out, []byte(w))
		}
		return out
	}
	runs := []struct {
		cmd, call string
		want      bool
	}{
		{"rl.token", "rl.token k 1 1", true},
		{"rl.peek", "rl.peek k", true},
		{"get", "get k", false},
		{"flushall", "flushall", false},
		{"config|get", "config get x", true},
		{"config|set", "config set x y", false},
		{"config", "config", false},
		{"select", "select 0", true},
		{"select", "select 1", false},
		{"auth", "auth a b", true}, // no-auth commands are never refused
	}
	for _, c := range runs {
		if got := p.CanRun(tb.ID(c.cmd), args(c.call)); got != c.want {
			t.Errorf("CanRun %s = %v", c.call, got)
		}
	}
	keys := []struct {
		key         string
		read, write bool
		want        bool
	}{
		{"tenantA:x", true, true, true},
		{"tenantB:x", true, true, false},
		{"tenantB:x", false, false, false},
		{"shared:1", true, false, true},
		{"shared:1", false, true, false},
		{"sink:1", false, true, true},
		{"sink:1", true, true, false},
	}
	for _, k := range keys {
		if got := p.CanKey([]byte(k.key), k.read, k.write); got != k.want {
			t.Errorf("CanKey %s r=%v w=%v = %v", k.key, k.read, k.write, got)
		}
	}
	if !p.CanChannel([]byte("news.sport"), false) || p.CanChannel([]byte("other"), false) ||
		p.CanChannel([]byte("news.s*"), true) || !p.CanChannel([]byte("news.*"), true) {
		t.Error("channel checks")
	}
	// A change reaches whoever holds the user.
	u := r.User("t")
	must(r.SetUser("t", []string{"-@ratelimit"}))
	if u.Perms().CanRun(tb.ID("rl.token"), args("rl.token k 1 1")) {
		t.Error("the change did not reach the user held")
	}
}

func TestAuthenticate(t *testing.T) {
	r := NewRegistry(testTable())
	if r.Authenticate("default", "anything") == nil {
		t.Fatal("default nopass refuses")
	}
	r.SetDefaultPassword("secret")
	if r.Authenticate("default", "x") != nil || r.Authenticate("default", "secret") == nil || !r.DefaultNeedsPassword() {
		t.Fatal("requirepass")
	}
	if got := r.List()[0]; got != "user default on #"+HashPassword("secret")+" ~* &* +@all" {
		t.Fatal(got)
	}
	r.SetDefaultPassword("")
	if r.DefaultNeedsPassword() {
		t.Fatal("requirepass cleared")
	}
	_ = r.SetUser("off", []string{">p"})
	if r.Authenticate("off", "p") != nil {
		t.Fatal("a user that is off logged in")
	}
	if r.Authenticate("nobody", "p") != nil {
		t.Fatal("an unknown user logged in")
	}
	gone, err := r.DelUser([]string{"off", "nobody"})
	if err != nil || len(gone) != 1 || !gone[0].Deleted() {
		t.Fatal(gone, err)
	}
	if _, err := r.DelUser([]string{"off", "default"}); err == nil || err.Error() != "The 'default' user cannot be removed" {
		t.Fatal(err)
	}
}

func TestParseFile(t *testing.T) {
	tb := testTable()
	good := "user default on nopass ~* &* +@all\n\n  user alice on >p ~a:*  +@ratelimit\r\n"
	users, err := ParseFile(tb, "users.acl", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(tb)
	r.Replace(users)
	if got := strings.Join(r.List(), "\n"); got != "user alice on #"+HashPassword("p")+" ~a:* resetchannels -@all +@ratelimit\n"+
		"user default on nopass ~* &* +@all" {
		t.Fatal(got)
	}
	// Read back what Save writes.
	again, err := ParseFile(tb, "users.acl", []byte(r.Save()))
	if err != nil {
		t.Fatal(err)
	}
	r2 := NewRegistry(tb)
	r2.Replace(again)
	if r2.Save() != r.Save() {
		t.Fatalf("not read back:\n%s\n%s", r.Save(), r2.Save())
	}
	bad := []struct{ text, want string }{
		{"# comment\n", "users.acl:1 should start with user keyword followed by the username. "},
		{"user\n", "users.acl:1 should start with user keyword followed by the username. "},
		{"USER a on\n", "users.acl:1 should start with user keyword followed by the username. "},
		{"user a on\nuser a off\n", "WARNING: Duplicate user 'a' found on line 2. "},
		{"user a +nosuch +@nosuch\n", "users.acl:1: Error in applying operation '+nosuch': Unknown command or category name in ACL. " +
			"users.acl:1: Error in applying operation '+@nosuch': Unknown command or category name in ACL. "},
		{"user a on bogus <x\nuser b ~ok\nuser c %Q~x\n", "users.acl:1: Syntax error. users.acl:3: Syntax error. "},
	}
	for _, b := range bad {
		_, err := ParseFile(tb, "users.acl", []byte(b.text))
		want := b.want + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
		if err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", b.text, err, want)
		}
	}
}

func TestConfig(t *testing.T) {
	c := NewConfig(testTable())
	if err := c.Add([]string{"alice", "on", ">p", "~a:*", "+get"}); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"alice", "on"}, "Error in user declaration 'alice': Duplicate user found. A user can only be defined once in config files"},
		{[]string{"bob", "on", "+nosuch"}, "Error loading ACL rule '+nosuch' for the user named 'bob': Unknown command or category name in ACL"},
		{[]string{"bob", "+nosuch", "-@nosuch", "junk"}, "Error in user declaration 'junk': Syntax error"}, // the syntax first, as Redis's
		{[]string{"bob", "junk"}, "Error in user declaration 'junk': Syntax error"},
	}
	for _, b := range bad {
		if err := c.Add(b.args); err == nil || err.Error() != b.want {
			t.Errorf("%q: %v", b.args, err)
		}
	}
	users := c.Users()
	if len(users) != 1 || users["alice"] == nil || users["alice"].All() {
		t.Fatal(users)
	}
	// A declared default user starts from reset, as Redis's.
	c2 := NewConfig(testTable())
	_ = c2.Add([]string{"default", "on", ">x", "+get"})
	if got := c2.Users()["default"].Describe(); got != "on sanitize-payload #"+HashPassword("x")+" resetchannels -@all +get" {
		t.Fatal(got)
	}
}

func TestLog(t *testing.T) {
	l := NewLog(3)
	t0 := time.Unix(1000, 0)
	e := LogEntry{Reason: ReasonKey, Context: ContextToplevel, Object: "k", Username: "u", ClientInfo: "c1"}
	l.Add(e, t0)
	e.ClientInfo = "c2"
	l.Add(e, t0.Add(time.Second))
	got := l.Entries(10)
	if len(got) != 1 || got[0].Count != 2 || got[0].ClientInfo != "c2" || !got[0].Created.Equal(t0) || got[0].Updated.Equal(t0) {
		t.Fatalf("grouping: %+v", got)
	}
	l.Add(e, t0.Add(2*time.Minute)) // too late to group
	e.Object = "other"
	l.Add(e, t0.Add(2*time.Minute))
	l.Add(LogEntry{Reason: ReasonCommand, Object: "get"}, t0.Add(2*time.Minute))
	got = l.Entries(10)
	if len(got) != 3 || got[0].Object != "get" || got[0].ID != 3 || got[2].Count != 1 {
		t.Fatalf("order or cap: %+v", got)
	}
	if len(l.Entries(-1)) != 0 || len(l.Entries(1)) != 1 {
		t.Fatal("count")
	}
	l.Reset()
	if len(l.Entries(10)) != 0 {
		t.Fatal("reset")
	}
}

func TestCategories(t *testing.T) {
	tb := testTable()
	got, ok := tb.InCategory("RATELIMIT")
	if !ok || strings.Join(got, " ") != "rl.token rl.peek" {
		t.Fatal(got)
	}
	if _, ok := tb.InCategory("nosuch"); ok {
		t.Fatal("unknown category")
	}
	if s := strings.Join(CategoriesOf([]string{"ratelimit", "write", "fast"}), " "); s != "@write @fast @ratelimit" {
		t.Fatal(s)
	}
}

// TestKeyPatternsAsGlob: the prefix index (finish) decides every key as Redis's
// glob of each pattern would, for prefix-shaped patterns and the others, with
// access modes per pattern.
func TestKeyPatternsAsGlob(t *testing.T) {
	patterns := []string{"t:*", "t*", "ab*", "a?:*", "a[b]:*", `x\*`, `x\*y*`, "*:x", "tenantA:*", "t:**"}
	keys := []string{"", "t", "t:", "t:1", "tx", "ab", "abc", "a1:", "ab:", "x*", "x*yz", "q:x", "tenantA:", "tenantA:9", "tenantB:1"}
	r := NewRegistry(testTable())
	for _, pat := range patterns {
		for _, mode := range []string{"~", "%R~", "%W~"} {
			if err := r.SetUser("u", []string{"reset", "on", "nopass", "+@all", mode + pat, "%R~unrelated:*"}); err != nil {
				t.Fatal(err)
			}
			p := r.User("u").Perms()
			for _, k := range keys {
				glob := store.Match([]byte(pat), []byte(k), false)
				for _, rw := range [][2]bool{{true, false}, {false, true}, {true, true}} {
					granted := mode == "~" || mode == "%R~" && !rw[1] || mode == "%W~" && !rw[0]
					if got, want := p.CanKey([]byte(k), rw[0], rw[1]), glob && granted; got != want {
						t.Errorf("%s%s, key %q, read %v write %v: %v, want %v", mode, pat, k, rw[0], rw[1], got, want)
					}
				}
			}
		}
	}
}
