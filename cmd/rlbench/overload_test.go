package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/launch"
)

func TestSummarizeOverload(t *testing.T) {
	var got []overloadSent
	for i := range 100 {
		got = append(got, overloadSent{class: 0, ok: i != 0, lat: time.Duration(i+1) * time.Millisecond})
	}
	for i := range 300 {
		got = append(got, overloadSent{class: 1, ok: i%3 == 0})
	}
	got = append(got, overloadSent{class: 2, ok: true}, overloadSent{class: 2, ok: false})
	c := summarizeOverload(overloadSpec{conf: confShed}, 3, 100, 2*time.Second, got,
		overloadCosts{ServedNs: 2e7, Served: 2, RefusedNs: 1e4, Refused: 1, Limit: 9})
	want := overloadCell{Conf: "shed", Load: 3, Critical: 0.99, CriticalP50: 51, CriticalP99: 100, Sheddable: 1.0 / 3,
		Goodput: (99 + 100) / 2.0 / 100, Health: 0.5, ServedUs: 1e4, RefusedUs: 10, Limit: 9, Requests: 400}
	if c != want {
		t.Errorf("summarizeOverload =\n%+v, want\n%+v", c, want)
	}
}

func TestOverloadMissed(t *testing.T) {
	lo := overloadCell{Load: 0.5, CriticalP99: 20}
	good := overloadCell{Load: 3, Critical: 0.9995, CriticalP99: 39, Health: 1, Goodput: 0.9, ServedUs: 12000, RefusedUs: 10}
	if m := overloadMissed(lo, good); len(m) != 0 {
		t.Errorf("a cell meeting every target missed %q", m)
	}
	bad := overloadCell{Load: 3, Critical: 0.998, CriticalP99: 41, Health: 0.99, Goodput: 0.89, ServedUs: 12000, RefusedUs: 500}
	if m := overloadMissed(lo, bad); len(m) != 5 {
		t.Errorf("a cell missing all five targets missed only %q", m)
	}
	if !slices.Contains(overloadConfs, confShed) {
		t.Error("the shedder is not among the configurations")
	}
}

func TestFleetPeak(t *testing.T) {
	held := []fleetLeaseHeld{
		{From: 0, To: 10, Sheddable: true},
		{From: 5, To: 20, Sheddable: false},
		{From: 10, To: 30, Sheddable: true}, // starts as the first ends: not both at once
		{From: 12, To: 14, Sheddable: true},
	}
	all, sheddable := fleetPeak(held)
	if all != 3 || sheddable != 2 {
		t.Errorf("fleetPeak = %d, %d sheddable; want 3, 2", all, sheddable)
	}
}

func TestNewFleetSpec(t *testing.T) {
	for _, c := range []struct{ workers, limit, reserve int }{{8, 34, 7}, {2, 12, 3}, {10, 42, 9}} {
		f := newFleetSpec("a", "k", c.workers)
		if f.limit != c.limit || f.reserve != c.reserve {
			t.Errorf("newFleetSpec(%d workers) = limit %d reserve %d, want %d and %d", c.workers, f.limit, f.reserve, c.limit, c.reserve)
		}
		if f.limit-f.reserve != fleetReplicas*(c.workers+fleetTransit) || f.reserve*100 < fleetReservePercent*f.limit {
			t.Errorf("%d workers: sheddable share %d of %d, want the fleet's workers and at least %d%% reserved", c.workers, f.limit-f.reserve, f.limit, fleetReservePercent)
		}
	}
}

func TestWriteFleetChecks(t *testing.T) {
	ok := overloadCell{Conf: "fleet", Load: 3, Limit: 30, FleetReserve: 6, FleetMax: 30, FleetHeld: 29, SheddableHeld: 24}
	if err := writeFleetChecks(io.Discard, []overloadCell{ok}); err != nil {
		t.Errorf("a cell within its limits: %v", err)
	}
	over := []overloadCell{ok, ok, ok}
	over[0].FleetMax, over[1].FleetHeld, over[2].SheddableHeld = 31, 31, 25
	for _, c := range over {
		if err := writeFleetChecks(io.Discard, []overloadCell{c}); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestOverloadFleet runs configuration 5 briefly on a real rlserver at 3× capacity:
// the fleet's leases never exceed the limit, the sheddable ones never their 80%, and
// the limit was reached (else the check checked nothing).
func TestOverloadFleet(t *testing.T) {
	bin, err := launch.Built()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out strings.Builder
	args := []string{"-only", "fleet", "-loads", "3", "-workers", "2", "-warmup", "300ms", "-time", "700ms", "-rlserver-bin", bin, "-out", dir}
	if err := runOverloadBench(context.Background(), args, &out); err != nil {
		t.Fatalf("rlbench overload %v: %v\n%s", args, err, out.String())
	}
	t.Log(out.String())
	var res []overloadCell
	b, err := os.ReadFile(filepath.Join(dir, "overload.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("%d cells, want 1", len(res))
	}
	checkPNG(t, dir, "overload.png")
	c := res[0]
	if c.Limit != 12 || c.FleetReserve != 3 {
		t.Fatalf("limit %d reserve %d, want 12 and 3 (3 replicas of 2 workers and 1 in transit)", c.Limit, c.FleetReserve)
	}
	if c.FleetMax > c.Limit || c.FleetHeld > c.Limit || c.SheddableHeld > c.Limit-c.FleetReserve {
		t.Errorf("over the limit: %+v", c)
	}
	if c.FleetMax < c.Limit-c.FleetReserve || c.SheddableHeld == 0 || c.Requests == 0 {
		t.Errorf("at 3x the fleet never reached its sheddable share: %+v", c)
	}
}

func TestFleetQueue(t *testing.T) {
	var q fleetQueue
	if q.handOff(heldLease{id: "a"}) {
		t.Fatal("a lease handed over with nobody waiting")
	}
	if _, ok := q.wait(time.Now()); ok || len(q.waiters) != 0 {
		t.Fatalf("a wait past its deadline got a lease, or stayed queued (%d)", len(q.waiters))
	}
	got := make(chan heldLease)
	go func() {
		l, _ := q.wait(time.Now().Add(time.Hour))
		got <- l
	}()
	for !q.handOff(heldLease{id: "b"}) { // until the waiter is queued
		runtime.Gosched()
	}
	if l := <-got; l.id != "b" {
		t.Errorf("the waiter got %q, want b", l.id)
	}
}
