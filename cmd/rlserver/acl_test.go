package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/conffile"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
)

// aclServer is an rlserver process (the binary) on a fixed address, restarted on it.
type aclServer struct {
	t        *testing.T
	bin, dir string
	addr     string
	argv     []string // after the binary: a config file first, if any
	p        *launch.Proc
	admin    *redis.Client
}

// startACLServer starts bin with argv on a free address; it stops when t ends.
func startACLServer(t *testing.T, bin string, argv ...string) *aclServer {
	t.Helper()
	addr, err := launch.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	s := &aclServer{t: t, bin: bin, dir: t.TempDir(), addr: addr, argv: argv}
	s.start()
	t.Cleanup(func() { s.p.Stop() })
	return s
}

// start runs the process; the error quotes its log.
func (s *aclServer) start() {
	s.t.Helper()
	if err := s.tryStart(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *aclServer) tryStart() error {
	log, err := launch.LogIn(s.dir, "rlserver")
	if err != nil {
		return err
	}
	argv := append(append([]string{s.bin}, s.argv...), "-addr", s.addr, "-loglevel", "warn")
	if s.p, err = launch.Start(launch.Spec{Name: "rlserver", Addr: s.addr, Log: log, Argv: argv}); err != nil {
		return err
	}
	s.admin = redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, Protocol: 2})
	s.t.Cleanup(func() { s.admin.Close() })
	return nil
}

// restart stops the process (SIGTERM) and starts it again with the same arguments.
func (s *aclServer) restart() {
	s.t.Helper()
	s.p.Stop()
	s.start()
}

// do is one command's reply on rdb as text: an error's text, an array's
// elements a line each.
func do(rdb *redis.Client, args ...any) string {
	v, err := rdb.Do(context.Background(), args...).Result()
	if err != nil {
		return err.Error()
	}
	if a, ok := v.([]any); ok {
		lines := make([]string, len(a))
		for i, e := range a {
			lines[i] = fmt.Sprint(e)
		}
		return strings.Join(lines, "\n")
	}
	return fmt.Sprint(v)
}

// checkTenant: the tenant logs in with its password, spends its keys and is
// refused another tenant's.
func checkTenant(t *testing.T, addr, user, pass, own string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: pass, MaxRetries: -1, Protocol: 2})
	defer rdb.Close()
	if got := do(rdb, "RL.FIXED", own, 5, 60000); !strings.HasPrefix(got, "1\n5\n") {
		t.Errorf("%s: RL.FIXED %s: %q", user, own, got)
	}
	if got := do(rdb, "RL.FIXED", "other:x", 5, 60000); !strings.HasPrefix(got, "NOPERM") {
		t.Errorf("%s: RL.FIXED other:x: %q, want NOPERM", user, got)
	}
}

// TestACLConfigFileProcess: users of a config file's user lines, changed by ACL
// SETUSER and CONFIG SET acllog-max-len, written by CONFIG REWRITE, are the same
// after a restart of the process.
func TestACLConfigFileProcess(t *testing.T) {
	bin := buildBinary(t, "")
	conf := filepath.Join(t.TempDir(), "rl.conf")
	os.WriteFile(conf, []byte("# users\nuser tenant on >tpass ~tenantA:* +@ratelimit\nmaxclients 50\n"), 0o600)
	s := startACLServer(t, bin, conf)
	checkTenant(t, s.addr, "tenant", "tpass", "tenantA:1")
	for _, c := range [][]any{
		{"ACL", "SETUSER", "bob", "on", ">bpass", "~tenantB:*", "+@ratelimit"},
		{"CONFIG", "SET", "acllog-max-len", "3"},
		{"CONFIG", "REWRITE"},
	} {
		if got := do(s.admin, c...); got != "OK" {
			t.Fatalf("%v: %s", c, got)
		}
	}
	list := do(s.admin, "ACL", "LIST")
	ds, err := conffile.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, d := range ds {
		if d.Name == "user" {
			users = append(users, "user "+strings.Join(d.Args, " "))
		}
	}
	// The file's own user line stays in place, under its comment; the others follow.
	sorted := slices.Sorted(slices.Values(users))
	if text, _ := os.ReadFile(conf); strings.Join(sorted, "\n") != list || !strings.HasPrefix(string(text), "# users\nuser tenant ") {
		t.Errorf("CONFIG REWRITE's user lines (tenant's in place):\n%s\nwant ACL LIST's:\n%s", text, list)
	}
	s.restart()
	// A user line of the default user starts from reset, which sets
	// sanitize-payload, as in Redis (it changes nothing here: no RESTORE checks).
	if got := strings.Replace(do(s.admin, "ACL", "LIST"), " sanitize-payload", "", 1); got != list {
		t.Errorf("ACL LIST after a restart:\n%s\nwant:\n%s", got, list)
	}
	checkTenant(t, s.addr, "tenant", "tpass", "tenantA:2")
	checkTenant(t, s.addr, "bob", "bpass", "tenantB:1")
	if got := do(s.admin, "CONFIG", "GET", "acllog-max-len"); got != "acllog-max-len\n3" {
		t.Errorf("CONFIG GET acllog-max-len after a restart: %q", got)
	}
	bob := redis.NewClient(&redis.Options{Addr: s.addr, Username: "bob", Password: "bpass", MaxRetries: -1})
	defer bob.Close()
	for i := range 5 { // five entries: a key of its own each
		do(bob, "RL.FIXED", fmt.Sprint("other:", i), 5, 60000)
	}
	if n, err := s.admin.ACLLog(context.Background(), 100).Result(); err != nil || len(n) != 3 {
		t.Errorf("ACL LOG with acllog-max-len 3: %d entries, %v", len(n), err)
	}
}

// TestACLFileProcess: an aclfile's users, one added by ACL SETUSER and written by
// ACL SAVE, are the same after a restart of the process; ACL LOAD of a bad file
// answers redis-server 7.0's error, byte for byte (each bad line with file:line),
// and changes nothing; a bad aclfile stops the start.
func TestACLFileProcess(t *testing.T) {
	bin := buildBinary(t, "")
	aclfile := filepath.Join(t.TempDir(), "users.acl")
	good := "user default on nopass ~* &* +@all\nuser tenant on >tpass ~tenantA:* +@ratelimit\n"
	os.WriteFile(aclfile, []byte(good), 0o600)
	// Redis has its own file (it knows no @ratelimit), given the same bad lines.
	redisACL := filepath.Join(t.TempDir(), "users.acl")
	os.WriteFile(redisACL, []byte("user default on nopass ~* &* +@all\n"), 0o600)
	redisAddr := testenv.StartRedis(t, "--aclfile", redisACL)
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, MaxRetries: -1})
	defer rdb.Close()
	s := startACLServer(t, bin, "-aclfile", aclfile)
	checkTenant(t, s.addr, "tenant", "tpass", "tenantA:1")
	for _, c := range [][]any{{"ACL", "SETUSER", "carol", "on", ">cpass", "~tenantC:*", "+@ratelimit"}, {"ACL", "SAVE"}} {
		if got := do(s.admin, c...); got != "OK" {
			t.Fatalf("%v: %s", c, got)
		}
	}
	list := do(s.admin, "ACL", "LIST")
	if text, _ := os.ReadFile(aclfile); string(text) != list+"\n" {
		t.Errorf("ACL SAVE wrote:\n%s\nwant ACL LIST:\n%s", text, list)
	}
	s.restart()
	if got := do(s.admin, "ACL", "LIST"); got != list {
		t.Errorf("ACL LIST after a restart:\n%s\nwant:\n%s", got, list)
	}
	checkTenant(t, s.addr, "carol", "cpass", "tenantC:1")

	bad := "user tenant off\nuser dave on +nosuch\n\nuser eve bogus\nnotuser x\nuser carol on >x ~a %Z~b\nuser f +@nosuch -nosuch\nuser tenant on\n"
	os.WriteFile(aclfile, []byte(bad), 0o600)
	os.WriteFile(redisACL, []byte(bad), 0o600)
	want := strings.ReplaceAll(do(rdb, "ACL", "LOAD"), redisACL, "FILE")
	got := strings.ReplaceAll(do(s.admin, "ACL", "LOAD"), aclfile, "FILE")
	if got != want || !strings.Contains(got, "FILE:2: ") {
		t.Errorf("ACL LOAD of a bad file:\n rlserver: %s\n    redis: %s", got, want)
	}
	if got := do(s.admin, "ACL", "LIST"); got != list {
		t.Errorf("ACL LIST after a bad ACL LOAD:\n%s\nwant:\n%s", got, list)
	}
	checkTenant(t, s.addr, "tenant", "tpass", "tenantA:2")

	// A bad aclfile at start: the process exits, naming the line.
	s2 := &aclServer{t: t, bin: bin, dir: t.TempDir(), argv: []string{"-aclfile", aclfile}}
	s2.addr, _ = launch.FreeAddr()
	err := s2.tryStart()
	if err == nil {
		s2.p.Stop()
	}
	if err == nil || !strings.Contains(err.Error(), "Aborting Redis startup because of ACL errors: "+aclfile+":2: ") {
		t.Errorf("start with a bad aclfile: %v", err)
	}
}
