package algo

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// base is 2023-11-14 00:00:00 UTC in µs: a whole day, so windows of a ms, a second, a
// minute, an hour or a day all start there.
const base = int64(1_699_920_000_000_000)

// ms converts milliseconds to µs.
func ms(n int64) int64 { return n * 1000 }

// machine holds one key's state for every kind and applies the store's rule: the
// returned state is kept only when Decision.Write.
type machine struct {
	fixed FixedState
	slide SlideState
	log   []LogEntry
	token TokenState
	tat   int64
}

// clone returns a copy that shares no memory with m, since Log reuses its input.
func (m machine) clone() machine {
	m.log = slices.Clone(m.log)
	return m
}

// decide runs one call on a copy of m's state and returns the new state and Decision,
// checking that a call that does not write returns its input unchanged.
func (m machine) decide(t testing.TB, r Request, now int64) (machine, Decision) {
	t.Helper()
	var d Decision
	var same bool
	switch r.Kind {
	case KindFixed:
		var s FixedState
		s, d = Fixed(m.fixed, r, now)
		same, m.fixed = s == m.fixed, s
	case KindSlide:
		var s SlideState
		s, d = Slide(m.slide, r, now)
		same, m.slide = s == m.slide, s
	case KindLog:
		in := slices.Clone(m.log)
		var s []LogEntry
		s, d = Log(in, r, now)
		same, m.log = slices.Equal(s, m.log), s
	case KindToken:
		var s TokenState
		s, d = Token(m.token, r, now)
		same, m.token = s == m.token, s
	case KindGCRA, KindThrottle:
		var tat int64
		tat, d = GCRA(m.tat, r, now)
		same, m.tat = tat == m.tat, tat
	case KindLeaky:
		var tat int64
		tat, d = Leaky(m.tat, r, now)
		same, m.tat = tat == m.tat, tat
	default:
		t.Fatalf("unknown kind %d", r.Kind)
	}
	if !d.Write && !same {
		t.Fatalf("%v at %d: Write is false but the state changed", r, now)
	}
	return m, d
}

// do runs one call and keeps its state when it writes, as the store does.
func (m *machine) do(t testing.TB, r Request, now int64) Decision {
	t.Helper()
	next, d := m.decide(t, r, now)
	if d.Write {
		*m = next
	}
	return d
}

// wire is a Decision as its five reply fields; CL.THROTTLE's first field is "limited",
// and its times are whole seconds, rounded up, where the others' are ms.
func wire(kind Kind, d Decision) [5]int64 {
	flag := int64(0)
	if d.Allowed != (kind == KindThrottle) {
		flag = 1
	}
	retry, reset := Millis(d.RetryAfter), Millis(d.ResetAfter)
	if kind == KindThrottle {
		retry, reset = wireSeconds(d.RetryAfter), wireSeconds(d.ResetAfter)
	}
	return [5]int64{flag, d.Limit, d.Remaining, retry, reset}
}

// wireSeconds is redis-cell's time: x µs in whole seconds, rounded up, and -1 as -1.
func wireSeconds(x int64) int64 {
	if x < 0 {
		return -1
	}
	return (x + 999_999) / 1_000_000
}

// The wire's ranges (docs/commands.md), as the tests draw arguments within them.
const (
	maxWindowMs = 31_536_000_000 // window_ms: one year
	maxPeriodS  = 31_536_000     // CL.THROTTLE's period_s: one year
)

// mustParse builds the request of a command's arguments after the key, given as one
// string, and fails t if they are out of the wire's ranges.
func mustParse(t testing.TB, kind Kind, args string) Request {
	t.Helper()
	r, err := parse(kind, args)
	if err != nil {
		t.Fatalf("parse(%v, %q): %v", kind, args, err)
	}
	return r
}

// parse builds the request of the arguments after the key that the tests write: an
// RL.* command's "limit window_ms [RATE r|BURST b|QUEUE q] [COST c] [PEEK]",
// CL.THROTTLE's "max_burst count period_s [quantity]", with the contract's ranges and
// CheckSchedule; not the server's grammar (package resp), which its own tests check,
// and the compatibility suite against the Lua scripts.
func parse(kind Kind, args string) (Request, error) {
	w := strings.Fields(args)
	num := func(i int, lo, hi int64) int64 {
		if i >= len(w) {
			return lo - 1
		}
		n, err := strconv.ParseInt(w[i], 10, 64)
		if err != nil || n < lo || n > hi {
			return lo - 1
		}
		return n
	}
	bad := func(what string) (Request, error) { return Request{}, fmt.Errorf("%s out of range in %q", what, args) }
	if kind == KindThrottle {
		r := Request{Kind: kind, Limit: num(0, 0, 1e9), Rate: num(1, 1, 1e9), Window: num(2, 1, maxPeriodS) * 1_000_000, Cost: 1, Cell: true}
		if len(w) == 4 {
			r.Cost = num(3, 0, 1e9)
		}
		if r.Limit < 0 || r.Rate < 1 || r.Window < 1 || r.Cost < 0 || len(w) < 3 || len(w) > 4 {
			return bad("an argument")
		}
		return r, r.CheckSchedule()
	}
	r := Request{Kind: kind, Limit: num(0, 1, 1e9), Window: num(1, 1, maxWindowMs) * 1000, Cost: 1}
	if r.Limit < 1 || r.Window < 1 {
		return bad("limit or window_ms")
	}
	for i := 2; i < len(w); i++ {
		var dst *int64
		lo := int64(1)
		switch strings.ToUpper(w[i]) {
		case "PEEK":
			r.Peek = true
			continue
		case "COST":
			dst, lo = &r.Cost, 0
		case "RATE":
			dst = &r.Rate
		case "BURST":
			dst = &r.Burst
		case "QUEUE":
			dst, lo = &r.Queue, 0
		default:
			return bad(w[i])
		}
		hi := int64(1e9)
		if dst == &r.Cost {
			hi = r.Limit * 1000
		}
		i++
		if *dst = num(i, lo, hi); *dst < lo {
			return bad(w[i-1])
		}
	}
	return r, r.CheckSchedule()
}

// parseNative builds the request of Redis's GCRA from "max_burst tokens_per_period
// period [TOKENS n]", as the tests write it.
func parseNative(args string) (Request, error) {
	w := strings.Fields(args)
	if len(w) != 3 && len(w) != 5 {
		return Request{}, fmt.Errorf("GCRA %q: 3 or 5 words", args)
	}
	mb, err1 := strconv.ParseInt(w[0], 10, 64)
	n, err2 := strconv.ParseInt(w[1], 10, 64)
	p, err3 := strconv.ParseFloat(w[2], 64)
	cost := int64(1)
	var err4 error
	if len(w) == 5 {
		cost, err4 = strconv.ParseInt(w[4], 10, 64)
	}
	if err := errors.Join(err1, err2, err3, err4); err != nil || mb < 0 || n < 1 || !(p > 0 && p < 1e12) || cost < 1 {
		return Request{}, fmt.Errorf("GCRA %q out of Redis's ranges: %v", args, err)
	}
	return NativeGCRA(mb, n, p, cost)
}

// split cuts a string at spaces into arguments.
func split(s string) [][]byte {
	return bytes.Fields([]byte(s))
}

// step is one call of a sequence: at µs after base, the arguments after the key,
// and the five reply fields it must get.
type step struct {
	at   int64
	args string
	want [5]int64
}

// runSteps plays steps, in order, on one fresh key.
func runSteps(t *testing.T, kind Kind, steps []step) {
	t.Helper()
	var m machine
	for i, s := range steps {
		r := mustParse(t, kind, s.args)
		d := m.do(t, r, base+s.at)
		if got := wire(kind, d); got != s.want {
			t.Errorf("step %d: %s %s at +%dµs = %v, want %v", i, kind, s.args, s.at, got, s.want)
		}
		if d.Write != (d.Allowed && r.Cost > 0 && !r.Peek) {
			t.Errorf("step %d: %s %s: Write = %v", i, kind, s.args, d.Write)
		}
	}
}
