package resp

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/store"
)

// fakeUpstream takes the keys "up:*": it answers a fixed decision, or for "up:wrong"
// the store's WRONGTYPE, or for "up:down" an error of its own, and counts its calls.
type fakeUpstream struct{ calls int }

func (f *fakeUpstream) Decide(key []byte, req algo.Request) (algo.Decision, bool, error) {
	switch string(key) {
	case "up:wrong":
		return algo.Decision{}, true, store.ErrWrongType
	case "up:down":
		return algo.Decision{}, true, errors.New("quota upstream: unavailable")
	}
	if len(key) < 3 || string(key[:3]) != "up:" {
		return algo.Decision{}, false, nil
	}
	f.calls++
	return algo.Decision{Allowed: true, Limit: req.Limit, Remaining: 7, ResetAfter: 1500}, true, nil
}

func (f *fakeUpstream) Param(name string) string { return "p:" + name }

func (f *fakeUpstream) Info() [][2]string {
	return [][2]string{{"region_home_reachable", "1"}, {"regionstat_up", "asked=" + strconv.Itoa(f.calls)}}
}

// TestUpstreamDispatch: a limiter call the Upstream takes is answered from its
// decision in the five integers (times in ms, rounded up), its errors as error
// replies; the calls it leaves go to the store; CONFIG GET shows its parameters.
func TestUpstreamDispatch(t *testing.T) {
	up := &fakeUpstream{}
	ts := startServer(t, Config{Upstream: up})
	rdb := ts.client(t, 2)
	run(t, rdb, []call{
		{"RL.FIXED up:a 10 1000", "[1 10 7 0 2]"},
		{"RL.FIXED up:wrong 10 1000", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"RL.FIXED up:down 10 1000", "ERR quota upstream: unavailable"},
		{"RL.TOKEN local 10 1000", "[1 10 9 0 100]"},
		{"EXISTS up:a", "0"}, // nothing stored locally
		{"CONFIG GET quota-upstream-fallback", "[quota-upstream-fallback p:quota-upstream-fallback]"},
	})
	if up.calls != 1 {
		t.Errorf("the upstream decided %d calls, want 1", up.calls)
	}
}

// TestUpstreamInfo: INFO region is the Upstream's fields, shown by INFO and INFO
// everything too; a server without an Upstream has no such section, unless named.
func TestUpstreamInfo(t *testing.T) {
	ts := startServer(t, Config{Upstream: &fakeUpstream{}})
	rdb := ts.client(t, 2)
	do(rdb, "RL.FIXED up:a 10 1000")
	want := "# Region\r\nregion_home_reachable:1\r\nregionstat_up:asked=1\r\n"
	if got := do(rdb, "INFO region"); got != want {
		t.Errorf("INFO region: %q, want %q", got, want)
	}
	for _, line := range []string{"INFO", "INFO everything"} {
		if got := do(rdb, line); !strings.HasSuffix(got, "\r\n\r\n"+want) {
			t.Errorf("%s ends %q, want the region section %q last", line, got[max(0, len(got)-80):], want)
		}
	}
	plain := startServer(t, Config{}).client(t, 2)
	if got := do(plain, "INFO everything"); strings.Contains(got, "# Region") {
		t.Errorf("INFO everything without an upstream shows a region section")
	}
	if got := do(plain, "INFO region"); got != "# Region\r\n" {
		t.Errorf("INFO region without an upstream: %q", got)
	}
}
