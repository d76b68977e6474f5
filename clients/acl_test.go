package clients_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// tenantUser is the tenant: its own keys, the limiter's commands only.
const tenantUser = "tenant on >tpass ~tenantA:* +@ratelimit"

// Redis 7.0's NOPERM texts.
const (
	noPermKey = "NOPERM this user has no permissions to access one of the keys used as arguments"
	noPermCmd = "NOPERM this user has no permissions to run the '%s' command"
)

// tenantCall is one call of the tenant's, what it must answer and, if refused,
// the ACL LOG entry it must leave (reason, object, the command in client-info).
type tenantCall struct {
	args           []string
	want           string
	reason, object string
}

// tenantCalls are the tenant's calls for the library lib, each key its own.
func tenantCalls(lib string) []tenantCall {
	own, other := "tenantA:"+lib, "tenantB:"+lib
	cmd := func(name string, args ...string) tenantCall {
		return tenantCall{args, fmt.Sprintf(noPermCmd, name), "command", name}
	}
	return []tenantCall{
		{args: []string{"RL.TOKEN", own, "10", "1000"}, want: "[1 10 9 0 100]"},
		{[]string{"RL.TOKEN", "tenantB:x", "10", "1000"}, noPermKey, "key", "tenantB:x"},
		{[]string{"RL.ALL", "TOKEN", own, "10", "1000", "TOKEN", other, "10", "1000"}, noPermKey, "key", other},
		cmd("flushall", "FLUSHALL"),
		cmd("config|get", "CONFIG", "GET", "maxmemory"),
		cmd("config|set", "CONFIG", "SET", "requirepass", "x"),
		cmd("debug", "DEBUG", "SLEEP", "0"),
		cmd("replicaof", "REPLICAOF", "NO", "ONE"),
		cmd("cluster|info", "CLUSTER", "INFO"),
	}
}

// TestACLTenant is the tenant, logged in by redis-cli --user, go-redis
// Username and redis-py username=: it spends its own keys; another tenant's key,
// an RL.ALL with one rule on it (spending nothing) and the server's commands get
// Redis 7.0's NOPERM; ACL LOG, read by go-redis, holds every refusal with the
// user, the command, the key and the reason.
func TestACLTenant(t *testing.T) {
	t.Parallel()
	_, cliBin := redisTools(t)
	addr := rlServer(t, "-user", tenantUser)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer admin.Close()

	libs := []struct {
		name string
		run  func(t *testing.T, calls []tenantCall)
	}{
		{"redis-cli", func(t *testing.T, calls []tenantCall) {
			for _, c := range calls {
				out, ok := cli(t, cliBin, addr, "", append([]string{"--no-auth-warning", "--user", "tenant", "--pass", "tpass"}, c.args...)...)
				got := strings.Join(strings.Fields(out), " ")
				if strings.HasPrefix(c.want, "[") {
					got = "[" + got + "]"
				}
				if got != c.want || !ok {
					t.Errorf("redis-cli --user tenant %s: %q (exit 0: %v), want %q", strings.Join(c.args, " "), out, ok, c.want)
				}
			}
		}},
		{"go-redis", func(t *testing.T, calls []tenantCall) {
			for _, proto := range []int{2, 3} {
				rdb := redis.NewClient(&redis.Options{Addr: addr, Username: "tenant", Password: "tpass", Protocol: proto, MaxRetries: -1})
				defer rdb.Close()
				for _, c := range calls {
					if proto == 3 && c.reason == "" {
						continue // spent once, in RESP2
					}
					args := make([]any, len(c.args))
					for i, a := range c.args {
						args[i] = a
					}
					v, err := rdb.Do(ctx, args...).Result()
					got := fmt.Sprint(v)
					if err != nil {
						got = err.Error()
					}
					if got != c.want {
						t.Errorf("go-redis RESP%d as tenant: %v: %s, want %s", proto, c.args, got, c.want)
					}
				}
			}
		}},
		{"redis-py", func(t *testing.T, _ []tenantCall) {
			runScript(t, "redis-py acl", python(t), "acl.py", addr, "tenant", "tpass")
		}},
	}
	for _, lib := range libs {
		t.Run(lib.name, func(t *testing.T) {
			if err := admin.ACLLogReset(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			calls := tenantCalls(lib.name)
			lib.run(t, calls)
			// One spent by the first call, none by RL.ALL: a PEEK has 8 left.
			own := "tenantA:" + lib.name
			if v, err := admin.Do(ctx, "RL.TOKEN", own, 10, 1000, "PEEK").Int64Slice(); err != nil || !slices.Equal(v, []int64{1, 10, 8, 0, 200}) {
				t.Errorf("RL.TOKEN %s PEEK: %v %v, want [1 10 8 0 200]: one token spent, none by the refused RL.ALL", own, v, err)
			}
			checkACLLog(t, admin, calls)
		})
	}
}

// checkACLLog: every refused call of calls has its own entry in ACL LOG, as the
// tenant, with its reason, object and command; nothing else was refused but
// go-redis's CLIENT SETINFO on connecting.
func checkACLLog(t *testing.T, admin *redis.Client, calls []tenantCall) {
	t.Helper()
	entries, err := admin.ACLLog(context.Background(), 100).Result()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if e.Object == "client|setinfo" {
			continue
		}
		cmd := ""
		if e.ClientInfo != nil {
			cmd = e.ClientInfo.LastCmd
		}
		got = append(got, fmt.Sprintf("%s %s %s %s %s", e.Username, e.Context, e.Reason, e.Object, cmd))
	}
	var want []string
	for _, c := range calls {
		if c.reason != "" {
			want = append(want, fmt.Sprintf("tenant toplevel %s %s %s", c.reason, c.object, cmdName(c.args)))
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ACL LOG (user context reason object cmd):\n got %q\nwant %q", got, want)
	}
}

// cmdName is a call's command as CLIENT INFO's cmd names it: lower case, with
// the subcommand of a container.
func cmdName(args []string) string {
	name := strings.ToLower(args[0])
	if slices.Contains([]string{"config", "cluster"}, name) {
		name += "|" + strings.ToLower(args[1])
	}
	return name
}
