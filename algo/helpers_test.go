package algo

import (
	"bytes"
	"slices"
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

// wire is a Decision as its five reply fields; CL.THROTTLE's first field is "limited".
func wire(kind Kind, d Decision) [5]int64 {
	flag := int64(0)
	if d.Allowed != (kind == KindThrottle) {
		flag = 1
	}
	return [5]int64{flag, d.Limit, d.Remaining, d.RetryAfter, d.ResetAfter}
}

// mustParse parses a command's arguments after the key, given as one string.
func mustParse(t testing.TB, kind Kind, args string) Request {
	t.Helper()
	r, err := Parse(kind, split(args), 100_000)
	if err != nil {
		t.Fatalf("Parse(%v, %q): %v", kind, args, err)
	}
	return r
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
