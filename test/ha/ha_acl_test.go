package ha_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/testenv"
)

// haUsers are every node's users in TestSentinelACL (ACLs are not replicated, as
// in Redis: each node is given them). The default user is off; the replica's user
// runs the replication commands alone, the Sentinel's those of Redis's documented
// Sentinel user that rlserver has (no SCRIPT).
var haUsers = []string{
	"default off",
	"admin on >adminpass ~* &* +@all",
	"app on >apppass ~* +@ratelimit",
	"repl on >replpass +rlsync +replconf +ping",
	"sentinel on >sentpass allchannels +multi +slaveof +ping +exec +subscribe +config|rewrite +role +publish +info +client|setname +client|kill",
}

// aclAuth is a set of rlservers with haUsers: replicas log in as repl
// (-masteruser), the Sentinels as sentinel (auth-user), the test as admin.
var aclAuth = haAuth{startRLACL, "sentinel auth-user mymaster sentinel\nsentinel auth-pass mymaster sentpass\n"}

// startRLACL starts an rlserver with haUsers on a free port.
func startRLACL(t testing.TB, name string, args ...string) *haNode {
	t.Helper()
	addr, err := launch.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{testenv.RLServerBin(t), "-addr", addr, "-masteruser", "repl", "-masterauth", "replpass", "-loglevel", "INFO"}
	for _, u := range haUsers {
		argv = append(argv, "-user", u)
	}
	n := &haNode{t: t, name: name, addr: addr, user: "admin", pass: "adminpass", spec: launch.Spec{Name: name, Addr: addr,
		Log:  filepath.Join(t.TempDir(), name+".log"),
		Argv: append(argv, args...)}}
	n.start()
	t.Cleanup(n.kill)
	return n
}

// TestSentinelACL: three real Sentinels with auth-user watch an rlserver primary
// whose default user is off, and two replicas logged in to it as an ACL user. A
// client as an ACL user through go-redis's FailoverClient drains a key; the primary
// is killed; the Sentinels promote a replica, the client follows and the key is
// still drained; the other replica and the old primary, restarted, follow the new
// primary as repl. No node refused the Sentinels or the replicas anything.
func TestSentinelACL(t *testing.T) {
	needBinaries(t)
	set := startHAWith(t, true, aclAuth)
	ctx := context.Background()
	anon := redis.NewClient(&redis.Options{Addr: set.primary.addr, MaxRetries: -1})
	defer anon.Close()
	if err := anon.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("PING without AUTH on the primary: %v, want NOAUTH", err)
	}
	var sentinelAddrs []string
	for _, s := range set.sentinels {
		sentinelAddrs = append(sentinelAddrs, s.addr)
	}
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: sentinelAddrs,
		Username: "app", Password: "apppass", MaxRetries: -1, DialTimeout: time.Second, ContextTimeoutEnabled: true,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	defer fc.Close()
	cl, err := client.New(fc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	limit := client.Fixed(3, 24*time.Hour)
	for range 3 {
		if r, err := cl.Allow(ctx, "drained", limit); err != nil || !r.Allowed {
			t.Fatalf("as app: %+v, %v", r, err)
		}
	}
	for _, r := range set.replicas {
		poll.Until(t, 5*time.Second, "drained on "+r.name, func() bool { return r.rdb.Exists(ctx, "drained").Val() == 1 })
	}

	set.primary.kill()
	settled := settledPrimary(t, set)
	poll.Until(t, 30*time.Second, "the key drained through the FailoverClient after the failover", func() bool {
		r, err := cl.Allow(ctx, "drained", limit)
		return err == nil && !r.Allowed
	})
	port := func(n *haNode) string { return n.addr[strings.LastIndex(n.addr, ":")+1:] }
	for _, r := range set.replicas {
		if r != settled {
			poll.Until(t, 20*time.Second, r.name+" following "+settled.name, func() bool {
				return r.info("master_port") == port(settled) && r.info("master_link_status") == "up"
			})
		}
	}
	set.primary.start()
	poll.Until(t, 40*time.Second, "the old primary turned replica", func() bool {
		return set.primary.info("role") == "slave" && set.primary.info("master_link_status") == "up" &&
			set.primary.info("master_port") == port(settled)
	})
	if n := set.primary.rdb.Exists(ctx, "drained").Val(); n != 1 {
		t.Error("the old primary, now a replica, lacks the drained key")
	}
	for _, n := range append([]*haNode{set.primary}, set.replicas...) {
		entries, err := n.rdb.ACLLog(ctx, 100).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Object != "client|setinfo" { // go-redis's, on connecting, which it does without
				t.Errorf("%s refused %s: %s %s (%d times)", n.name, e.Username, e.Reason, e.Object, e.Count)
			}
		}
	}
}
