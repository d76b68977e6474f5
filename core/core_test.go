package core

import (
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rlserver/rlserver/algo"
)

// quiet is cfg with its log discarded.
func quiet(cfg Config) Config {
	cfg.Logger = slog.New(slog.DiscardHandler)
	return cfg
}

func newCore(t *testing.T, cfg Config) *Core {
	t.Helper()
	c, err := New(quiet(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// spend makes one limiter call on key, a change the snapshot counts.
func spend(c *Core, key string) {
	c.Store().Do([]byte(key), algo.Request{Kind: algo.KindFixed, Limit: 5, Window: 60_000_000, Cost: 1}, c.Now())
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxLogLimit: -1}, "core: MaxLogLimit must be 0 (default) or positive, got -1"},
		{Config{ExpireInterval: -time.Second}, "core: ExpireInterval must be 0 (default) or positive, got -1s"},
		{Config{SnapshotInterval: -time.Second}, "core: SnapshotInterval must be 0 (default) or positive, got -1s"},
		{Config{ReplBacklogSize: -1}, "core: ReplBacklogSize must be 0 (default) or positive, got -1"},
		{Config{TLSCertFile: "c.pem"}, "core: TLSCertFile and TLSKeyFile go together: set both or neither"},
		{Config{TLSCertFile: "nosuch.pem", TLSKeyFile: "nosuch.key"}, `core: TLS certificate "nosuch.pem" and key "nosuch.key"`},
		{Config{ReplicaOf: "nohostport"}, "ReplicaOf must be host:port"},
		{Config{Shards: 3}, "store:"},
	} {
		if _, err := New(quiet(tc.cfg)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	c := newCore(t, Config{})
	if c.TLSConfig() != nil {
		t.Error("a TLS config without certificate files")
	}
	if got := c.Config(); got.Shards == 0 || got.ExpireInterval != DefaultExpireInterval ||
		got.SnapshotInterval != DefaultSnapshotInterval || got.Logger == nil {
		t.Errorf("Config() without its defaults: %+v", got)
	}
}

// TestCloseSaves: Close writes the final snapshot, which the next core loads;
// SkipFinalSave writes none; a second Close does nothing.
func TestCloseSaves(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rl.snap")
	c := newCore(t, Config{SnapshotPath: path, SnapshotInterval: time.Hour})
	c.Start()
	spend(c, "a")
	if got := c.SnapshotStatus().Changes; got != 1 {
		t.Errorf("Changes = %d, want 1", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("a second Close = %v", err)
	}
	c2 := newCore(t, Config{SnapshotPath: path})
	if got := c2.Store().Len(c2.Now()); got != 1 {
		t.Fatalf("keys after the restart = %d, want 1", got)
	}
	if got := c2.SnapshotStatus().Loaded.Keys; got != 1 {
		t.Errorf("Loaded.Keys = %d, want 1", got)
	}
	spend(c2, "b")
	c2.SkipFinalSave()
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	c3 := newCore(t, Config{SnapshotPath: path})
	if got := c3.Store().Len(c3.Now()); got != 1 {
		t.Errorf("keys after SkipFinalSave = %d, want the 1 saved before", got)
	}
	if err := newCore(t, Config{}).Save(); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("Save without a path = %v", err)
	}
}

// TestSnapshotLoop: a change is saved within the interval, without Close.
func TestSnapshotLoop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rl.snap")
	c := newCore(t, Config{SnapshotPath: path, SnapshotInterval: 10 * time.Millisecond})
	c.Start()
	defer c.Close()
	spend(c, "a")
	deadline := time.Now().Add(10 * time.Second)
	for c.SnapshotStatus().Saves == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no save within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := os.Stat(path); err != nil {
		t.Error(err)
	}
}

// TestExpireLoop: a key whose state became fresh goes without a request.
func TestExpireLoop(t *testing.T) {
	c := newCore(t, Config{})
	if !c.SetClock(t0) {
		t.Fatal("SetClock refused")
	}
	c.Start()
	defer c.Close()
	spend(c, "a")
	c.AdvanceClock(61_000_000)
	deadline := time.Now().Add(10 * time.Second)
	for c.Store().Stats().Keys != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the key was not expired")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestDebugClock(t *testing.T) {
	c := newCore(t, Config{})
	if c.Clock().IsFrozen() {
		t.Fatal("frozen at start")
	}
	if !c.SetClock(t0) || c.Now() != t0 || !c.Clock().IsFrozen() {
		t.Fatalf("after SetClock(t0): Now = %d", c.Now())
	}
	if !c.AdvanceClock(5) || c.Now() != t0+5 {
		t.Errorf("after AdvanceClock(5): Now = %d", c.Now())
	}
	if c.SetClock(0) || c.SetClock(MaxClock+1) || c.AdvanceClock(-1) || c.AdvanceClock(MaxClock) {
		t.Error("an out-of-range clock accepted")
	}
	if c.Now() != t0+5 {
		t.Errorf("a refused change moved the clock to %d", c.Now())
	}
	c.RealClock()
	if c.Clock().IsFrozen() {
		t.Error("frozen after RealClock")
	}
	if now, real := c.Now(), time.Now().UnixMicro(); now < real-60e6 || now > real+60e6 {
		t.Errorf("the real clock reads %d, the time is %d", now, real)
	}
}

// TestRole: IsPrimary follows REPLICAOF both ways, and OnRoleChange hears each change once.
func TestRole(t *testing.T) {
	c := newCore(t, Config{})
	var got []bool
	c.OnRoleChange(func(primary bool) { got = append(got, primary) })
	if !c.IsPrimary() {
		t.Fatal("a new core is not a primary")
	}
	c.Replication().BecomeReplica("127.0.0.1", 1) // not started: no link is dialled
	c.Replication().BecomeReplica("127.0.0.1", 2) // still a replica: no change of role
	if c.IsPrimary() {
		t.Error("a primary after BecomeReplica")
	}
	c.Replication().BecomePrimary()
	if !c.IsPrimary() {
		t.Error("a replica after BecomePrimary")
	}
	if want := []bool{false, true}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("OnRoleChange heard %v, want %v", got, want)
	}
	r := newCore(t, Config{ReplicaOf: "127.0.0.1:1"})
	if r.IsPrimary() {
		t.Error("a core with ReplicaOf is a primary")
	}
}

// TestRegistry: a front's own collector is served with the core's metrics.
func TestRegistry(t *testing.T) {
	c := newCore(t, Config{})
	spend(c, "a")
	front := prometheus.NewCounter(prometheus.CounterOpts{Name: "rlserver_test_front_total", Help: "A front's own."})
	front.Add(3)
	c.Registry().MustRegister(front)
	rec := httptest.NewRecorder()
	c.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{"rlserver_test_front_total 3", "rlserver_keys 1",
		`rlserver_requests_total{command="rl.fixed",result="allowed"} 1`, "rlserver_connected_replicas 0",
		"go_goroutines", "process_"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestUpdateTunables: all or nothing.
func TestUpdateTunables(t *testing.T) {
	level := new(slog.LevelVar)
	c := newCore(t, Config{LogLevel: level})
	bad := errors.New("bad")
	if err := c.UpdateTunables(func(t *Tunables) error { t.SnapshotInterval = time.Minute; return bad }); err != bad {
		t.Errorf("an edit's error = %v", err)
	}
	if err := c.UpdateTunables(func(t *Tunables) error { t.LogLevel = slog.LevelWarn; t.MaxMemory = 1000; return nil }); err == nil {
		t.Error("a memory bound under the store's minimum accepted")
	}
	if got := c.Tunables(); got.SnapshotInterval != DefaultSnapshotInterval || got.MaxMemory != 0 || level.Level() != slog.LevelInfo {
		t.Errorf("a refused update changed %+v (level %v)", got, level.Level())
	}
	if err := c.UpdateTunables(func(t *Tunables) error { t.LogLevel = slog.LevelWarn; t.MaxMemory = 64 << 20; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := c.Tunables(); got.MaxMemory != 64<<20 || level.Level() != slog.LevelWarn || got.EffectivePolicy() != got.MaxMemoryPolicy {
		t.Errorf("after the update: %+v (level %v)", got, level.Level())
	}
	fixed := newCore(t, Config{})
	if err := fixed.UpdateTunables(func(t *Tunables) error { t.LogLevel = slog.LevelDebug; return nil }); !errors.Is(err, ErrImmutable) {
		t.Errorf("a log level without Config.LogLevel = %v", err)
	}
}
