package resp

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/keyfamily"
)

// TestSliceStats: INFO slices and /metrics count, by key family, the slices granted
// and refused and the units granted, as RL.SLICE's own replies add up, and the units
// REFUND asked back on a family that takes slices; PEEK counts nothing; past
// keyfamily.MaxFamilies families the rest count as (other); CONFIG RESETSTAT zeroes
// INFO's, and /metrics never go back. go-redis against the server.
func TestSliceStats(t *testing.T) {
	ts := startDebugServer(t)
	rdb := ts.client(t, 3)
	ctx := context.Background()
	if got := do(rdb, "INFO everything"); strings.Contains(got, "# Slices") {
		t.Errorf("INFO shows slices before any:\n%s", got)
	}
	if got := do(rdb, "INFO slices"); got != "# Slices\r\n" {
		t.Errorf("INFO slices before any: %q", got)
	}

	type totals struct{ granted, refused, units, givenBack int64 }
	want := map[string]*totals{} // by the row the family counts in
	row := func(key string) *totals {
		f := keyfamily.Of(key)
		if want[f] == nil && f != keyfamily.Other && int64(len(want))-boolInt(want[keyfamily.Other] != nil) == keyfamily.MaxFamilies {
			f = keyfamily.Other // the first MaxFamilies are named
		}
		if want[f] == nil {
			want[f] = &totals{}
		}
		return want[f]
	}
	slice := func(cmd string) {
		t.Helper()
		v, err := rdb.Do(ctx, toArgs(cmd)...).Slice()
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		r := row(strings.Fields(cmd)[2])
		if n := v[0].(int64); n > 0 {
			r.granted++
			r.units += n
		} else {
			r.refused++
		}
	}
	slice("RL.SLICE FIXED api:a 10 60000 4")
	slice("RL.SLICE FIXED api:b 10 60000 8")
	slice("RL.SLICE FIXED api:b 10 60000 5") // 2 of 5
	slice("RL.SLICE FIXED api:b 10 60000 1") // none
	slice("RL.SLICE TOKEN ws:1 10 1000 3 RATE 5")
	slice("RL.SLICE GCRA :odd 10 1000 2")
	slice("RL.SLICE SLIDE a,b=c:x 10 1000 2")
	run(t, rdb, []call{
		{"RL.FIXED api:b 10 60000 REFUND 3", "[1 10 3 0 60000]"},
		{"RL.TOKEN ws:1 10 1000 RATE 5 REFUND 100", "[1 10 10 0 0]"}, // counted as asked, capped by the algorithm
		{"RL.FIXED other:x 10 60000 REFUND 2", "[1 10 10 0 0]"},      // no slice in its family: not counted
		{"RL.SLICE FIXED api:c 10 60000 5 PEEK", "[5 10 5 0 60000 60000]"},
		{"RL.SLICE FIXED peek:c 10 60000 5 PEEK", "[5 10 5 0 60000 60000]"},
	})
	want["api"].givenBack, want["ws"].givenBack = 3, 100
	for i := range keyfamily.MaxFamilies + 1 { // the last 3 past the bound
		slice(fmt.Sprintf("RL.SLICE FIXED f%02d:k 10 60000 %d", i, 1+i%10))
	}
	run(t, rdb, []call{{"RL.FIXED f64:k 10 60000 REFUND 1", "[1 10 6 0 60000]"}}) // (other)'s
	want[keyfamily.Other].givenBack = 1

	lines := func(w map[string]*totals) string {
		var ls []string
		fams := slices.Sorted(maps.Keys(w)) // by name, (other) last
		slices.SortStableFunc(fams, func(a, b string) int { return int(boolInt(a == keyfamily.Other) - boolInt(b == keyfamily.Other)) })
		for _, f := range fams {
			r := w[f]
			ls = append(ls, fmt.Sprintf("slicestat_%s:granted=%d,refused=%d,units=%d,given_back=%d",
				f, r.granted, r.refused, r.units, r.givenBack))
		}
		return strings.Join(ls, "\n")
	}
	info := func(sections string) string {
		s := do(rdb, strings.TrimSpace("INFO "+sections))
		_, s, _ = strings.Cut(s, "# Slices\r\n")
		s, _, _ = strings.Cut(s, "\r\n\r\n")
		return strings.ReplaceAll(strings.TrimSuffix(s, "\r\n"), "\r\n", "\n")
	}
	if got, w := info("slices"), lines(want); got != w {
		t.Errorf("INFO slices:\n%s\nwant:\n%s", got, w)
	}
	if got, w := info(""), lines(want); got != w { // in the default sections once filled
		t.Errorf("INFO's slices:\n%s\nwant:\n%s", got, w)
	}
	metrics := scrape(t, ts)
	for f, r := range want {
		for _, m := range []string{
			fmt.Sprintf(`rlserver_slices_total{family=%q,result="granted"} %d`, f, r.granted),
			fmt.Sprintf(`rlserver_slices_total{family=%q,result="refused"} %d`, f, r.refused),
			fmt.Sprintf(`rlserver_slice_units_granted_total{family=%q} %d`, f, r.units),
			fmt.Sprintf(`rlserver_slice_units_given_back_total{family=%q} %d`, f, r.givenBack),
		} {
			if !strings.Contains(metrics, m+"\n") {
				t.Errorf("/metrics lacks %s", m)
			}
		}
	}
	if n := strings.Count(metrics, "\nrlserver_slice_units_granted_total{"); n != len(want) {
		t.Errorf("/metrics has %d families, want %d", n, len(want))
	}

	run(t, rdb, []call{{"CONFIG RESETSTAT", "OK"}})
	if got := do(rdb, "INFO"); strings.Contains(got, "# Slices") {
		t.Errorf("INFO shows slices after CONFIG RESETSTAT:\n%s", got)
	}
	slice("RL.SLICE FIXED api:d 10 60000 3")
	if got, w := info("slices"), "slicestat_api:granted=1,refused=0,units=3,given_back=0"; got != w {
		t.Errorf("INFO slices after CONFIG RESETSTAT:\n%s\nwant:\n%s", got, w)
	}
	if m := fmt.Sprintf(`rlserver_slice_units_granted_total{family="api"} %d`, want["api"].units); !strings.Contains(scrape(t, ts), m+"\n") {
		t.Errorf("/metrics lacks %s after CONFIG RESETSTAT", m)
	}
}

// toArgs splits a command line into go-redis's arguments.
func toArgs(line string) []any {
	var args []any
	for _, w := range strings.Split(line, " ") {
		args = append(args, w)
	}
	return args
}
