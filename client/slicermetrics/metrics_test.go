package slicermetrics_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/client/slicermetrics"
	"github.com/rlserver/rlserver/internal/poll"
)

// expo is the exposition the Collector of a Slicer whose FamilyStats are fs sends.
func expo(fs map[string]client.FamilyStats) string {
	var b strings.Builder
	metric := func(name, typ, help string, v func(client.FamilyStats) int64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for _, f := range slices.Sorted(maps.Keys(fs)) {
			fmt.Fprintf(&b, "%s{family=%q,slicer=\"api\"} %d\n", name, f, v(fs[f]))
		}
	}
	metric("rlserver_slicer_slices_asked_total", "counter", "Slices the Slicer asked of the server (RL.SLICE), by key family.",
		func(s client.FamilyStats) int64 { return s.Asked })
	metric("rlserver_slicer_units_taken_total", "counter", "Units the Slicer's slices granted, by key family.",
		func(s client.FamilyStats) int64 { return s.Taken })
	metric("rlserver_slicer_units_used_total", "counter", "Units the Slicer admitted in-process from its slices, by key family.",
		func(s client.FamilyStats) int64 { return s.Used })
	metric("rlserver_slicer_units_given_back_total", "counter", "Units the Slicer gave back (REFUND) when a key idled or on Close, by key family.",
		func(s client.FamilyStats) int64 { return s.GivenBack })
	metric("rlserver_slicer_units_expired_total", "counter", "Units of the Slicer's slices that reached their end unused, or failed to go back: quota not admitted (under-admission), by key family.",
		func(s client.FamilyStats) int64 { return s.Expired })
	metric("rlserver_slicer_slices_held", "gauge", "Slices the Slicer holds now with units left, by key family.",
		func(s client.FamilyStats) int64 { return s.Slices })
	metric("rlserver_slicer_units_held", "gauge", "Units the Slicer holds now, by key family.",
		func(s client.FamilyStats) int64 { return s.Held })
	return b.String()
}

// TestMetrics: the Collector sends a Slicer's FamilyStats, units held included, and
// after Close what the store counted: the units admitted, family by family, none
// held, the rest given back or expired.
func TestMetrics(t *testing.T) {
	at := time.Unix(1_750_000_000, 0)
	c, err := client.NewEmbedded(client.EmbeddedOptions{Clock: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.NewSlicer(client.SliceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	col := slicermetrics.New(s, "api")
	ctx, l := context.Background(), client.Fixed(1000, time.Hour)
	calls := map[string]int{"tenant:a": 30, "tenant:b": 5, "ws:1": 12}
	for key, n := range calls {
		for range n {
			if res, err := s.Allow(ctx, key, l); err != nil || !res.Allowed {
				t.Fatalf("%s: %+v, %v", key, res, err)
			}
		}
	}
	// A slice asked ahead may land between two reads: until one scrape is what
	// FamilyStats said just before it.
	poll.UntilOK(t, 10*time.Second, "scrape as FamilyStats", func() error {
		fs := s.FamilyStats()
		if fs["tenant"].Held == 0 || fs["ws"].Slices == 0 {
			return fmt.Errorf("nothing held: %+v", fs)
		}
		return testutil.CollectAndCompare(col, strings.NewReader(expo(fs)))
	})
	if problems, err := testutil.CollectAndLint(col); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fs := s.FamilyStats()
	for f, used := range map[string]int64{"tenant": 35, "ws": 12} {
		st := fs[f]
		if st.Used != used || st.Held != 0 || st.Slices != 0 || st.Taken != st.Used+st.GivenBack+st.Expired {
			t.Errorf("%s after Close: %+v; want %d used, none held, every unit taken used, given back or expired", f, st, used)
		}
	}
	for key, n := range calls {
		if res, err := c.Peek(ctx, key, l); err != nil || res.Remaining != 1000-n-1 {
			t.Errorf("%s at the store: %+v, %v; want the %d admitted spent", key, res, err, n)
		}
	}
	if err := testutil.CollectAndCompare(col, strings.NewReader(expo(fs))); err != nil {
		t.Error(err)
	}
}
