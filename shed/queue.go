package shed

import (
	"context"
	"time"
)

// waiter is a request queued for a slot.
type waiter struct {
	p        Priority
	deadline time.Time
	ready    chan struct{} // closed once decided
	decided  bool          // admitted or shed; guarded by Shedder.mu
	admitted bool
	start    time.Time // when admitted
}

// queue holds the waiters, one FIFO per priority.
type queue struct {
	fifo [][]*waiter
	n    int
}

func (q *queue) init(priorities int) { q.fifo = make([][]*waiter, priorities) }

// push adds w at the back of its priority.
func (q *queue) push(w *waiter) {
	q.fifo[w.p] = append(q.fifo[w.p], w)
	q.n++
}

// popBest takes the oldest waiter of the most important priority; nil if none.
func (q *queue) popBest() *waiter {
	for p, f := range q.fifo {
		if len(f) > 0 {
			w := f[0]
			f[0] = nil
			q.fifo[p] = f[1:]
			q.n--
			return w
		}
	}
	return nil
}

// popNewestBelow takes the newest waiter of the least important priority below p
// (less important than p); nil if none.
func (q *queue) popNewestBelow(p Priority) *waiter {
	for i := len(q.fifo) - 1; i > int(p); i-- {
		if f := q.fifo[i]; len(f) > 0 {
			w := f[len(f)-1]
			f[len(f)-1] = nil
			q.fifo[i] = f[:len(f)-1]
			q.n--
			return w
		}
	}
	return nil
}

// remove takes w out of the queue, if it is there.
func (q *queue) remove(w *waiter) {
	f := q.fifo[w.p]
	for i, x := range f {
		if x == w {
			q.fifo[w.p] = append(f[:i], f[i+1:]...)
			f[len(f)-1] = nil
			q.n--
			return
		}
	}
}

// enqueue queues a request of priority p arriving at now when no slot is free, or
// sheds it (nil): the lowest priority never queues, and a full queue makes room only
// by shedding its newest waiter of a priority below p. s.mu is held.
func (s *Shedder) enqueue(now time.Time, p Priority) *waiter {
	if p == s.Lowest() && p > 0 {
		s.shed[p]++
		return nil
	}
	if s.queue.n >= s.queueCap() {
		v := s.queue.popNewestBelow(p)
		if v == nil {
			s.shed[p]++
			return nil
		}
		s.decide(v, now, false)
	}
	w := &waiter{p: p, deadline: now.Add(s.queueTimeout), ready: make(chan struct{})}
	s.queue.push(w)
	return w
}

// queueCap is the most waiters (Config.MaxQueue); s.mu is held.
func (s *Shedder) queueCap() int {
	if s.maxQueue > 0 {
		return s.maxQueue
	}
	if s.g.mean <= 0 {
		return s.limit
	}
	return max(s.limit, int(int64(s.limit)*int64(s.queueTimeout)/int64(s.g.mean)))
}

// decide admits or sheds w at now and wakes it; s.mu is held.
func (s *Shedder) decide(w *waiter, now time.Time, admit bool) {
	w.decided, w.admitted = true, admit
	if admit {
		s.inflight++
		s.admitted[w.p]++
		w.start = now
	} else {
		s.shed[w.p]++
	}
	close(w.ready)
}

// dispatch gives free slots to waiters, most important first, shedding those past
// their deadline: a request served late is a request served for nobody. s.mu is held.
func (s *Shedder) dispatch(now time.Time) {
	for s.inflight < s.limit {
		w := s.queue.popBest()
		if w == nil {
			return
		}
		s.decide(w, now, !now.After(w.deadline))
	}
}

// Expire sheds, at now, every waiter past its deadline. Acquire's timers do it in
// real time; tests and callers that pass their own time call it.
func (s *Shedder) Expire(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, f := range s.queue.fifo {
		kept := f[:0]
		for _, w := range f {
			if now.After(w.deadline) {
				s.decide(w, now, false)
				s.queue.n--
			} else {
				kept = append(kept, w)
			}
		}
		clear(f[len(kept):])
		s.queue.fifo[p] = kept
	}
}

// wait blocks until w is decided, its deadline passes or ctx ends.
func (s *Shedder) wait(ctx context.Context, w *waiter, now time.Time) (Ticket, error) {
	timer := time.NewTimer(w.deadline.Sub(now))
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
	case <-timer.C:
		err = ErrShed
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !w.decided {
		s.queue.remove(w)
		s.decide(w, now, false)
		return Ticket{}, err
	}
	if !w.admitted {
		return Ticket{}, ErrShed
	}
	return Ticket{s: s, start: w.start}, nil
}
