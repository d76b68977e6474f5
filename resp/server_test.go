package resp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/core"
)

func TestNewServerValidates(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Config: core.Config{MaxLogLimit: -1}}, "core: MaxLogLimit must be 0 (default) or positive, got -1"},
		{Config{Config: core.Config{ExpireInterval: -time.Second}}, "core: ExpireInterval must be 0 (default) or positive, got -1s"},
		{Config{Config: core.Config{Shards: 3}}, "store: Shards must be a power of two"},
		{Config{Config: core.Config{MaxLogLimit: 1 << 40}}, "store: MaxLogLimit must be between 1 and"},
	} {
		_, err := NewServer(tc.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("NewServer(%+v) = %v, want an error starting %q", tc.cfg, err, tc.want)
		}
	}
}

func TestServeAfterClose(t *testing.T) {
	s, err := NewServer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(ln); err != ErrServerClosed {
		t.Errorf("Serve after Close = %v, want ErrServerClosed", err)
	}
	if s.Addr() != nil {
		t.Errorf("Addr of a server that never served = %v, want nil", s.Addr())
	}
}

func TestCommandIntrospection(t *testing.T) {
	ts := startServer(t, Config{})
	for _, proto := range []int{3, 2} {
		rdb := ts.client(t, proto)
		run(t, rdb, []call{
			{"COMMAND COUNT", strconv.Itoa(len(commands))},
			{"COMMAND INFO nosuch", "[(nil)]"},
			{"COMMAND DOCS nosuch", map[int]string{3: "{}", 2: "[]"}[proto]},
			{"COMMAND LIST FILTERBY PATTERN rl.*", "[rl.fixed rl.slide rl.log rl.token rl.gcra rl.leaky rl.all rl.slice rl.acquire rl.release rl.renew rl.policy rl.resolve rl.limits rl.top rl.reset]"},
			{"COMMAND LIST FILTERBY PATTERN client|*name", "[client|getname client|setname]"},
			{"COMMAND LIST FILTERBY ACLCAT ratelimit", "[rl.fixed rl.slide rl.log rl.token rl.gcra rl.leaky cl.throttle gcra gcrasetvalue rl.all rl.slice rl.acquire rl.release rl.renew rl.policy rl.resolve rl.limits rl.top]"},
			{"COMMAND LIST FILTERBY MODULE x", "[]"},
			{"COMMAND LIST FILTERBY FOO x", "ERR syntax error"},
			{"COMMAND LIST FOO", "ERR syntax error"},
			{"COMMAND INFO rl.token", "[[rl.token -4 [write fast] 1 1 1 [@write @fast @ratelimit] [] " +
				"[" + map[int]string{
				3: "{begin_search:{spec:{index:1} type:index} find_keys:{spec:{keystep:1 lastkey:0 limit:0} type:range} flags:[RW update]}",
				2: "[flags [RW update] begin_search [type index spec [index 1]] find_keys [type range spec [lastkey 0 keystep 1 limit 0]]]",
			}[proto] + "] []]]"},
			{"COMMAND DOCS cl.throttle", map[int]string{
				3: "{cl.throttle:{arguments:[{key_spec_index:0 name:key type:key} {name:max_burst type:integer} " +
					"{name:count_per_period type:integer} {name:period_s type:integer} {arguments:[{name:quantity type:integer} " +
					"{name:refund token:REFUND type:integer}] flags:[optional] name:amount type:oneof}] " +
					"complexity:O(1) group:ratelimit since:1.0.0 summary:" + commandIndex["cl.throttle"].summary + "}}",
				2: "[cl.throttle [summary " + commandIndex["cl.throttle"].summary + " since 1.0.0 group ratelimit complexity O(1) " +
					"arguments [[name key type key key_spec_index 0] [name max_burst type integer] " +
					"[name count_per_period type integer] [name period_s type integer] [name amount type oneof flags [optional] " +
					"arguments [[name quantity type integer] [name refund type integer token REFUND]]]]]]",
			}[proto]},
		})
	}
}

// TestCommandTyped parses COMMAND with go-redis, which checks the reply's shape.
func TestCommandTyped(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	for _, proto := range []int{3, 2} {
		rdb := ts.client(t, proto)
		infos, err := rdb.Command(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != len(commands) {
			t.Errorf("COMMAND described %d commands, want %d", len(infos), len(commands))
		}
		for _, tc := range []struct {
			name               string
			arity, first, last int8
			step               int8
			readOnly           bool
		}{
			{"rl.token", -4, 1, 1, 1, false},
			{"cl.throttle", -5, 1, 1, 1, false},
			{"del", -2, 1, -1, 1, false},
			{"exists", -2, 1, -1, 1, true},
			{"ping", -1, 0, 0, 0, false},
		} {
			in := infos[tc.name]
			if in == nil || in.Arity != tc.arity || in.FirstKeyPos != tc.first || in.LastKeyPos != tc.last ||
				in.StepCount != tc.step || in.ReadOnly != tc.readOnly {
				t.Errorf("COMMAND %s = %+v", tc.name, in)
			}
		}
		all, err := rdb.Do(ctx, "COMMAND", "INFO").Slice()
		if err != nil || len(all) != len(commands) {
			t.Errorf("COMMAND INFO without names: %d entries, %v; want %d", len(all), err, len(commands))
		}
		names, err := rdb.CommandList(ctx, &redis.FilterBy{Pattern: "config*"}).Result()
		if err != nil || strings.Join(names, ",") != "config,config|get,config|set,config|rewrite,config|resetstat,config|help" {
			t.Errorf("COMMAND LIST FILTERBY PATTERN config* = %v, %v", names, err)
		}
	}
}

// TestCommandDocsAll checks COMMAND DOCS without names: every command, with
// subcommands nested under their container, as redis-cli reads it.
func TestCommandDocsAll(t *testing.T) {
	ts := startServer(t, Config{})
	v, err := ts.client(t, 3).Do(context.Background(), "COMMAND", "DOCS").Result()
	if err != nil {
		t.Fatal(err)
	}
	docs := v.(map[any]any)
	if len(docs) != len(commands) {
		t.Errorf("COMMAND DOCS has %d entries, want %d", len(docs), len(commands))
	}
	client := docs["client"].(map[any]any)
	setname := client["subcommands"].(map[any]any)["client|setname"].(map[any]any)
	if setname["summary"] != commandIndex["client"].subIndex["setname"].summary {
		t.Errorf("client|setname docs = %v", setname)
	}
	for name, d := range docs {
		for _, field := range []string{"summary", "since", "group"} {
			if _, ok := d.(map[any]any)[field].(string); !ok {
				t.Errorf("%s: %s is not a string", name, field)
			}
		}
	}
}

func TestConfigGet(t *testing.T) {
	ts := startServer(t, Config{Config: core.Config{MaxLogLimit: 500}})
	_, port, _ := net.SplitHostPort(ts.addr)
	ctx := context.Background()
	for _, proto := range []int{3, 2} {
		rdb := ts.client(t, proto)
		run(t, rdb, []call{
			{"CONFIG GET", "ERR wrong number of arguments for 'config|get' command"},
			{"CONFIG SET save x", "ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters"},
		})
		// redis-benchmark asks these two when it starts.
		for param, want := range map[string]string{
			"save": "", "appendonly": "no", "SAVE": "", "max-log-limit": "500", "port": port, "databases": "1",
		} {
			got, err := rdb.ConfigGet(ctx, param).Result()
			if err != nil || len(got) != 1 || got[strings.ToLower(param)] != want {
				t.Errorf("CONFIG GET %s = %v, %v; want %q", param, got, err, want)
			}
		}
		got, err := rdb.Do(ctx, "CONFIG", "GET", "max*", "maxmemory", "nosuch").Result()
		if err != nil || format(got, nil) != map[int]string{
			3: "{max-log-limit:500 maxclients:10000 maxmemory-policy:noeviction maxmemory:0}",
			2: "[maxmemory 0 maxmemory-policy noeviction maxclients 10000 max-log-limit 500]",
		}[proto] {
			t.Errorf("CONFIG GET max* maxmemory nosuch = %s, %v", format(got, nil), err)
		}
	}
}

func TestInfo(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 3)
	run(t, rdb, []call{
		{"RL.TOKEN a 1 1000", "[1 1 0 0 1000]"},
		{"RL.TOKEN a 1 1000", "[0 1 0 1000 1000]"},
		{"RL.TOKEN a 1 1000", "[0 1 0 1000 1000]"},
		{"CL.THROTTLE b 1 1 1", "[0 2 1 -1 1]"},
		{"INFO nosuch", ""},
		{"TIME", "[1767225600 0]"},
	})
	all := do(rdb, "INFO")
	for _, want := range []string{
		"# Server\r\nredis_version:7.0.0\r\nrlserver_version:" + Version + "\r\n",
		"\r\nserver_time_usec:1767225600000000\r\nclock:frozen\r\n",
		"\r\n\r\n# Clients\r\nconnected_clients:1\r\n",
		"\r\n\r\n# Memory\r\nused_memory:",
		"\r\nmaxmemory_policy:noeviction\r\n",
		"\r\n\r\n# Stats\r\ntotal_connections_received:1\r\n",
		"\r\nrl_token_allowed:1\r\nrl_token_limited:2\r\n",
		"\r\ncl_throttle_allowed:1\r\ncl_throttle_limited:0\r\n",
		"\r\n\r\n# Keyspace\r\ndb0:keys=2,expires=2,avg_ttl=0\r\n",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("INFO lacks %q:\n%s", want, all)
		}
	}
	stats := do(rdb, "info STATS keyspace")
	if !strings.HasPrefix(stats, "# Stats\r\n") || strings.Contains(stats, "# Server") ||
		!strings.Contains(stats, "# Keyspace") {
		t.Errorf("INFO STATS keyspace:\n%s", stats)
	}
	// Counters move by what this connection sends: INFO, PING, a bad command, INFO.
	ctx := context.Background()
	before, err := rdb.InfoMap(ctx, "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	run(t, rdb, []call{{"PING", "PONG"}, {"NOSUCH", "ERR unknown command 'NOSUCH', with args beginning with: "}})
	after, err := rdb.InfoMap(ctx, "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for field, delta := range map[string]int{"total_commands_processed": 3, "total_error_replies": 1} {
		b, _ := strconv.Atoi(before["Stats"][field])
		a, _ := strconv.Atoi(after["Stats"][field])
		if a-b != delta {
			t.Errorf("%s went from %d to %d, want +%d", field, b, a, delta)
		}
	}
}

func TestDebugClock(t *testing.T) {
	run(t, startServer(t, Config{}).client(t, 3), []call{
		{"DEBUG CLOCK SET 1", errDebugDisabled},
		{"DEBUG", "ERR wrong number of arguments for 'debug' command"},
	})
	ts := startServer(t, Config{EnableDebugCommand: true})
	run(t, ts.client(t, 2), []call{
		{"DEBUG CLOCK SET 5000001", "OK"},
		{"TIME", "[5 1]"},
		{"DEBUG CLOCK ADVANCE 999999", "OK"},
		{"TIME", "[6 0]"},
		{"DEBUG CLOCK SET -1", "ERR unix_us must be an integer between 1 and 9007199254740991"},
		{"DEBUG CLOCK SET 0", "ERR unix_us must be an integer between 1 and 9007199254740991"},
		{"DEBUG CLOCK SET 9007199254740992", "ERR unix_us must be an integer between 1 and 9007199254740991"},
		{"DEBUG CLOCK ADVANCE x", "ERR us must be an integer between 0 and 9007199254740991"},
		{"DEBUG CLOCK ADVANCE 9007199254740991", "ERR the clock would pass 9007199254740991"},
		{"DEBUG CLOCK SET", "ERR syntax error"},
		{"DEBUG CLOCK REAL 1", "ERR syntax error"},
		{"DEBUG CLOCK FOO", "ERR syntax error"},
		{"DEBUG FOO", "ERR unknown subcommand 'FOO'. Try DEBUG HELP."},
		{"TIME", "[6 0]"},
		{"DEBUG HELP", "[DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are: " +
			"CLOCK SET unix_us     Freeze the server clock at unix_us microseconds since the Unix epoch. " +
			"CLOCK ADVANCE us     Move the clock us microseconds forward and keep it frozen there. " +
			"CLOCK REAL     Follow the real time again. " +
			"DIGEST     Output a hex signature representing the current keyspace. " +
			"DIGEST-VALUE <key> [<key> ...]     Output a hex signature of the values of all the specified keys. " +
			"SLEEP <seconds>     Stop this connection for <seconds> (a decimal number), then answer OK.]"},
		{"DEBUG SLEEP 0", "OK"},
		{"DEBUG CLOCK REAL", "OK"},
	})
	if ts.clock.IsFrozen() {
		t.Error("DEBUG CLOCK REAL left the clock frozen")
	}
	if now, real := ts.clock.Now(), time.Now().UnixMicro(); now < real-60e6 || now > real+60e6 {
		t.Errorf("real clock reads %d, time.Now %d", now, real)
	}
}

func TestShutdown(t *testing.T) {
	s, err := NewServer(Config{Config: core.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	// No retries: go-redis retries a command that met EOF, and after SHUTDOWN (with
	// Redis too) the retry can only fail to dial.
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1})
	defer rdb.Close()
	other := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1})
	defer other.Close()
	ctx := context.Background()
	if err := other.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	run(t, rdb, []call{{"SHUTDOWN FOO", "ERR syntax error"}, {"SHUTDOWN NOSAVE NOW", "ERR syntax error"}, {"PING", "PONG"}})
	if err := rdb.ShutdownNoSave(ctx).Err(); err != nil {
		t.Errorf("SHUTDOWN NOSAVE: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve returned %v", err)
	}
	if err := other.Ping(ctx).Err(); err == nil {
		t.Error("another connection still answers after SHUTDOWN")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener still accepts after SHUTDOWN")
	}
}

// TestPanicGuard: a handler that panics closes only its own connection.
func TestPanicGuard(t *testing.T) {
	commandIndex["test.panic"] = &command{name: "test.panic", full: "test.panic", arity: 1,
		run: func(*Server, *client, [][]byte, int64) { panic("boom") }}
	t.Cleanup(func() { delete(commandIndex, "test.panic") }) // after the server stops
	ts := startServer(t, Config{})
	r := ts.raw(t)
	r.send("PING\r\nTEST.PANIC\r\nPING\r\n")
	r.expect("+PONG\r\n-ERR internal error\r\n")
	r.expectClosed()
	run(t, ts.client(t, 3), []call{{"PING", "PONG"}})
}

// TestClockSetBackDuringSweep: a test that sets the debug clock back must not lose the
// keys it writes next to an expiry sweep that read the time before the change.
func TestClockSetBackDuringSweep(t *testing.T) {
	ts := startServer(t, Config{EnableDebugCommand: true, Config: core.Config{ExpireInterval: time.Microsecond}})
	rdb := ts.client(t, 2)
	ctx := context.Background()
	for i := range 1000 {
		key := fmt.Sprintf("k%d", i)
		for _, cmd := range [][]any{
			{"DEBUG", "CLOCK", "SET", t0 + 45_000_000}, // a sweep may read this time now
			{"DEBUG", "CLOCK", "SET", t0},
			{"RL.GCRA", key, 10, 1000},
		} {
			if err := rdb.Do(ctx, cmd...).Err(); err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
		}
		if n := rdb.Exists(ctx, key).Val(); n != 1 {
			t.Fatalf("step %d: EXISTS %s = %d right after it was written at a frozen time", i, key, n)
		}
	}
}
