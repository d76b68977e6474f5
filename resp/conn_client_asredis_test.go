package resp_test

import (
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestClientKillUserAsRedis: CLIENT KILL USER closes the connections logged in as
// any existing ACL user, and refuses an unknown one in Redis's words.
func TestClientKillUserAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareSession(t, redisAddr, rlAddr, []step{
		{0, "ACL SETUSER killme on nopass +@all\r\nACL SETUSER other on nopass +@all\r\n", 2},
		{1, "AUTH killme x\r\n", 1},
		{2, "AUTH killme y\r\n", 1},
		{3, "AUTH other z\r\n", 1},
		{0, "CLIENT KILL USER killme TYPE pubsub\r\nCLIENT KILL USER killme\r\nCLIENT KILL USER killme\r\n", 3},
		{3, "PING\r\n", 1},
		{0, "CLIENT KILL USER nobody\r\nCLIENT KILL USER\r\nCLIENT KILL USER Other\r\nCLIENT KILL USER other SKIPME no ID 1\r\n", 4},
		{3, "CLIENT KILL USER other\r\nCLIENT KILL USER other SKIPME no\r\n", 2},
		{0, "ACL DELUSER killme other\r\n", 1},
	})
}

// TestClientInfoInExecAsRedis: CLIENT INFO run by EXEC shows the transaction
// (flags=x, multi=n) and EXEC as the command, as Redis's.
func TestClientInfoInExecAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	pick := func(addr string) string {
		got, _ := exchange(t, addr, "MULTI\r\nECHO hello\r\nCLIENT INFO\r\nEXEC\r\nCLIENT LIST ID 1 2 3 4 5 6 7 8 9\r\n")
		var keep []string
		for _, f := range strings.Fields(got) {
			for _, name := range []string{"flags=", "multi=", "cmd=", "multi-mem=0"} {
				if strings.HasPrefix(f, name) {
					keep = append(keep, f)
				}
			}
		}
		return strings.Join(keep, " ")
	}
	if got, want := pick(rlAddr), pick(redisAddr); got != want {
		t.Errorf("CLIENT INFO in EXEC, then CLIENT LIST:\n rlserver %s\n    redis %s", got, want)
	}
}

// TestDebugSleepAsRedis: DEBUG SLEEP's replies as Redis's (its wait is this
// connection's only, TestClientKillMaxAge uses it).
func TestDebugSleepAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t, "--enable-debug-command", "yes")
	rlAddr := testenv.StartServer(t, resp.Config{EnableDebugCommand: true})
	compareWithRedis(t, redisAddr, rlAddr, []string{
		"DEBUG SLEEP 0\r\nDEBUG SLEEP x\r\nDEBUG SLEEP -1\r\nDEBUG SLEEP 0.01\r\n",
		"DEBUG SLEEP\r\nDEBUG SLEEP 0 1\r\n",
	})
}

// TestClientCachingAsRedis: CLIENT CACHING and CLIENT TRACKING's OPTIN and OPTOUT
// answer as Redis's, in each state (introspection.tcl's unhappy paths among them).
func TestClientCachingAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareWithRedis(t, redisAddr, rlAddr, []string{
		"CLIENT CACHING\r\nCLIENT CACHING maybe\r\nCLIENT CACHING yes\r\nCLIENT CACHING no\r\nCLIENT CACHING yes no\r\n",
		"CLIENT TRACKING ON OPTIN OPTOUT\r\nCLIENT TRACKING ON OPTIN\r\nCLIENT CACHING yes\r\nCLIENT CACHING no\r\n" +
			"CLIENT CACHING maybe\r\nCLIENT TRACKING ON OPTOUT\r\nCLIENT TRACKING ON OPTIN NOLOOP\r\nCLIENT TRACKING ON\r\n" +
			"CLIENT CACHING yes\r\nCLIENT TRACKING OFF\r\nCLIENT TRACKING ON OPTOUT\r\nCLIENT CACHING no\r\nCLIENT CACHING yes\r\n",
		"CLIENT TRACKING ON optout\r\nCLIENT CACHING on\r\nCLIENT TRACKING off optout\r\nCLIENT CACHING on\r\n",
		"CLIENT TRACKING OFF OPTIN OPTOUT\r\nCLIENT TRACKING ON OPTIN FOO\r\nCLIENT CACHING yes\r\n",
		"CLIENT TRACKING ON OPTIN\r\nRESET\r\nCLIENT CACHING yes\r\n",
	})
}

// TestClientNoEvictAsRedis: CLIENT NO-EVICT's replies and CLIENT INFO's flag e as
// Redis's. (RESET clears it as Redis 7.2 does; this 7.0 keeps it.)
func TestClientNoEvictAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareWithRedis(t, redisAddr, rlAddr, []string{
		"CLIENT NO-EVICT\r\nCLIENT NO-EVICT maybe\r\nCLIENT NO-EVICT on x\r\nCLIENT NO-EVICT on\r\nCLIENT NO-EVICT OFF\r\n",
	})
	flags := func(addr string) string {
		got, _ := exchange(t, addr, "CLIENT NO-EVICT on\r\nCLIENT INFO\r\nMULTI\r\nCLIENT INFO\r\nEXEC\r\nCLIENT NO-EVICT off\r\nCLIENT INFO\r\n")
		var keep []string
		for _, f := range strings.Fields(got) {
			if strings.HasPrefix(f, "flags=") {
				keep = append(keep, f)
			}
		}
		return strings.Join(keep, " ")
	}
	if got, want := flags(rlAddr), flags(redisAddr); got != want {
		t.Errorf("CLIENT INFO flags: rlserver %s, redis %s", got, want)
	}
}
