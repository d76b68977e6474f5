package client

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// sliceAt is a slice of units granted, asked at sent and valid for valid.
func sliceAt(units int, sent time.Time, valid time.Duration, remaining int) Slice {
	return Slice{Granted: units, Limit: 100, Remaining: remaining, Valid: valid, Until: sent.Add(valid)}
}

// TestSliceKeyTake: units are spent soonest-to-expire first, across slices, never
// at or past a slice's Until, and a call finding too few spends none.
func TestSliceKeyTake(t *testing.T) {
	k := newSliceKey()
	k.got(sliceAt(3, t0, 50*time.Millisecond, 90), t0.Add(time.Millisecond))
	k.got(sliceAt(4, t0, 20*time.Millisecond, 86), t0.Add(time.Millisecond))
	if k.held[0].units != 4 || k.holding() != 7 {
		t.Fatalf("held %+v; want the 20 ms slice first, 7 units", k.held)
	}
	if _, ok := k.take(5, t0.Add(10*time.Millisecond)); !ok || k.holding() != 2 || k.held[0].units != 2 {
		t.Fatalf("take 5: held %+v; want 2 of the 50 ms slice", k.held)
	}
	if _, ok := k.take(3, t0.Add(10*time.Millisecond)); ok || k.holding() != 2 {
		t.Fatalf("take 3 of 2: held %+v; want nothing spent", k.held)
	}
	if n := k.expire(t0.Add(50*time.Millisecond - 1)); n != 0 {
		t.Fatalf("expired %d before Until", n)
	}
	if n := k.expire(t0.Add(50 * time.Millisecond)); n != 2 || k.holding() != 0 {
		t.Fatalf("at Until: expired %d, held %+v; want 2 expired, none usable", n, k.held)
	}
}

// TestSliceKeySize: a slice is about the last 100 ms of the key's use, at least what
// the call needs, at most 1/(2·replicas) of what the server had left, down to single
// units near the limit.
func TestSliceKeySize(t *testing.T) {
	k := newSliceKey()
	if n := k.size(t0, 0, 1000, 4); n != 1 {
		t.Fatalf("no history: %d; want 1", n)
	}
	for i := range 60 { // 60 units over 60 ms
		k.use(1, t0.Add(time.Duration(i)*time.Millisecond))
	}
	if n := k.size(t0.Add(60*time.Millisecond), 0, 1000, 4); n != 60 {
		t.Fatalf("60 units in the last 100 ms: %d; want 60", n)
	}
	// 150 ms on: the first bucket (60 units) is half inside the last 100 ms.
	if n := k.size(t0.Add(150*time.Millisecond), 0, 1000, 4); n != 30 {
		t.Fatalf("half a bucket ago: %d; want 30", n)
	}
	if n := k.size(t0.Add(60*time.Millisecond), 0, 200, 4); n != 25 {
		t.Fatalf("limit 200 over 4 replicas: %d; want the cap 25", n)
	}
	if n := k.size(t0.Add(60*time.Millisecond), 80, 200, 4); n != 80 {
		t.Fatalf("a call needing 80: %d; want 80", n)
	}
	k.got(sliceAt(10, t0, time.Second, 7), t0)
	if n := k.size(t0.Add(60*time.Millisecond), 0, 1000, 4); n != 1 {
		t.Fatalf("7 left at the server: %d; want single units", n)
	}
	if n := k.size(t0.Add(300*time.Millisecond), 0, 1000, 1); n != 1 {
		t.Fatalf("idle 200 ms: %d; want 1", n)
	}
}

// TestSliceKeyAhead: the next slice is asked when half of the last is left, one at
// a time, not while the server refuses.
func TestSliceKeyAhead(t *testing.T) {
	k := newSliceKey()
	k.ask(10)
	if n := k.ahead(t0, 1000, 1); n != 0 {
		t.Fatalf("with a slice out: %d", n)
	}
	k.fetch = nil
	k.got(sliceAt(10, t0, time.Second, 900), t0)
	if _, ok := k.take(4, t0); !ok || k.ahead(t0, 1000, 1) != 0 {
		t.Fatal("6 of 10 held: asked ahead")
	}
	if _, ok := k.take(1, t0); !ok || k.ahead(t0, 1000, 1) != 5 {
		t.Fatalf("5 of 10 held: want a slice of the 5 used")
	}
	k.got(Slice{Limit: 100, RetryAfter: 30 * time.Millisecond, Until: t0}, t0.Add(time.Millisecond))
	k.held = nil
	if n := k.ahead(t0.Add(29*time.Millisecond), 1000, 1); n != 0 || k.result(false, t0.Add(29*time.Millisecond)).RetryAfter != time.Millisecond {
		t.Fatalf("refused until 30 ms after sent: asked %d at 29 ms", n)
	}
	if n := k.ahead(t0.Add(30*time.Millisecond), 1000, 1); n == 0 {
		t.Fatal("refused until 30 ms: not asked at 30 ms")
	}
}

// TestSliceKeyGiveBack: only units with more than twice the round trip (and 5 ms)
// left go back; the others stay to expire.
func TestSliceKeyGiveBack(t *testing.T) {
	k := newSliceKey()
	k.got(sliceAt(3, t0, 8*time.Millisecond, 90), t0.Add(time.Millisecond)) // rtt 1 ms
	k.got(sliceAt(4, t0, time.Second, 86), t0.Add(4*time.Millisecond))      // rtt 4 ms
	if n := k.giveBack(t0.Add(5 * time.Millisecond)); n != 4 || k.holding() != 3 {
		t.Fatalf("gave back %d, kept %+v; want the 4 with 995 ms left, not the 3 with 3 ms", n, k.held)
	}
}

// frozenSlicer is a Slicer on an embedded Client whose clock stands at t0 until the
// test moves now (unix µs); the Slicer's sweeper never ticks.
func frozenSlicer(t *testing.T) (*Client, *Slicer, *atomic.Int64) {
	t.Helper()
	now := new(atomic.Int64)
	now.Store(t0.UnixMicro())
	c, err := NewEmbedded(EmbeddedOptions{Clock: func() time.Time { return time.UnixMicro(now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.NewSlicer(SliceOptions{Idle: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return c, s, now
}

// TestSlicerIdleAndClose runs a Slicer on the embedded store on a frozen clock: a
// key idle for Idle gives back what it holds, Close gives back the rest, and then
// the store has counted exactly the units admitted.
func TestSlicerIdleAndClose(t *testing.T) {
	c, s, now := frozenSlicer(t)
	ctx, l, year := context.Background(), Fixed(1000, time.Hour), 365*24*time.Hour
	for range 50 {
		if res, err := s.Allow(ctx, "idle", l); err != nil || !res.Allowed {
			t.Fatalf("idle: %+v, %v", res, err)
		}
		if res, err := s.Allow(ctx, "busy", Token(1000, year)); err != nil || !res.Allowed {
			t.Fatalf("busy: %+v, %v", res, err)
		}
	}
	s.fetches.Wait() // the slices asked ahead are in
	now.Add(time.Hour.Microseconds() / 2)
	if res, err := s.Allow(ctx, "busy", Token(1000, year)); err != nil || !res.Allowed {
		t.Fatalf("busy: %+v, %v", res, err)
	}
	s.fetches.Wait()
	held := func() int64 { st := s.Stats(); return st.Taken - st.Used - st.GivenBack - st.Expired }
	before := held()
	if err := s.sweep(time.UnixMicro(now.Load()), false); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.GivenBack == 0 || held() == 0 || held() >= before {
		t.Fatalf("after the idle sweep: %+v, held %d of %d; want the idle key's units back, the busy key's kept", st, held(), before)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); held() != 0 || st.Used != 101 {
		t.Fatalf("after Close: %+v; want nothing held, 101 used", st)
	}
	for key, l := range map[string]Limit{"idle": l, "busy": Token(1000, year)} {
		want := map[string]int{"idle": 50, "busy": 51}[key]
		if res, err := c.Peek(ctx, key, l); err != nil || res.Remaining != 1000-want-1 {
			t.Fatalf("%s: %+v, %v; want %d spent at the store, exactly what was admitted", key, res, err, want)
		}
	}
}

// TestSliceKeyUntake: units a refused AllowAll took go back under the first Until
// they came from, but not once it has passed, nor to a forgotten key.
func TestSliceKeyUntake(t *testing.T) {
	k := newSliceKey()
	k.got(sliceAt(2, t0, 10*time.Millisecond, 90), t0)
	k.got(sliceAt(5, t0, 20*time.Millisecond, 85), t0)
	until, ok := k.take(3, t0.Add(time.Millisecond))
	if !ok || !until.Equal(t0.Add(10*time.Millisecond)) {
		t.Fatalf("take 3: %v, %v; want the 10 ms slice's Until", until, ok)
	}
	if !k.untake(3, until, t0.Add(2*time.Millisecond)) || k.holding() != 7 || k.held[0].units != 3 || !k.held[0].until.Equal(until) {
		t.Fatalf("untake: held %+v; want 3 back under the first Until", k.held)
	}
	if k.untake(1, until, until) {
		t.Fatal("untake at Until: accepted")
	}
	k.gone = true
	if k.untake(1, until, t0) {
		t.Fatal("untake on a forgotten key: accepted")
	}
}
