package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/resp"
)

func TestHelpListsEveryFlagWithDefault(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseFlags([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: err = %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{
		"-addr host:port\n", "(default: 127.0.0.1:6380)",
		"-shards int\n", "(default: 0)",
		"-max-log-limit int\n", "(default: 100000)",
		"-enable-debug-command\n", "(default: false)",
		"-loglevel level\n", "(default: info)", "-slowlog-log-slower-than µs\n", "(default: 10000)",
		"-slowlog-max-len entries\n", "(default: 128)", "-version\n", "-v\n",
		"-requirepass password\n", "-tls-addr host:port\n", "-tls-cert file\n", "-tls-key file\n",
		"-maxclients int\n", "(default: 10000)",
		"-timeout seconds\n", "-proto-max-bulk-len bytes\n", "(default: 536870912)",
		"-snapshot file\n", "-snapshot-interval duration\n", "(default: 1s)", "-snapshot-ignore-corrupt\n",
		"-metrics-addr host:port\n", "-cluster-nodes host:port\n", "-cluster-self index\n",
		"-replicaof host:port\n", "-masterauth password\n", "-repl-backlog-size bytes\n", "(default: 33554432)",
		"-replica-priority priority\n", "-masteruser user\n", "-acllog-max-len entries\n",
		"-user user\n", "-aclfile string\n", "-quota-upstream URL\n", "-quota-upstream-fallback share\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, out.String())
		}
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
		want options
	}{
		{nil, true, options{addr: "127.0.0.1:6380", level: slog.LevelInfo, cfg: resp.Config{Config: core.Config{MaxLogLimit: 100_000, SnapshotInterval: time.Second},
			MaxClients: 10_000, ProtoMaxBulkLen: 512 << 20}}},
		{[]string{"-addr", ":7000", "-shards", "64", "-max-log-limit", "10", "-enable-debug-command", "-loglevel", "debug"}, true,
			options{addr: ":7000", level: slog.LevelDebug, cfg: resp.Config{Config: core.Config{Shards: 64, MaxLogLimit: 10, SnapshotInterval: time.Second}, EnableDebugCommand: true,
				MaxClients: 10_000, ProtoMaxBulkLen: 512 << 20}}},
		{[]string{"-requirepass", "pw", "-tls-addr", ":7001", "-tls-cert", "c.pem", "-tls-key", "k.pem",
			"-maxclients", "5", "-timeout", "30", "-proto-max-bulk-len", "1024"}, true,
			options{addr: "127.0.0.1:6380", tlsAddr: ":7001", level: slog.LevelInfo, cfg: resp.Config{Config: core.Config{MaxLogLimit: 100_000, TLSCertFile: "c.pem", TLSKeyFile: "k.pem", SnapshotInterval: time.Second},
				RequirePass: "pw", MaxClients: 5, IdleTimeout: 30 * time.Second,
				ProtoMaxBulkLen: 1024}}},
		{[]string{"-snapshot", "/var/lib/rl.snap", "-snapshot-interval", "250ms", "-snapshot-ignore-corrupt",
			"-metrics-addr", ":9100"}, true,
			options{addr: "127.0.0.1:6380", metricsAddr: ":9100", level: slog.LevelInfo, cfg: resp.Config{Config: core.Config{MaxLogLimit: 100_000, SnapshotPath: "/var/lib/rl.snap", SnapshotInterval: 250 * time.Millisecond, SnapshotIgnoreCorrupt: true},
				MaxClients: 10_000, ProtoMaxBulkLen: 512 << 20,
			}}},
		{[]string{"-cluster-nodes", "127.0.0.1:7000,127.0.0.1:7001", "-cluster-self", "1"}, true,
			options{addr: "127.0.0.1:6380", clusterNodes: "127.0.0.1:7000,127.0.0.1:7001", clusterSelf: 1,
				level: slog.LevelInfo, cfg: resp.Config{Config: core.Config{MaxLogLimit: 100_000, SnapshotInterval: time.Second}, MaxClients: 10_000,
					ProtoMaxBulkLen: 512 << 20}}},
		{[]string{"-masteruser", "repl", "-masterauth", "pw", "-acllog-max-len", "0"}, true,
			options{addr: "127.0.0.1:6380", level: slog.LevelInfo, cfg: resp.Config{Config: core.Config{MaxLogLimit: 100_000, SnapshotInterval: time.Second, MasterUser: "repl", MasterAuth: "pw"}, MaxClients: 10_000,
				ProtoMaxBulkLen: 512 << 20, ACLLogMaxLen: -1}}},
		{[]string{"-acllog-max-len", "-1"}, false, options{}},
		{[]string{"-replicaof", "10.0.0.1:6380", "-masterauth", "pw", "-repl-backlog-size", "64mb", "-replica-priority", "10"}, true,
			options{addr: "127.0.0.1:6380", level: slog.LevelInfo, cfg: resp.Config{Config: core.Config{MaxLogLimit: 100_000, SnapshotInterval: time.Second, ReplicaOf: "10.0.0.1:6380", MasterAuth: "pw", ReplBacklogSize: 64 << 20}, MaxClients: 10_000,
				ProtoMaxBulkLen: 512 << 20,
				ReplicaPriority: 10}}},
		{[]string{"-repl-backlog-size", "10"}, false, options{}},
		{[]string{"-cluster-self", "x"}, false, options{}},
		{[]string{"-snapshot-interval", "1"}, false, options{}},
		{[]string{"-timeout", "1.5"}, false, options{}},
		{[]string{"-loglevel", "loud"}, false, options{}},
		{[]string{"-shards", "x"}, false, options{}},
		{[]string{"-nosuch"}, false, options{}},
		{[]string{"-shards", "2", "extra"}, false, options{}},
		{[]string{"-v"}, true, options{addr: "127.0.0.1:6380", level: slog.LevelInfo, version: true, cfg: resp.Config{
			Config: core.Config{MaxLogLimit: 100_000, SnapshotInterval: time.Second}, MaxClients: 10_000, ProtoMaxBulkLen: 512 << 20}}},
		{[]string{"-loglevel", "warning", "-slowlog-log-slower-than", "0", "-slowlog-max-len", "0"}, true,
			options{addr: "127.0.0.1:6380", level: slog.LevelWarn, cfg: resp.Config{Config: core.Config{MaxLogLimit: 100_000, SnapshotInterval: time.Second},
				MaxClients: 10_000, ProtoMaxBulkLen: 512 << 20,
				SlowlogLogSlowerThan: time.Nanosecond, SlowlogMaxLen: -1}}},
	} {
		var out bytes.Buffer
		got, err := parseFlags(tc.args, &out)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err = %v, want ok=%v", tc.args, err, tc.ok)
			continue
		}
		if !tc.ok && !strings.Contains(out.String(), "Usage: rlserver") {
			t.Errorf("%q: the error is not followed by the usage:\n%s", tc.args, out.String())
		}
		tc.want.gw.tracing = tracingDefaults
		if tc.ok && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %+v, want %+v", tc.args, got, tc.want)
		}
	}
}

// TestConfigFile: directives set what flags set, flags given as well win, and bad
// input stops the start naming the file and the line.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rl.conf")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("# rlserver\naddr 127.0.0.1:7000\nmaxclients 100\nrequirepass \"p w\"\n" +
		"enable-debug-command yes\nreplicaof 10.0.0.1 6380\nloglevel notice\nslowlog-log-slower-than 500\n")
	got, err := parseFlags([]string{path, "-maxclients", "5"}, io.Discard)
	want := options{addr: "127.0.0.1:7000", level: slog.LevelInfo, cfg: resp.Config{Config: core.Config{MaxLogLimit: 100_000, ReplicaOf: "10.0.0.1 6380", SnapshotInterval: time.Second},
		MaxClients: 5, RequirePass: "p w", EnableDebugCommand: true,
		ProtoMaxBulkLen: 512 << 20, SlowlogLogSlowerThan: 500 * time.Microsecond,
		ConfigFile: path}, gw: gatewayOptions{tracing: tracingDefaults}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v\nwant %+v", got, err, want)
	}
	// user lines, one per user, in Redis's syntax; bad rules name the line.
	write("maxclients 1\nuser alice on \">p w\" ~a:* +@ratelimit\nuser bob off\n")
	got, err = parseFlags([]string{path}, io.Discard)
	wantUsers := []resp.UserDirective{{Args: []string{"alice", "on", ">p w", "~a:*", "+@ratelimit"}, Where: path + ":2"},
		{Args: []string{"bob", "off"}, Where: path + ":3"}}
	if err != nil || !reflect.DeepEqual(got.cfg.Users, wantUsers) {
		t.Errorf("users: %+v, %v", got.cfg.Users, err)
	}
	for _, tc := range []struct{ file, want string }{
		{"maxclients 1\nnosuch 1\n", path + ":2: unknown directive 'nosuch'"},
		{"version yes\n", path + ":1: unknown directive 'version'"},
		{"maxclients 1\n\nmaxclients 2\n", path + ":3: 'maxclients' repeated (first on line 1)"},
		{"maxclients many\n", path + `:1: bad value for 'maxclients' "many": parse error`},
		{"maxmemory 1zb\n", path + `:1: bad value for 'maxmemory' "1zb": memory size must be`},
		{"requirepass a b\n", path + ":1: 'requirepass' takes one argument, got 2"},
		{"requirepass \"open\n", path + ":1: unbalanced quotes"},
	} {
		write(tc.file)
		var out bytes.Buffer
		if _, err := parseFlags([]string{path}, &out); err == nil || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%q: %v, printed %q; want %q", tc.file, err, out.String(), tc.want)
		}
	}
	if _, err := parseFlags([]string{filepath.Join(dir, "nosuch.conf")}, io.Discard); err == nil {
		t.Error("a missing config file was accepted")
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, o := range []options{
		{addr: "127.0.0.1:0", cfg: resp.Config{Config: core.Config{Shards: 3}}},
		{addr: "127.0.0.1:0", cfg: resp.Config{Config: core.Config{MaxLogLimit: -1}}},
		{addr: "not an address", cfg: resp.Config{}},
		{addr: "127.0.0.1:0", cfg: resp.Config{MaxClients: -1}},
		{addr: "127.0.0.1:0", cfg: resp.Config{Config: core.Config{TLSCertFile: "nosuch.pem", TLSKeyFile: "nosuch.key"}}},
		{addr: "127.0.0.1:0", tlsAddr: "127.0.0.1:0"}, // TLS without a certificate
		{addr: "127.0.0.1:0", metricsAddr: "not an address"},
		{addr: "127.0.0.1:0", cfg: resp.Config{Config: core.Config{SnapshotInterval: -time.Second}}},
		{addr: "127.0.0.1:0", cfg: resp.Config{Config: core.Config{ReplicaOf: "nohostport"}}},
		{addr: "127.0.0.1:0", cfg: resp.Config{Config: core.Config{ReplicaOf: "127.0.0.1:0"}}},
		{addr: "127.0.0.1:7000", clusterNodes: "127.0.0.1:7000,127.0.0.1:7001", cfg: resp.Config{Config: core.Config{ReplicaOf: "127.0.0.1:7001"}}},
		{addr: "127.0.0.1:0", clusterNodes: "127.0.0.1:7000,127.0.0.1:7001", clusterSelf: 2},
		{addr: "127.0.0.1:0", clusterNodes: "127.0.0.1:7000,127.0.0.1"},
		{addr: "127.0.0.1:0", clusterSelf: 1},
		{addr: "127.0.0.1:7000", clusterNodes: "127.0.0.1:7000,127.0.0.1:7001", clusterSelf: 1}, // 7001 is not -addr
	} {
		if err := run(context.Background(), o, logger); err == nil {
			t.Errorf("run(%+v) started", o)
		}
	}
}

// TestServeStops: the server stops cleanly on a signal (the context) and on SHUTDOWN.
func TestServeStops(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, how := range []string{"signal", "SHUTDOWN"} {
		srv, err := resp.NewServer(resp.Config{Config: core.Config{Logger: logger}})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- serve(ctx, srv, ln, logger) }()
		// No retries: after SHUTDOWN, go-redis's retry of the EOF could only fail to dial.
		rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1})
		got, err := rdb.Do(ctx, "RL.TOKEN", "user:1", 10, 1000).Int64Slice()
		if err != nil || len(got) != 5 || got[0] != 1 || got[2] != 9 {
			t.Errorf("%s: RL.TOKEN = %v, %v", how, got, err)
		}
		if how == "signal" {
			cancel()
		} else if err := rdb.Shutdown(ctx).Err(); err != nil {
			t.Errorf("SHUTDOWN: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("%s: serve returned %v", how, err)
		}
		rdb.Close()
		cancel()
	}
}

// runUntilEnd runs the server of o until the test ends, failing the test if run returns an
// error; the context is the server's.
func runUntilEnd(t *testing.T, o options) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	return ctx
}
