package resp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/internal/poll"
)

// tenantRules is the tenant: its own keys, the limiter's commands only.
const tenantRules = "tenant on >tpass ~tenantA:* +@ratelimit"

// userClient connects go-redis as user/pass (RESP3, or RESP2 if proto is 2).
func (ts *testServer) userClient(t testing.TB, proto int, user, pass string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Username: user, Password: pass, Protocol: proto})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func directives(lines ...string) []UserDirective {
	var ds []UserDirective
	for i, l := range lines {
		ds = append(ds, UserDirective{Args: strings.Fields(l)[1:], Where: "test.conf:" + string(rune('1'+i))})
	}
	return ds
}

// TestACLTenant is the tenant over go-redis with Username: its keys are
// spent, another tenant's key and the server's commands are refused with Redis
// 7.0's NOPERM texts, an RL.ALL with one foreign rule spends nothing, and every
// refusal is in ACL LOG.
func TestACLTenant(t *testing.T) {
	ts := startServer(t, Config{EnableDebugCommand: true, Users: directives("user " + tenantRules)})
	ts.core.SetClock(t0)
	admin := ts.client(t, 3)
	for _, proto := range []int{2, 3} {
		run(t, admin, []call{{"ACL LOG RESET", "OK"}})
		do(admin, "DEL tenantA:k")
		tenant := ts.userClient(t, proto, "tenant", "tpass")
		run(t, tenant, []call{
			{"ACL WHOAMI", "NOPERM this user has no permissions to run the 'acl|whoami' command"},
			{"RL.TOKEN tenantA:k 10 1000", "[1 10 9 0 100]"},
			{"RL.TOKEN tenantB:x 10 1000", errNoPermKey},
			{"RL.ALL TOKEN tenantA:k 10 1000 TOKEN tenantB:x 10 1000", errNoPermKey},
			{"RL.TOKEN tenantA:k 10 1000 PEEK", "[1 10 8 0 200]"}, // one spent: none by RL.ALL
			{"FLUSHALL", "NOPERM this user has no permissions to run the 'flushall' command"},
			{"CONFIG SET requirepass x", "NOPERM this user has no permissions to run the 'config|set' command"},
			{"CONFIG GET maxmemory", "NOPERM this user has no permissions to run the 'config|get' command"},
			{"DEBUG CLOCK REAL", "NOPERM this user has no permissions to run the 'debug' command"},
			{"REPLICAOF NO ONE", "NOPERM this user has no permissions to run the 'replicaof' command"},
			{"CLUSTER INFO", "NOPERM this user has no permissions to run the 'cluster|info' command"},
			{"DEL tenantA:k", "NOPERM this user has no permissions to run the 'del' command"},
			{"PING", "NOPERM this user has no permissions to run the 'ping' command"},
			// Queued refusals doom the transaction, as Redis's.
			{"MULTI", "NOPERM this user has no permissions to run the 'multi' command"},
		})
		run(t, admin, []call{
			{"RL.TOKEN tenantA:k 10 1000 PEEK", "[1 10 8 0 200]"},
			{"ACL DRYRUN tenant RL.TOKEN tenantB:y 1 1", "This user has no permissions to access the 'tenantB:y' key"},
			{"ACL DRYRUN tenant FLUSHALL", "This user has no permissions to run the 'flushall' command"},
			{"ACL DRYRUN tenant RL.ALL TOKEN tenantA:a 1 1 FIXED tenantA:b 1 1", "OK"},
			{"ACL DRYRUN nobody PING", "ERR User 'nobody' not found"},
			{"ACL DRYRUN tenant NOSUCH", "ERR Command 'NOSUCH' not found"},
			{"ACL DRYRUN tenant RL.TOKEN", "ERR wrong number of arguments for 'rl.token' command"},
		})
		var entries []acl.LogEntry
		for _, e := range ts.aclLog.Entries(100) {
			if e.Object != "client|setinfo" { // go-redis's, on connecting
				entries = append(entries, e)
			}
		}
		if len(entries) != 11 {
			t.Fatalf("ACL LOG has %d entries: %+v", len(entries), entries)
		}
		key := entries[len(entries)-2] // RL.TOKEN tenantB:x, then RL.ALL's, in one entry
		if key.Count != 2 {
			t.Errorf("alike refusals not counted in one entry: %+v", key)
		}
		if key.Reason != acl.ReasonKey || key.Object != "tenantB:x" || key.Username != "tenant" ||
			key.Context != acl.ContextToplevel || !strings.Contains(key.ClientInfo, "user=tenant") {
			t.Errorf("key entry: %+v", key)
		}
	}
	// ACL LOG's reply, as Redis 7.2 shapes it.
	log, err := admin.Do(context.Background(), "ACL", "LOG", "1").Slice()
	if err != nil || len(log) != 1 {
		t.Fatal(log, err)
	}
	entry := log[0].(map[any]any)
	for _, f := range []string{"count", "reason", "context", "object", "username", "age-seconds", "client-info",
		"entry-id", "timestamp-created", "timestamp-last-updated"} {
		if _, ok := entry[f]; !ok {
			t.Errorf("ACL LOG entry lacks %s: %v", f, entry)
		}
	}
	if entry["reason"] != "command" || entry["object"] != "multi" {
		t.Errorf("newest entry: %v", entry)
	}
}

// TestACLMulti: a refusal when queued dooms the transaction; rules changed after
// queueing are checked again at EXEC, as Redis 7.0.
func TestACLMulti(t *testing.T) {
	ts := startServer(t, Config{Users: directives("user t on nopass ~a:* +@ratelimit +multi +exec")})
	admin := ts.client(t, 2)
	r := ts.raw(t)
	r.send("AUTH t x\r\n")
	r.expect("+OK\r\n")
	r.send("MULTI\r\n")
	r.expect("+OK\r\n")
	r.send("RL.TOKEN b:x 1 1\r\n")
	r.expect("-" + errNoPermKey + "\r\n")
	r.send("EXEC\r\n")
	r.expect("-" + errExecAbort + "\r\n")
	r.send("MULTI\r\n")
	r.expect("+OK\r\n")
	r.send("RL.TOKEN a:x 1 1000\r\n")
	r.expect("+QUEUED\r\n")
	run(t, admin, []call{{"ACL SETUSER t -rl.token", "OK"}})
	r.send("EXEC\r\n")
	r.expect("*1\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. " +
		"This command is no longer allowed for the following reason: no permission to execute the command or subcommand\r\n")
	if e := ts.aclLog.Entries(1); len(e) != 1 || e[0].Context != acl.ContextMulti || e[0].Object != "rl.token" {
		t.Fatalf("%+v", e)
	}
}

// TestACLUsers: SETUSER all or nothing, AUTH and HELLO AUTH as a user, DELUSER
// closing the user's connections, the default user as requirepass sets it.
func TestACLUsers(t *testing.T) {
	ts := startServer(t, Config{RequirePass: "secret"})
	admin := ts.userClient(t, 2, "default", "secret")
	run(t, admin, []call{
		{"ACL SETUSER alice on >a1 ~a:* +@ratelimit +acl|whoami", "OK"},
		{"ACL SETUSER alice off ~b:* +nosuch", "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"},
		{"ACL LIST", "[user alice on #" + acl.HashPassword("a1") + " ~a:* resetchannels -@all +@ratelimit +acl|whoami user default on #" +
			acl.HashPassword("secret") + " ~* &* +@all]"},
		{"ACL USERS", "[alice default]"},
		{"ACL GETUSER nobody", "(nil)"},
		{"ACL GETUSER alice", "[flags [on] passwords [" + acl.HashPassword("a1") + "] commands -@all +@ratelimit +acl|whoami keys ~a:* channels  selectors []]"},
		{"ACL DELUSER default", "ERR The 'default' user cannot be removed"},
		{"ACL CAT nosuch", "ERR Unknown category 'nosuch'"},
		{"ACL GENPASS 0", "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"},
		{"ACL SAVE", errNoACLFile},
		{"ACL LOAD", errNoACLFile},
		{"ACL WHOAMI", "default"},
	})
	if p := do(admin, "ACL GENPASS"); len(p) != 64 {
		t.Errorf("GENPASS: %q", p)
	}
	if p := do(admin, "ACL GENPASS 5"); len(p) != 2 {
		t.Errorf("GENPASS 5: %q", p)
	}
	r := ts.raw(t)
	r.send("AUTH alice wrong\r\n")
	r.expect("-" + errWrongPass + "\r\n")
	r.send("AUTH alice a1\r\n")
	r.expect("+OK\r\n")
	r.send("ACL WHOAMI\r\n")
	r.expect("$5\r\nalice\r\n")
	alice := ts.userClient(t, 3, "alice", "a1")
	run(t, alice, []call{{"RL.TOKEN a:1 1 1000", "[1 1 0 0 1000]"}, {"CLIENT ID", "NOPERM this user has no permissions to run the 'client|id' command"}})
	if e := ts.aclLog.Entries(10); len(e) < 2 || e[len(e)-1].Reason != acl.ReasonAuth || e[len(e)-1].Object != "AUTH" || e[len(e)-1].Username != "alice" {
		t.Fatalf("auth entry: %+v", e)
	}
	if !strings.Contains(do(admin, "CLIENT LIST"), "user=alice") {
		t.Error("CLIENT LIST does not show user=alice")
	}
	// acllog-max-len drops the oldest entries at once, and keeps that many after.
	run(t, admin, []call{{"CONFIG SET acllog-max-len 1", "OK"}})
	if e := ts.aclLog.Entries(10); len(e) != 1 {
		t.Errorf("ACL LOG after CONFIG SET acllog-max-len 1: %+v", e)
	}
	run(t, alice, []call{{"CLIENT INFO", "NOPERM this user has no permissions to run the 'client|info' command"}})
	if e := ts.aclLog.Entries(10); len(e) != 1 || e[0].Object != "client|info" {
		t.Errorf("ACL LOG of 1 after a refusal: %+v", e)
	}
	run(t, admin, []call{{"ACL DELUSER alice nobody", "1"}})
	r.expectClosed()
	poll.Until(t, 10*time.Second, "alice's connections closed", func() bool { return !strings.Contains(do(admin, "CLIENT LIST"), "user=alice") })
	// requirepass is the default user's password.
	run(t, admin, []call{{"CONFIG SET requirepass other", "OK"}})
	if ts.acl.Authenticate("default", "other") == nil || ts.acl.Authenticate("default", "secret") != nil {
		t.Error("CONFIG SET requirepass did not change the default user's password")
	}
}

// TestACLRevokedSubscribers: ACL SETUSER closes the user's connections subscribed
// to a channel or pattern the new rules do not allow, at once (gone from CLIENT
// LIST, no more messages), and keeps those whose subscriptions are still allowed,
// as Redis's ACLKillPubsubClientsIfNeeded (acl.tcl's "Subscribers are killed").
func TestACLRevokedSubscribers(t *testing.T) {
	ts := startServer(t, Config{Users: directives("user ps on >p resetchannels &foo:1 &bar:* +@all")})
	admin := ts.client(t, 2)
	sub := func(name, cmd, kind, ch string) *rawConn {
		r := ts.raw(t)
		r.send("AUTH ps p\r\nCLIENT SETNAME " + name + "\r\n" + cmd + " " + ch + "\r\n")
		r.expect(fmt.Sprintf("+OK\r\n+OK\r\n*3\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n:1\r\n", len(kind), kind, len(ch), ch))
		return r
	}
	sub("lit", "SUBSCRIBE", "subscribe", "foo:1")
	pat := sub("pat", "PSUBSCRIBE", "psubscribe", "bar:*")
	run(t, admin, []call{{"ACL SETUSER ps resetchannels &foo:1 &bar:x", "OK"}})
	if l := do(admin, "CLIENT LIST"); strings.Contains(l, "name=pat") || !strings.Contains(l, "name=lit") {
		t.Errorf("after revoking the pattern bar:*, CLIENT LIST:\n%s", l)
	}
	pat.expectClosed()
	run(t, admin, []call{{"PUBLISH foo:1 m", "1"}, {"ACL SETUSER ps allchannels", "OK"}, {"PUBLISH foo:1 m", "1"},
		{"ACL SETUSER ps resetchannels", "OK"}, {"PUBLISH foo:1 m", "0"}})
	if l := do(admin, "CLIENT LIST"); strings.Contains(l, "name=lit") {
		t.Errorf("after resetchannels, CLIENT LIST:\n%s", l)
	}
}
