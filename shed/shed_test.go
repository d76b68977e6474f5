package shed

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// t0 is the tests' start of time.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newTest is a Shedder of the default priorities at a fixed limit (Min = Max).
func newTest(t *testing.T, limit int, cfg Config) *Shedder {
	t.Helper()
	cfg.MaxLimit, cfg.MinLimit, cfg.InitialLimit = limit, limit, limit
	if cfg.QueueTimeout == 0 {
		cfg.QueueTimeout = time.Hour // the tests expire waiters by the time they pass
	}
	if cfg.Clock == nil {
		cfg.Clock = func() time.Time { return t0 }
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no limit":          {QueueTimeout: time.Second},
		"negative limit":    {MaxLimit: -1, QueueTimeout: time.Second},
		"zero deadline":     {MaxLimit: 10},
		"negative deadline": {MaxLimit: 10, QueueTimeout: -time.Second},
		"min over max":      {MaxLimit: 10, MinLimit: 11, QueueTimeout: time.Second},
		"negative queue":    {MaxLimit: 10, MaxQueue: -1, QueueTimeout: time.Second},
		"unknown default":   {MaxLimit: 10, QueueTimeout: time.Second, Default: "urgent"},
		"no priorities":     {MaxLimit: 10, QueueTimeout: time.Second, Priorities: []string{}},
		"twice":             {MaxLimit: 10, QueueTimeout: time.Second, Priorities: []string{"a", "a"}},
		"empty name":        {MaxLimit: 10, QueueTimeout: time.Second, Priorities: []string{"a", ""}},
	} {
		if s, err := New(cfg); !errors.Is(err, ErrBadConfig) || s != nil {
			t.Errorf("%s: New = %v, %v; want ErrBadConfig", name, s, err)
		}
	}
}

func TestLookup(t *testing.T) {
	s := newTest(t, 1, Config{})
	for i, name := range DefaultPriorities() {
		if p, err := s.Lookup(name); err != nil || p != Priority(i) || s.Name(p) != name {
			t.Errorf("Lookup(%q) = %d, %v", name, p, err)
		}
	}
	if _, err := s.Lookup("urgent"); !errors.Is(err, ErrUnknownPriority) {
		t.Errorf("Lookup(urgent) = %v, want ErrUnknownPriority", err)
	}
	if s.Default() != 1 || s.Lowest() != 2 {
		t.Errorf("Default %d Lowest %d, want 1 and 2", s.Default(), s.Lowest())
	}
	one := newTest(t, 1, Config{Priorities: []string{"all"}})
	if one.Default() != 0 {
		t.Errorf("Default of one priority = %d", one.Default())
	}
}

func TestAllowCounts(t *testing.T) {
	s := newTest(t, 3, Config{})
	a, ok1 := s.Allow(t0, 0)
	_, ok2 := s.Allow(t0, 2)
	_, ok3 := s.Allow(t0, 2) // the last slot is kept for the priorities above
	_, ok4 := s.Allow(t0, 1)
	_, ok5 := s.Allow(t0, 0)
	if !ok1 || !ok2 || ok3 || !ok4 || ok5 {
		t.Fatalf("Allow at limit 3: %v %v %v %v %v, want true true false true false", ok1, ok2, ok3, ok4, ok5)
	}
	a.Done(t0.Add(time.Millisecond))
	if _, ok := s.Allow(t0, 9); ok { // out of range: the lowest, which may not take the last slot
		t.Fatal("Allow of the lowest took the last slot")
	}
	st := s.Stats()
	if st.InFlight != 2 || st.Limit != 3 || st.Admitted[0] != 1 || st.Admitted[1] != 1 || st.Admitted[2] != 1 || st.Shed[0] != 1 || st.Shed[2] != 2 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestLowestLeavesLastSlots(t *testing.T) {
	s := newTest(t, 16, Config{})
	n := 0
	for {
		if _, ok := s.Allow(t0, s.Lowest()); !ok {
			break
		}
		n++
	}
	// headroom(16) = 1: the 16th slot is the others'.
	if n != 15 {
		t.Fatalf("the lowest priority took %d of 16 slots, want 15", n)
	}
	if _, ok := s.Allow(t0, 0); !ok {
		t.Fatal("a critical request found no slot")
	}
	one := newTest(t, 2, Config{Priorities: []string{"only"}})
	_, ok1 := one.Allow(t0, 0)
	_, ok2 := one.Allow(t0, 0)
	if !ok1 || !ok2 {
		t.Fatal("a single priority kept slots from itself")
	}
}

// acquireAsync starts an Acquire and waits until it has queued, the queue then
// holding queued waiters.
func acquireAsync(t *testing.T, s *Shedder, p Priority, queued int) <-chan error {
	t.Helper()
	res := make(chan error, 1)
	go func() {
		tk, err := s.Acquire(context.Background(), p)
		if err == nil {
			defer tk.Done(t0)
		}
		res <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); s.Stats().Queued != queued; {
		select {
		case err := <-res:
			t.Fatalf("Acquire(%d) returned %v without queueing", p, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("Acquire never queued")
		}
	}
	return res
}

func TestQueueMostImportantFirst(t *testing.T) {
	s := newTest(t, 1, Config{MaxQueue: 2})
	held, err := s.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	def := acquireAsync(t, s, 1, 1)
	release := make(chan struct{})
	crit := make(chan error, 1)
	go func() {
		tk, err := s.Acquire(context.Background(), 0)
		crit <- err
		if err == nil {
			<-release
			tk.Done(t0)
		}
	}()
	for s.Stats().Queued != 2 {
	}
	held.Done(t0) // the slot goes to the critical waiter, though it came second
	if err := <-crit; err != nil {
		t.Fatalf("critical waiter: %v", err)
	}
	select {
	case <-def:
		t.Fatal("the default waiter got a slot while the critical one held the only one")
	default:
	}
	close(release) // the critical one's Done frees the slot again
	if err := <-def; err != nil {
		t.Fatalf("default waiter: %v", err)
	}
}

func TestLowestNeverQueues(t *testing.T) {
	s := newTest(t, 2, Config{})
	s.Allow(t0, 0)
	s.Allow(t0, 0)
	if _, err := s.Acquire(context.Background(), s.Lowest()); !errors.Is(err, ErrShed) {
		t.Fatalf("sheddable at the limit: %v, want ErrShed at once", err)
	}
	if st := s.Stats(); st.Queued != 0 || st.Shed[2] != 1 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestFullQueueShedsLowerFirst(t *testing.T) {
	s := newTest(t, 1, Config{MaxQueue: 1, Priorities: []string{"critical", "default", "batch", "sheddable"}})
	s.Allow(t0, 0)
	batch := acquireAsync(t, s, 2, 1)
	if _, err := s.Acquire(context.Background(), 2); !errors.Is(err, ErrShed) {
		t.Fatalf("equal priority into a full queue: %v, want ErrShed", err)
	}
	res := make(chan error, 1)
	go func() { _, err := s.Acquire(context.Background(), 1); res <- err }() // takes the batch waiter's place
	if err := <-batch; !errors.Is(err, ErrShed) {
		t.Fatalf("the evicted waiter: %v, want ErrShed", err)
	}
	if st := s.Stats(); st.Queued != 1 || st.Shed[2] != 2 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestQueueDeadline(t *testing.T) {
	s := newTest(t, 1, Config{QueueTimeout: time.Hour})
	held, _ := s.Allow(t0, 0)
	late := acquireAsync(t, s, 0, 1)
	held.Done(t0.Add(time.Hour + time.Millisecond)) // the slot frees after its deadline
	if err := <-late; !errors.Is(err, ErrShed) {
		t.Fatalf("waiter past its deadline: %v, want ErrShed, not served late", err)
	}
	if st := s.Stats(); st.InFlight != 0 || st.Shed[0] != 1 {
		t.Errorf("Stats = %+v", st)
	}

	s.Allow(t0, 0)
	w := acquireAsync(t, s, 1, 1)
	s.Expire(t0.Add(time.Hour - time.Millisecond))
	if st := s.Stats(); st.Queued != 1 {
		t.Fatalf("Expire before the deadline shed: %+v", st)
	}
	s.Expire(t0.Add(time.Hour + time.Millisecond))
	if err := <-w; !errors.Is(err, ErrShed) {
		t.Fatalf("Expire after the deadline: %v, want ErrShed", err)
	}
}

func TestAcquireContext(t *testing.T) {
	s := newTest(t, 1, Config{})
	s.Allow(t0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { _, err := s.Acquire(ctx, 0); res <- err }()
	for s.Stats().Queued == 0 {
	}
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire after cancel: %v", err)
	}
	if st := s.Stats(); st.Queued != 0 || st.Shed[0] != 1 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestRetryAfterBounds(t *testing.T) {
	s := newTest(t, 1, Config{RetrySpread: 100 * time.Millisecond})
	lo, hi := time.Hour, time.Duration(0)
	for range 1000 {
		d := s.RetryAfter()
		lo, hi = min(lo, d), max(hi, d)
	}
	// No window closed yet: base 1 ms, spread 100 ms.
	if lo < time.Millisecond || hi >= 101*time.Millisecond || hi-lo < 50*time.Millisecond {
		t.Errorf("RetryAfter in [%v, %v], want within [1ms, 101ms) and spread", lo, hi)
	}
}

// TestConcurrentNeverOverLimit runs goroutines through Acquire under -race and checks
// that the requests in flight never exceed the limit.
func TestConcurrentNeverOverLimit(t *testing.T) {
	s, err := New(Config{MaxLimit: 4, QueueTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	cur, most := 0, 0
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				tk, err := s.Acquire(context.Background(), Priority(g%3))
				if err != nil {
					continue
				}
				mu.Lock()
				cur++
				most = max(most, cur)
				mu.Unlock()
				mu.Lock()
				cur--
				mu.Unlock()
				tk.Done(time.Now())
			}
		}()
	}
	wg.Wait()
	st := s.Stats()
	if most > 4 || st.InFlight != 0 || st.Queued != 0 {
		t.Errorf("most in flight %d (limit 4), Stats %+v", most, st)
	}
}
