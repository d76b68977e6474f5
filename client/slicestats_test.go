package client

import (
	"context"
	"testing"
	"time"
)

// TestSlicerFamilyStats runs a Slicer on the embedded store on a frozen clock: by key
// family, Used is the calls admitted, Held what was taken and is neither used, given
// back nor expired, and when the slices' window ends what they held counts as
// Expired (the under-admission); the families add up to Stats, and Close leaves
// nothing held.
func TestSlicerFamilyStats(t *testing.T) {
	_, s, now := frozenSlicer(t)
	ctx, l := context.Background(), Fixed(1000, time.Hour)
	admitted := map[string]int64{}
	for key, calls := range map[string]int{"tenant:a": 30, "tenant:b": 7, "ws:1": 20, ":odd": 5, "a b:c": 4} {
		fam := map[string]string{"tenant:a": "tenant", "tenant:b": "tenant", "ws:1": "ws"}[key]
		if fam == "" {
			fam = "(other)"
		}
		for range calls {
			res, err := s.Allow(ctx, key, l)
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed {
				admitted[fam]++
			}
		}
	}
	s.fetches.Wait() // the slices asked ahead are in
	check := func(when string, wantHeld bool) map[string]FamilyStats {
		t.Helper()
		fs := s.FamilyStats()
		var sum SliceStats
		for f, st := range fs {
			held := st.Taken - st.Used - st.GivenBack - st.Expired
			if st.Used != admitted[f] || st.Held != held || (st.Held > 0) != wantHeld || (st.Slices > 0) != wantHeld {
				t.Errorf("%s: %s: %+v; want Used %d, Held %d, held: %v", when, f, st, admitted[f], held, wantHeld)
			}
			sum.Asked += st.Asked
			sum.Taken += st.Taken
			sum.Used += st.Used
			sum.GivenBack += st.GivenBack
			sum.Expired += st.Expired
		}
		if len(fs) != 3 || sum != s.Stats() {
			t.Errorf("%s: families %v add up to %+v; want tenant, ws and (other), adding up to Stats %+v", when, fs, sum, s.Stats())
		}
		return fs
	}
	before := check("in the window", true)
	now.Add(time.Hour.Microseconds()) // the Fixed window ends: every slice with it
	after := check("after the window", false)
	for f, st := range after {
		if st.Expired != before[f].Expired+before[f].Held {
			t.Errorf("%s: Expired %d after the window; want %d, what was held", f, st.Expired, before[f].Expired+before[f].Held)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check("after Close", false)
}
