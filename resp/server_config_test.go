package resp

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/core"
)

// TestConfigSet: every CONFIG SET parameter changes what CONFIG GET and INFO show,
// and bad input answers Redis's errors and changes nothing, all pairs included.
func TestConfigSet(t *testing.T) {
	level := new(slog.LevelVar)
	ts := startServer(t, Config{Config: core.Config{LogLevel: level}})
	rdb := ts.client(t, 2)
	all := "CONFIG GET maxclients maxmemory maxmemory-policy requirepass timeout loglevel snapshot-interval slowlog-log-slower-than slowlog-max-len"
	before := "[maxmemory 0 maxmemory-policy noeviction timeout 0 requirepass  maxclients 10000 loglevel info " +
		"snapshot-interval 1s slowlog-log-slower-than 10000 slowlog-max-len 128]"
	if got := do(rdb, all); got != before {
		t.Fatalf("defaults: %s\nwant %s", got, before)
	}
	run(t, rdb, []call{
		{"CONFIG SET port 7000", "ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config"},
		// What Redis too fixes at start is refused even to its value.
		{"CONFIG SET databases 1", "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config"},
		{"CONFIG SET cluster-enabled no", "ERR CONFIG SET failed (possibly related to argument 'cluster-enabled') - can't set immutable config"},
		{"CONFIG SET save x maxclients 5", "ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters"},
		{"CONFIG SET nosuch 1", "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"},
		{"CONFIG SET maxclients 5 timeout", "ERR wrong number of arguments for 'config|set' command"},
		{"CONFIG SET maxclients abc", "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer"},
		{"CONFIG SET maxclients 0", "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive"},
		{"CONFIG SET timeout -1", "ERR CONFIG SET failed (possibly related to argument 'timeout') - argument must be between 0 and 2147483647 inclusive"},
		{"CONFIG SET loglevel loud", "ERR CONFIG SET failed (possibly related to argument 'loglevel') - argument must be one of debug, info, warn, error (or Redis's verbose, notice, warning)"},
		{"CONFIG SET snapshot-interval 0s", "ERR CONFIG SET failed (possibly related to argument 'snapshot-interval') - argument must be a positive duration such as 500ms, 1s or 1m"},
		{"CONFIG SET slowlog-max-len -1", "ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len') - argument must be between 0 and 2147483647 inclusive"},
		{"CONFIG SET maxmemory-policy allkeys-lru", "ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - maxmemory policy must be volatile-ttl or noeviction, got \"allkeys-lru\""},
		// The store refuses a bound under 16 KB a shard: the valid pairs before it do not apply either.
		{"CONFIG SET maxclients 5 maxmemory 1000", "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - store: MaxMemory must be 0 (no limit) or at least 1048576 bytes (16 KiB per shard), got 1000"},
		{"CONFIG SET maxclients 5 maxclients 6", "ERR CONFIG SET failed (possibly related to argument 'maxclients') - duplicate parameter"},
		{"CONFIG SET timeout 5 maxclients x", "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer"},
	})
	if got := do(rdb, all); got != before {
		t.Fatalf("after refused CONFIG SETs: %s\nwant %s", got, before)
	}
	// What Redis can change and rlserver fixes at start takes the value it has,
	// changing nothing (introspection.tcl's "CONFIG sanity" sets every parameter so).
	port := ts.addr[strings.LastIndex(ts.addr, ":")+1:]
	run(t, rdb, []call{
		{"CONFIG SET port " + port + " appendonly no", "OK"},
		{"CONFIG GET port", "[port " + port + "]"},
	})
	run(t, rdb, []call{
		{"CONFIG SET MAXCLIENTS 50 maxmemory 2mb maxmemory-policy noeviction timeout 30 loglevel warning " +
			"snapshot-interval 250ms slowlog-log-slower-than 5 slowlog-max-len 3", "OK"},
		{all, "[maxmemory 2097152 maxmemory-policy noeviction timeout 30 requirepass  maxclients 50 loglevel warn " +
			"snapshot-interval 250ms slowlog-log-slower-than 5 slowlog-max-len 3]"},
	})
	if level.Level() != slog.LevelWarn {
		t.Errorf("the logger's level is %v after CONFIG SET loglevel warning", level.Level())
	}
	info := do(rdb, "INFO memory clients")
	for _, want := range []string{"maxmemory:2097152\r\n", "maxmemory_policy:noeviction\r\n", "maxclients:50\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q:\n%s", want, info)
		}
	}
	// A server without a LevelVar cannot change its level.
	fixed := startServer(t, Config{})
	if got := do(fixed.client(t, 2), "CONFIG SET loglevel debug"); got !=
		"ERR CONFIG SET failed (possibly related to argument 'loglevel') - can't set immutable config" {
		t.Errorf("loglevel without Config.LogLevel: %s", got)
	}
}

// TestConfigSetTakesEffect: the new values act on the running server.
func TestConfigSetTakesEffect(t *testing.T) {
	ts := startServer(t, Config{Config: core.Config{Shards: 1}})
	admin := ts.client(t, 2)
	ctx := context.Background()
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	// maxclients: the admin connection is one; a limit of 1 refuses the next.
	run(t, admin, []call{{"CONFIG SET maxclients 1", "OK"}})
	r := ts.raw(t)
	r.expect("-ERR max number of clients reached\r\n")
	r.expectClosed()
	run(t, admin, []call{{"CONFIG SET maxclients 10000", "OK"}})

	// maxmemory with noeviction: new keys are refused past the bound, then accepted again.
	run(t, admin, []call{{"CONFIG SET maxmemory 16kb maxmemory-policy noeviction", "OK"}})
	pipe := admin.Pipeline()
	for i := range 5000 {
		pipe.Do(ctx, "RL.FIXED", "k:"+strconv.Itoa(i), 10, 3600000)
	}
	cmds, _ := pipe.Exec(ctx)
	oom := 0
	for _, c := range cmds {
		if c.Err() != nil && strings.HasPrefix(c.Err().Error(), "OOM") {
			oom++
		}
	}
	if oom == 0 {
		t.Error("no OOM past CONFIG SET maxmemory 16kb with noeviction")
	}
	run(t, admin, []call{{"CONFIG SET maxmemory 0", "OK"}, {"RL.TOKEN fresh 10 1000", "[1 10 9 0 100]"}})

	// requirepass: new connections must authenticate; the admin one stays in, as in Redis.
	run(t, admin, []call{{"CONFIG SET requirepass s3cret", "OK"}, {"PING", "PONG"}})
	r = ts.raw(t)
	r.send("PING\r\n")
	r.expect("-NOAUTH Authentication required.\r\n")
	r.send("AUTH s3cret\r\nPING\r\n")
	r.expect("+OK\r\n+PONG\r\n")

	// timeout: connections accepted after it are closed when idle.
	run(t, admin, []call{{"CONFIG SET timeout 1", "OK"}})
	r = ts.raw(t)
	begin := time.Now()
	r.expectClosed()
	if d := time.Since(begin); d < 900*time.Millisecond {
		t.Errorf("idle connection closed after %v, want about 1 s", d)
	}
}

// TestConfigRewrite: the CONFIG SET parameters and the replication role go into
// the file, its comments and other lines kept; without a file, Redis's error.
func TestConfigRewrite(t *testing.T) {
	none := startServer(t, Config{})
	run(t, none.client(t, 2), []call{{"CONFIG REWRITE", "ERR The server is running without a config file"}})

	path := filepath.Join(t.TempDir(), "rlserver.conf")
	orig := "# production\naddr 127.0.0.1:6380\n\n# clients\nmaxclients 100\n"
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, Config{ConfigFile: path, MaxClients: 100})
	rdb := ts.client(t, 2)
	dead := deadAddr(t)
	host, port, _ := net.SplitHostPort(dead)
	run(t, rdb, []call{
		{"CONFIG SET maxclients 200 requirepass pw", "OK"},
		{"AUTH pw", "OK"},
		{"REPLICAOF " + host + " " + port, "OK"},
		{"CONFIG REWRITE", "OK"},
	})
	want := "# production\naddr 127.0.0.1:6380\n\n# clients\nmaxclients 200\n\n# Generated by CONFIG REWRITE\n" +
		"requirepass pw\nreplicaof " + host + " " + port + "\n" +
		// The users, as Redis writes them: the default user's password is requirepass.
		"user default on \"#" + acl.HashPassword("pw") + "\" ~* &* +@all\n"
	if got := readFile(t, path); got != want {
		t.Errorf("after CONFIG REWRITE:\n%s\nwant:\n%s", got, want)
	}
	run(t, rdb, []call{{"REPLICAOF NO ONE", "OK"}, {"CONFIG REWRITE", "OK"}})
	if got := readFile(t, path); strings.Contains(got, "replicaof") {
		t.Errorf("replicaof kept after REPLICAOF NO ONE:\n%s", got)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := do(rdb, "CONFIG REWRITE"); !strings.HasPrefix(got, "ERR Rewriting config file: ") {
		t.Errorf("CONFIG REWRITE of a removed file: %s", got)
	}
}

// TestConfigResetStat: INFO's counters start again from zero; /metrics' do not.
func TestConfigResetStat(t *testing.T) {
	ts := startServer(t, Config{})
	ts.core.SetClock(t0) // the second call's retry-after must not see a ms pass
	rdb := ts.client(t, 2)
	run(t, rdb, []call{{"RL.TOKEN k 1 1000", "[1 1 0 0 1000]"}, {"RL.TOKEN k 1 1000", "[0 1 0 1000 1000]"}})
	run(t, rdb, []call{{"CONFIG RESETSTAT", "OK"}})
	info := do(rdb, "INFO stats")
	for _, want := range []string{"\r\ntotal_commands_processed:1\r\n", "\r\nrl_token_allowed:0\r\n",
		"\r\nrl_token_limited:0\r\n", "\r\ntotal_connections_received:0\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO stats after CONFIG RESETSTAT lacks %q:\n%s", want, info)
		}
	}
	body := scrape(t, ts)
	if !strings.Contains(body, `rlserver_requests_total{command="rl.token",result="limited"} 1`) {
		t.Errorf("/metrics went back with CONFIG RESETSTAT")
	}
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
