package resp

import (
	"errors"
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
