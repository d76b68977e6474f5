package main

import (
	"slices"
	"testing"
	"time"
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
