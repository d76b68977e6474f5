package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/shed"
)

// Configuration 5: three replicas share one RL.ACQUIRE limit on a real rlserver
// process. Each replica has K workers of 3S, so the fleet's capacity and offered load
// are configuration 1 to 4's (K/S req/s): three replicas of K/3 workers do not divide
// K = 8, and three of K workers of S with the load tripled would triple the HTTP
// traffic a shared 2-core box has to carry, measuring the box. Its percentages and
// p99 ratio compare with configurations 1 to 4; its latencies in ms are 3× theirs.
const (
	fleetReplicas = 3
	// fleetReservePercent of the fleet limit is kept for critical calls: sheddable
	// calls acquire with RESERVE, critical calls without.
	fleetReservePercent = 20
	// fleetTransit is how many of a replica's requests hold a lease on no worker: one
	// taking or giving back its lease, or queued behind a worker as the shedder's
	// headroom keeps one. Sheddable traffic may hold the workers' leases and these:
	// with the workers' alone (a limit of 30, RESERVE 6), sheddable requests held at
	// most 19 of the 24 workers' leases at 3x load and goodput stayed at 88%.
	fleetTransit = 1
	// fleetLease is each lease's time: far above any request's, so that no lease
	// ends by itself while its request runs (the harness's count would then exceed
	// the server's).
	fleetLease = 10 * time.Second
)

// fleetSpec is the shared limit a confFleet replica takes its leases from.
type fleetSpec struct {
	addr    string // rlserver
	key     string // the fleet's RL.ACQUIRE key
	limit   int    // leases live at once, fleet-wide
	reserve int    // RESERVE of a sheddable call
}

// newFleetSpec is the fleet limit for replicas of workers each: sheddable traffic may
// fill the fleet's workers and its requests in transit, which are 80% of the limit,
// and critical traffic takes the other 20% (queueing briefly in the replicas) and any
// place sheddable traffic left.
func newFleetSpec(addr, key string, workers int) fleetSpec {
	all := fleetReplicas * (workers + fleetTransit)
	limit := (all*100 + 100 - fleetReservePercent - 1) / (100 - fleetReservePercent) // ⌈all / 0.8⌉
	return fleetSpec{addr: addr, key: key, limit: limit, reserve: limit - all}
}

// fleetLeaseHeld is one request's hold of a lease: from RL.ACQUIRE's answer (or the
// hand-over) to the release call (or the next hand-over), wall-clock ns (the replicas
// are processes of one machine), within the server's own lease, so the harness's
// count of leases held at once is at most the server's.
type fleetLeaseHeld struct {
	From, To  int64
	Sheddable bool
}

// fleetLeases are the leases a replica held, and the most the fleet held by its answers.
type fleetLeases struct {
	mu          sync.Mutex
	all         []fleetLeaseHeld
	releaseErrs int
	max         atomic.Int64
}

// fleetReport is a replica's /leases: its leases, the most leases live by
// RL.ACQUIRE's answers to its acquires, and its failed releases.
type fleetReport struct {
	Held          []fleetLeaseHeld
	MaxLive       int
	ReleaseErrors int
}

func (l *fleetLeases) add(h fleetLeaseHeld) {
	l.mu.Lock()
	l.all = append(l.all, h)
	l.mu.Unlock()
}

// released counts a failed RL.RELEASE: a place leaked until its lease's end.
func (l *fleetLeases) released(err error) {
	if err != nil {
		l.mu.Lock()
		l.releaseErrs++
		l.mu.Unlock()
	}
}

func (l *fleetLeases) report() fleetReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fleetReport{slices.Clone(l.all), int(l.max.Load()), l.releaseErrs}
}

// fleetHandler is the replica of confFleet: each request takes a lease of the fleet
// limit before work, and releases it after. A sheddable request asks with RESERVE and
// is refused at once. A critical one asks without and, when the fleet is full, waits
// up to a.queue for a lease this replica's requests end with: the replica hands it
// over instead of releasing it. Asking again instead (every ms) was a retry storm: at
// 3× some 50 critical requests waited at once, 50,000 RL.ACQUIRE calls a second, and
// the round trips they slowed held every lease longer (critical success 57%,
// goodput 37% at 3×).
func fleetHandler(a overloadSpec, work http.Handler, leases *fleetLeases) (http.Handler, error) {
	f := a.fleet
	if f.limit < 1 || f.reserve < 0 || f.reserve >= f.limit {
		return nil, fmt.Errorf("fleet limit %d reserve %d: want 0 ≤ reserve < limit", f.limit, f.reserve)
	}
	rdb := redis.NewClient(&redis.Options{Addr: f.addr, MaxRetries: -1, PoolSize: 256})
	leaseMs := fleetLease.Milliseconds()
	acquire := func(ctx context.Context, sheddable bool) (id string, err error) {
		args := []any{"RL.ACQUIRE", f.key, f.limit, leaseMs}
		reserve := 0
		if sheddable {
			args, reserve = append(args, "RESERVE", f.reserve), f.reserve
		}
		v, err := rdb.Do(ctx, args...).Slice()
		if err != nil {
			return "", err
		}
		if len(v) != 5 {
			return "", fmt.Errorf("RL.ACQUIRE answered %v", v)
		}
		if v[0] != int64(1) {
			return "", nil
		}
		// remaining counts limit − reserve − live after the call.
		atomicMax(&leases.max, int64(f.limit-reserve)-v[2].(int64))
		return v[4].(string), nil
	}
	var q fleetQueue
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The lease outlives the client's request: the work goes on when the client
		// has gone, and its place must stay taken until it ends.
		ctx := context.WithoutCancel(r.Context())
		sheddable := !isCritical(r)
		deadline := time.Now().Add(a.queue)
		id, err := acquire(ctx, sheddable)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		l := heldLease{id, time.Now()}
		if id == "" {
			var ok bool
			if sheddable {
				shed.WriteShed(w, time.Second)
				return
			}
			if l, ok = q.wait(deadline); !ok {
				shed.WriteShed(w, time.Second)
				return
			}
		}
		from := time.Now().UnixNano()
		work.ServeHTTP(w, r)
		leases.add(fleetLeaseHeld{from, time.Now().UnixNano(), sheddable})
		// A lease handed over for its first half only: it ends by itself at fleetLease.
		if time.Since(l.taken) < fleetLease/2 && q.handOff(l) {
			return
		}
		leases.released(rdb.Do(ctx, "RL.RELEASE", f.key, l.id).Err())
	}), nil
}

// heldLease is a fleet lease a replica holds: its id and when it was taken.
type heldLease struct {
	id    string
	taken time.Time
}

// fleetQueue is a replica's critical requests waiting for a lease, oldest first.
type fleetQueue struct {
	mu      sync.Mutex
	waiters []chan heldLease
}

// handOff gives l to the oldest waiter, if there is one.
func (q *fleetQueue) handOff(l heldLease) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) == 0 {
		return false
	}
	q.waiters[0] <- l // buffered: never blocks
	q.waiters = q.waiters[1:]
	return true
}

// wait waits for a lease handed over until deadline.
func (q *fleetQueue) wait(deadline time.Time) (heldLease, bool) {
	ch := make(chan heldLease, 1)
	q.mu.Lock()
	q.waiters = append(q.waiters, ch)
	q.mu.Unlock()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case l := <-ch:
		return l, true
	case <-t.C:
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := slices.Index(q.waiters, ch); i >= 0 {
		q.waiters = slices.Delete(q.waiters, i, i+1)
		return heldLease{}, false
	}
	return <-ch, true // handed over as the deadline came
}

// fleetPeak is the most leases held at once, all and sheddable ones. At equal
// times a release counts before an acquire: the count is a lower bound of the
// server's, never above it.
func fleetPeak(held []fleetLeaseHeld) (all, sheddable int) {
	type event struct {
		at        int64
		delta     int
		sheddable bool
	}
	ev := make([]event, 0, 2*len(held))
	for _, h := range held {
		ev = append(ev, event{h.From, 1, h.Sheddable}, event{h.To, -1, h.Sheddable})
	}
	slices.SortFunc(ev, func(a, b event) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta))
	})
	var n, s int
	for _, e := range ev {
		n += e.delta
		if e.sheddable {
			s += e.delta
		}
		all, sheddable = max(all, n), max(sheddable, s)
	}
	return all, sheddable
}
