// Package deploy holds what runs rlserver in production: the Grafana dashboard, the
// Prometheus alert rules, the systemd unit and the Kubernetes manifests (the image is
// the repository's Containerfile). Its tests check that every metric the dashboard and
// the rules query is one a server exports, that the manifests decode strictly and run
// the image as it is built, and the image itself.
package deploy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/core"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
	"go.yaml.in/yaml/v3"
)

// metricName finds the metrics a PromQL expression reads: every one rlserver and the
// Go client's collectors export has one of these prefixes.
var metricName = regexp.MustCompile(`\b(?:rlserver|process|go)_[a-z0-9_]+\b`)

// quoted strips label values, which may look like metric names.
var quoted = regexp.MustCompile(`"[^"]*"`)

// TestQueriedMetricsAreExported scrapes a primary with a snapshot file and its
// replica, after traffic, and checks every expression of the dashboard and the
// alert rules against the metrics they export.
func TestQueriedMetricsAreExported(t *testing.T) {
	primary, primaryAddr := start(t, resp.Config{Config: core.Config{SnapshotPath: filepath.Join(t.TempDir(), "rl.snap")}})
	replica, _ := start(t, resp.Config{Config: core.Config{ReplicaOf: primaryAddr}})
	rdb := redis.NewClient(&redis.Options{Addr: primaryAddr})
	defer rdb.Close()
	for range 100 { // enough for the 1-in-16 latency sample to record some
		if err := rdb.Do(context.Background(), "RL.TOKEN", "k", 10, 1000).Err(); err != nil {
			t.Fatal(err)
		}
	}
	exported := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for !exported["rlserver_master_last_io_seconds"] || !exported["rlserver_replica_lag_bytes"] {
		if time.Now().After(deadline) {
			t.Fatal("the replica did not connect within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
		for _, h := range []*httptest.Server{primary, replica} {
			scrape(t, h.URL, exported)
		}
	}

	var exprs []string
	var dash any
	if err := json.Unmarshal(read(t, "grafana/rlserver.json"), &dash); err != nil {
		t.Fatalf("grafana/rlserver.json: %v", err)
	}
	collectExprs(dash, &exprs)
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(read(t, "prometheus/rlserver-alerts.yml"), &rules); err != nil {
		t.Fatalf("prometheus/rlserver-alerts.yml: %v", err)
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
			alerts++
		}
	}
	if len(exprs) < 15 || alerts < 3 {
		t.Fatalf("%d expressions, %d alerts: the files were not read whole", len(exprs), alerts)
	}
	for _, e := range exprs {
		names := metricName.FindAllString(quoted.ReplaceAllString(e, `""`), -1)
		if len(names) == 0 {
			t.Errorf("%q reads no metric", e)
		}
		for _, n := range names {
			if !exported[n] {
				t.Errorf("%q reads %s, which no server exports", e, n)
			}
		}
	}
}

// start runs a server with cfg and its /metrics, both closed when t ends.
func start(t *testing.T, cfg resp.Config) (metrics *httptest.Server, addr string) {
	t.Helper()
	srv, addr := testenv.Serve(t, cfg)
	metrics = httptest.NewServer(srv.MetricsHandler())
	t.Cleanup(metrics.Close)
	return metrics, addr
}

// scrape adds the series names url/metrics exports to names; a histogram's as
// PromQL reads them: _bucket, _sum and _count.
func scrape(t *testing.T, url string, names map[string]bool) {
	t.Helper()
	res, err := httpGet(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(strings.NewReader(res))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	for name, f := range families {
		names[name] = true
		if f.GetType().String() == "HISTOGRAM" {
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		}
	}
}

func httpGet(url string) (string, error) {
	res, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err
}

// collectExprs gathers every "expr" string of a decoded JSON document.
func collectExprs(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "expr" {
				*out = append(*out, s)
			} else {
				collectExprs(e, out)
			}
		}
	case []any:
		for _, e := range v {
			collectExprs(e, out)
		}
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSystemdUnit: the unit keeps the hardening and limits README promises: a user
// of its own, a read-only system, a state directory for the snapshot, more files
// than maxclients, restarts on failure, and SIGTERM (which saves) to stop.
func TestSystemdUnit(t *testing.T) {
	unit := map[string]string{}
	for _, line := range strings.Split(string(read(t, "rlserver.service")), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			unit[k] = v
		}
	}
	for k, want := range map[string]string{
		"User": "rlserver", "ProtectSystem": "strict", "StateDirectory": "rlserver", "Restart": "on-failure",
		"KillSignal": "SIGTERM", "NoNewPrivileges": "yes", "ReadWritePaths": "/etc/rlserver",
		"ExecStart": "/usr/local/bin/rlserver /etc/rlserver/rlserver.conf",
	} {
		if unit[k] != want {
			t.Errorf("%s=%q, want %q", k, unit[k], want)
		}
	}
	if n, err := strconv.Atoi(unit["LimitNOFILE"]); err != nil || n <= resp.DefaultMaxClients {
		t.Errorf("LimitNOFILE=%q, want above maxclients' default %d", unit["LimitNOFILE"], resp.DefaultMaxClients)
	}
}
