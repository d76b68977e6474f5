package resp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/poll"
)

func TestLatencyBuckets(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int // bucket index
	}{
		{0, 0}, {1, 0}, {256, 0}, {257, 1}, {512, 1}, {513, 2},
		{time.Microsecond, 2}, {100 * time.Microsecond, 9}, // 100 µs ≤ 2^17 ns = 131 µs
		{1 << 28, 20}, {1<<28 + 1, 21}, {time.Hour, 21},
	} {
		var h latencyHistogram
		h.observe(tc.d)
		for k := range h.counts {
			if got, want := h.counts[k].Load(), uint64(0); k == tc.want {
				want = 1
				if got != want {
					t.Errorf("%v: bucket %d (≤ %gs) has %d, want 1", tc.d, k, upperBound(k), got)
				}
			} else if got != want {
				t.Errorf("%v: bucket %d has %d, want 0", tc.d, k, got)
			}
		}
		if k := tc.want; k < latencyBuckets-1 && float64(tc.d)/1e9 > upperBound(k) ||
			k > 0 && float64(tc.d)/1e9 <= upperBound(k-1) {
			t.Errorf("%v is not within bucket %d's bounds", tc.d, k)
		}
	}
}

// scrape reads the metrics of ts as text.
func scrape(t *testing.T, ts *testServer) string {
	t.Helper()
	hs := httptest.NewServer(ts.MetricsHandler())
	defer hs.Close()
	res, err := http.Get(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %v", res.StatusCode, err)
	}
	return string(body)
}

// TestMetrics: after known traffic, the scrape shows it.
func TestMetrics(t *testing.T) {
	ts := startServer(t, Config{Config: core.Config{SnapshotPath: filepath.Join(t.TempDir(), "rl.snap"), SnapshotInterval: time.Hour}})
	ts.metrics.sampleEvery.Store(1) // time every command, so that the counts are known
	rdb := ts.client(t, 3)
	for _, cmd := range []string{
		"RL.TOKEN a 2 60000", "RL.TOKEN a 2 60000", "RL.TOKEN a 2 60000", // 2 allowed, 1 limited
		"RL.GCRA b 5 60000", "RL.FIXED c 1 60000 COST 2", // 1 allowed, 1 limited
		"RL.NOSUCH x", "CLIENT SETNAME metrics",
	} {
		do(rdb, cmd)
	}
	_, errs := ts.stats() // go-redis's handshake may have met an error too
	if errs < 1 {
		t.Errorf("%d error replies counted, want at least RL.NOSUCH's", errs)
	}
	text := scrape(t, ts)
	for _, want := range []string{
		fmt.Sprintf("rlserver_error_replies_total %d", errs),
		`rlserver_requests_total{command="rl.token",result="allowed"} 2`,
		`rlserver_requests_total{command="rl.token",result="limited"} 1`,
		`rlserver_requests_total{command="rl.gcra",result="allowed"} 1`,
		`rlserver_requests_total{command="rl.fixed",result="limited"} 1`,
		`rlserver_requests_total{command="rl.log",result="allowed"} 0`,
		`rlserver_command_duration_seconds_count{command="rl.token"} 3`,
		`rlserver_command_duration_seconds_count{command="client|setname"} 1`,
		`rlserver_command_duration_seconds_bucket{command="rl.token",le="+Inf"} 3`,
		`rlserver_keys 2`,
		`rlserver_connected_clients 1`,
		`rlserver_connections_received_total 1`,
		`rlserver_evicted_keys_total 0`,
		`rlserver_snapshot_changes 5`,
		`rlserver_snapshot_last_ok 1`,
		"\nrlserver_snapshot_age_seconds ",
		"\nrlserver_store_bytes ",
		"\ngo_goroutines ",
		"\nrlserver_maxmemory_bytes 0\n",
		"\nrlserver_maxclients 10000\n",
		"\nrlserver_connected_replicas 0\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// A command never called has no histogram; HELLO (go-redis's handshake) has one.
	if strings.Contains(text, `command="rl.log"} `) || !strings.Contains(text, `_count{command="hello"}`) {
		t.Errorf("histograms: want none for rl.log and one for hello")
	}
	do(rdb, "SAVE")
	if text := scrape(t, ts); !strings.Contains(text, "rlserver_snapshot_changes 0") {
		t.Error("rlserver_snapshot_changes is not 0 after SAVE")
	}
}

// TestReplicationMetrics: a primary shows its replica and the replica's lag, the
// replica its link; a replica whose primary is gone shows the link down.
func TestReplicationMetrics(t *testing.T) {
	primary := startServer(t, Config{})
	replica := startServer(t, Config{Config: core.Config{ReplicaOf: primary.addr}})
	poll.Until(t, 10*time.Second, "the link", func() bool { return strings.Contains(scrape(t, replica), "\nrlserver_master_link_up 1\n") })
	if text := scrape(t, replica); !strings.Contains(text, "\nrlserver_master_last_io_seconds ") {
		t.Errorf("the replica's scrape lacks rlserver_master_last_io_seconds")
	}
	poll.Until(t, 10*time.Second, "the replica on the primary", func() bool {
		text := scrape(t, primary)
		return strings.Contains(text, "\nrlserver_connected_replicas 1\n") &&
			strings.Contains(text, "\nrlserver_replica_lag_bytes{replica=\"127.0.0.1:")
	})
	primary.Close()
	poll.Until(t, 10*time.Second, "the link down", func() bool { return strings.Contains(scrape(t, replica), "\nrlserver_master_link_up 0\n") })
}

// TestMetricsWithoutSnapshot: the snapshot gauges are left out when snapshots are off.
func TestMetricsWithoutSnapshot(t *testing.T) {
	ts := startServer(t, Config{})
	if text := scrape(t, ts); strings.Contains(text, "rlserver_snapshot_") || !strings.Contains(text, "rlserver_keys 0") {
		t.Errorf("metrics without -snapshot:\n%s", text)
	}
}

// TestLatencySampled: by default about one command in latencySample is timed.
func TestLatencySampled(t *testing.T) {
	ts := startServer(t, Config{})
	rdb := ts.client(t, 3)
	pipe := rdb.Pipeline()
	const n = 1600
	for range n {
		pipe.Ping(context.Background())
	}
	if _, err := pipe.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	var timed uint64
	h := &ts.metrics.latency[lookupFull("ping").id]
	for k := range h.counts {
		timed += h.counts[k].Load()
	}
	// Binomial, mean n/16 = 100, sd 9.7: the bounds are 6 sd away.
	if lo, hi := uint64(40), uint64(160); timed < lo || timed > hi {
		t.Errorf("%d of %d PINGs timed, want about %d", timed, n, n/latencySample)
	}
}
