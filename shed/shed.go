// Package shed keeps a process's work in flight under a limit it learns from latency,
// and when the process is over capacity refuses the least important requests first:
// load shedding, the answer to "the service is overloaded, what do we drop?", which
// a rate limit cannot give when every client is within its own limit.
//
// A Shedder admits a request while fewer than its limit are in flight. The limit is
// learned from the latency of completed requests, after the gradient and Vegas
// limiters of Netflix's concurrency-limits: when latency rises above the least seen,
// work is queueing inside the service, and the limit comes down to what the service
// completes without queueing, plus a little headroom. Over the limit, a request waits
// in a short queue ordered by priority, at most Config.QueueTimeout: a slot that
// frees goes to the most important waiter, and a waiter past its deadline is refused
// rather than served late. When the queue is full, an arrival takes the place of the
// newest waiter of a lower priority, and is refused if none is lower. The lowest
// priority (of two or more) never queues: it is served at once or refused at once, because queueing it
// only turns load into latency and makes its refusal as costly as its service; and it
// leaves the last slots (the limit's headroom) to the others, so that an important
// request arriving at a saturated service finds one free.
//
// Priorities are named, most important first (DefaultPriorities: "critical",
// "default", "sheddable"). Health checks must never reach a Shedder: a load balancer
// that sees them fail pulls the node and moves its load to the others, which then
// shed and fail theirs. Handler bypasses them by path or predicate.
//
// Every decision takes the time as an argument (as golang.org/x/time/rate does), so
// tests pass time without sleeping; only Acquire, which blocks, reads Config.Clock.
// Importing shed pulls no Prometheus: package shed/shedmetrics exports Stats.
package shed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Errors.
var (
	// ErrShed is Acquire's answer for a request refused: the limit was reached and it
	// could not queue, or it waited past Config.QueueTimeout.
	ErrShed = errors.New("shed: overloaded, request shed")
	// ErrBadConfig starts the error New returns for a configuration it refuses.
	ErrBadConfig = errors.New("shed: bad config")
	// ErrUnknownPriority is Lookup's answer for a name that is not a priority.
	ErrUnknownPriority = errors.New("shed: unknown priority")
)

// Defaults applied by New to zero Config fields.
const (
	// DefaultInitialLimit is the limit before any latency is learned, clamped to
	// [MinLimit, MaxLimit]: concurrency-limits starts at 20, but a process slower than
	// that would queue 20 requests before its first window says so.
	DefaultInitialLimit = 10
	// DefaultWindow is how often the limit may move: 100 ms holds about 80
	// completions of a service of 8 workers × 10 ms, enough for a steady mean.
	DefaultWindow = 100 * time.Millisecond
	// DefaultRetrySpread is the least spread of RetryAfter's jitter.
	DefaultRetrySpread = time.Second
)

// DefaultPriorities returns the priorities when Config.Priorities is nil, most
// important first: "critical", "default", "sheddable". A new slice each call.
func DefaultPriorities() []string { return []string{"critical", "default", "sheddable"} }

// Config configures a Shedder. MaxLimit and QueueTimeout are required.
type Config struct {
	// Priorities names the priorities, most important first: 1 to 64 distinct,
	// non-empty names. nil means DefaultPriorities().
	Priorities []string
	// Default names the priority of a request that gives none (Handler); "" means
	// "default" if that is a priority, else the lowest.
	Default string
	// MaxLimit is the most requests ever in flight, whatever the latency says: at
	// least 1.
	MaxLimit int
	// MinLimit is the fewest the limit may learn down to; 0 means 1.
	MinLimit int
	// InitialLimit is the limit before any window closes; 0 means DefaultInitialLimit,
	// clamped to [MinLimit, MaxLimit].
	InitialLimit int
	// QueueTimeout is the longest a request waits for a slot before it is shed: the
	// queue absorbs a burst, never a standing overload. Required, > 0.
	QueueTimeout time.Duration
	// MaxQueue is the most requests waiting; 0 means as many as the service completes
	// within QueueTimeout (limit × QueueTimeout / mean latency, at least the limit):
	// a waiter further back would only expire.
	MaxQueue int
	// Window is the least time between two moves of the limit; 0 means DefaultWindow.
	Window time.Duration
	// RetrySpread is the least spread of RetryAfter's jitter; 0 means
	// DefaultRetrySpread.
	RetrySpread time.Duration
	// Clock is the time Acquire and Handler read; nil means time.Now.
	Clock func() time.Time
}

// Priority is a priority's rank: 0 is the most important. Lookup gives it by name.
type Priority uint8

// Stats is a Shedder's state and counts since New.
type Stats struct {
	Limit    int           // the learned limit
	InFlight int           // requests admitted and not yet Done
	Queued   int           // requests waiting for a slot
	Latency  time.Duration // the last window's mean latency; 0 before one closed
	Names    []string      // the priorities, most important first
	Admitted []uint64      // requests admitted, by priority
	Shed     []uint64      // requests refused, by priority
}

// Shedder admits requests under a learned concurrency limit, shedding by priority. It
// is safe for concurrent use.
type Shedder struct {
	names        []string
	def          Priority
	queueTimeout time.Duration
	maxQueue     int
	spread       time.Duration
	clock        func() time.Time

	mu       sync.Mutex
	g        gradient
	limit    int // int(g.limit), read on every admission
	inflight int
	queue    queue
	admitted []uint64
	shed     []uint64
}

// New validates cfg and returns a Shedder.
func New(cfg Config) (*Shedder, error) {
	names := cfg.Priorities
	if names == nil {
		names = DefaultPriorities()
	}
	if err := checkNames(names); err != nil {
		return nil, err
	}
	if cfg.MaxLimit < 1 {
		return nil, fmt.Errorf("%w: MaxLimit %d: want at least 1", ErrBadConfig, cfg.MaxLimit)
	}
	if cfg.QueueTimeout <= 0 {
		return nil, fmt.Errorf("%w: QueueTimeout %v: want > 0", ErrBadConfig, cfg.QueueTimeout)
	}
	if cfg.MinLimit < 0 || cfg.MinLimit > cfg.MaxLimit || cfg.InitialLimit < 0 || cfg.MaxQueue < 0 || cfg.Window < 0 || cfg.RetrySpread < 0 {
		return nil, fmt.Errorf("%w: MinLimit %d, InitialLimit %d, MaxQueue %d, Window %v, RetrySpread %v: want none negative and MinLimit ≤ MaxLimit %d",
			ErrBadConfig, cfg.MinLimit, cfg.InitialLimit, cfg.MaxQueue, cfg.Window, cfg.RetrySpread, cfg.MaxLimit)
	}
	s := &Shedder{
		names:        append([]string(nil), names...),
		queueTimeout: cfg.QueueTimeout,
		maxQueue:     cfg.MaxQueue,
		spread:       or(cfg.RetrySpread, DefaultRetrySpread),
		clock:        cfg.Clock,
		admitted:     make([]uint64, len(names)),
		shed:         make([]uint64, len(names)),
	}
	def, err := s.defaultPriority(cfg.Default)
	if err != nil {
		return nil, err
	}
	s.def = def
	if s.clock == nil {
		s.clock = time.Now
	}
	lo := float64(max(1, cfg.MinLimit))
	s.g = gradient{
		limit:  min(float64(cfg.MaxLimit), max(lo, float64(or(cfg.InitialLimit, DefaultInitialLimit)))),
		min:    lo,
		max:    float64(cfg.MaxLimit),
		window: or(cfg.Window, DefaultWindow),
	}
	s.limit = int(s.g.limit)
	s.queue.init(len(names))
	return s, nil
}

// checkNames validates the priorities' names.
func checkNames(names []string) error {
	if len(names) == 0 || len(names) > 64 {
		return fmt.Errorf("%w: %d priorities: want 1 to 64", ErrBadConfig, len(names))
	}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" || seen[n] {
			return fmt.Errorf("%w: priority %q empty or named twice", ErrBadConfig, n)
		}
		seen[n] = true
	}
	return nil
}

// defaultPriority is the priority name names, or the Config.Default rule's when "".
func (s *Shedder) defaultPriority(name string) (Priority, error) {
	if name != "" {
		p, err := s.Lookup(name)
		if err != nil {
			return 0, fmt.Errorf("%w: Default: %w", ErrBadConfig, err)
		}
		return p, nil
	}
	if p, err := s.Lookup("default"); err == nil {
		return p, nil
	}
	return s.Lowest(), nil
}

// or is v, or def when v is zero.
func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Lookup is the priority named name.
func (s *Shedder) Lookup(name string) (Priority, error) {
	for i, n := range s.names {
		if n == name {
			return Priority(i), nil
		}
	}
	return 0, fmt.Errorf("%w %q: want one of %q", ErrUnknownPriority, name, s.names)
}

// Default is the priority of a request that names none (Config.Default).
func (s *Shedder) Default() Priority { return s.def }

// Lowest is the least important priority: the one that never queues.
func (s *Shedder) Lowest() Priority { return Priority(len(s.names) - 1) }

// Name is p's name; "" if p is not one of s's priorities.
func (s *Shedder) Name(p Priority) string {
	if int(p) >= len(s.names) {
		return ""
	}
	return s.names[p]
}

// Ticket is an admitted request's place. Give it back with Done when the request
// ends, whatever its outcome; the zero Ticket is not admitted.
type Ticket struct {
	s     *Shedder
	start time.Time
}

// Done gives the place back at now, the request's latency (now minus its admission)
// teaching the limit. Each admitted Ticket must be given back exactly once; Done on
// the zero Ticket panics.
func (t Ticket) Done(now time.Time) {
	t.s.done(now, now.Sub(t.start))
}

// Allow admits a request of priority p at now if a slot is free, without queueing:
// ok false means it was shed (and counted so).
func (s *Shedder) Allow(now time.Time, p Priority) (t Ticket, ok bool) {
	p = s.clamp(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight < s.room(p) {
		return s.admit(now, p), true
	}
	s.shed[p]++
	return Ticket{}, false
}

// Acquire admits a request of priority p, waiting in the queue if the limit is
// reached and p may queue, at most Config.QueueTimeout. It returns ErrShed when the
// request is refused, or ctx's error if ctx ends first (the request is then counted
// as shed).
func (s *Shedder) Acquire(ctx context.Context, p Priority) (Ticket, error) {
	now := s.clock()
	p = s.clamp(p)
	s.mu.Lock()
	if s.inflight < s.room(p) {
		t := s.admit(now, p)
		s.mu.Unlock()
		return t, nil
	}
	w := s.enqueue(now, p)
	s.mu.Unlock()
	if w == nil {
		return Ticket{}, ErrShed
	}
	return s.wait(ctx, w, now)
}

// clamp maps a priority out of range to the lowest.
func (s *Shedder) clamp(p Priority) Priority {
	return min(p, s.Lowest())
}

// room is how many requests may be in flight when one of priority p arrives: the
// limit, less ⌈headroom⌉ for the lowest of two or more priorities. Those last slots
// are the others': without them, at 3x load of the overload experiment, the sheddable
// arrivals took every slot as it freed, and a critical request waited for a
// completion as in a single-server queue at 77% utilisation (p99 150 ms against 31 ms
// at 0.5x, 1.4% past the queue timeout). s.mu is held.
func (s *Shedder) room(p Priority) int {
	if p == s.Lowest() && p > 0 {
		return s.limit - int(math.Ceil(headroom(s.g.limit)))
	}
	return s.limit
}

// admit takes a slot for a request of priority p at now; s.mu is held.
func (s *Shedder) admit(now time.Time, p Priority) Ticket {
	s.inflight++
	s.admitted[p]++
	return Ticket{s: s, start: now}
}

// done returns a slot after a request of latency rtt, lets the limit learn from it,
// and gives free slots to waiters.
func (s *Shedder) done(now time.Time, rtt time.Duration) {
	s.mu.Lock()
	inflight := s.inflight
	s.inflight--
	if s.g.sample(now, rtt, inflight) {
		s.limit = int(s.g.limit)
	}
	s.dispatch(now)
	s.mu.Unlock()
}

// Stats returns the shedder's state and counts.
func (s *Shedder) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{
		Limit:    s.limit,
		InFlight: s.inflight,
		Queued:   s.queue.n,
		Latency:  s.g.mean,
		Names:    append([]string(nil), s.names...),
		Admitted: append([]uint64(nil), s.admitted...),
		Shed:     append([]uint64(nil), s.shed...),
	}
}

// RetryAfter is when a request shed now should come back: the base, one mean latency
// of the last window (at least 1 ms: by then the service has completed a limit's
// worth of requests, and the queue it had has drained), plus a uniform jitter in [0,
// max(base, Config.RetrySpread)), so that clients shed together do not return
// together. Never before the base, and at most base + max(base, RetrySpread).
func (s *Shedder) RetryAfter() time.Duration {
	s.mu.Lock()
	base := max(s.g.mean, time.Millisecond)
	s.mu.Unlock()
	return base + rand.N(max(base, s.spread))
}
