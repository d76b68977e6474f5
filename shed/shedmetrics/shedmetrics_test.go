package shedmetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rlserver/rlserver/shed"
)

func TestCollect(t *testing.T) {
	s, err := shed.New(shed.Config{MaxLimit: 3, InitialLimit: 3, QueueTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.Allow(now, 0)
	s.Allow(now, 2)
	s.Allow(now, 2) // shed: the last slot is kept for the priorities above
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New(s, "api"))
	want := `
# HELP rlserver_shed_in_flight Requests admitted by the shedder and not yet done.
# TYPE rlserver_shed_in_flight gauge
rlserver_shed_in_flight{shedder="api"} 2
# HELP rlserver_shed_limit The concurrency limit the shedder learned from latency.
# TYPE rlserver_shed_limit gauge
rlserver_shed_limit{shedder="api"} 3
# HELP rlserver_shed_shed_total Requests the shedder refused (503, UNAVAILABLE), by priority.
# TYPE rlserver_shed_shed_total counter
rlserver_shed_shed_total{priority="critical",shedder="api"} 0
rlserver_shed_shed_total{priority="default",shedder="api"} 0
rlserver_shed_shed_total{priority="sheddable",shedder="api"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "rlserver_shed_in_flight", "rlserver_shed_limit", "rlserver_shed_shed_total"); err != nil {
		t.Error(err)
	}
}
