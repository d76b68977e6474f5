package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
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
	// fleetLease is each lease's time: far above any request's, so that no lease
	// ends by itself while its request runs (the harness's count would then exceed
	// the server's).
	fleetLease = 10 * time.Second
	// fleetPoll is the mean wait of a critical request between two RL.ACQUIRE calls
	// while the fleet is full, up to the queue timeout. retry_after_ms does not help
	// here: it is the earliest lease's deadline, and leases are released long before.
	fleetPoll = time.Millisecond
)

// fleetSpec is the shared limit a confFleet replica takes its leases from.
type fleetSpec struct {
	addr    string // rlserver
	key     string // the fleet's RL.ACQUIRE key
	limit   int    // leases live at once, fleet-wide
	reserve int    // RESERVE of a sheddable call
}

// newFleetSpec is the fleet limit for replicas of workers each: sheddable traffic may
// fill exactly the fleet's workers, which are 80% of the limit, and critical traffic
// takes the other 20% (queueing briefly in the replicas) and any place sheddable
// traffic left.
func newFleetSpec(addr, key string, workers int) fleetSpec {
	all := fleetReplicas * workers
	limit := (all*100 + 100 - fleetReservePercent - 1) / (100 - fleetReservePercent) // ⌈all / 0.8⌉
	return fleetSpec{addr: addr, key: key, limit: limit, reserve: limit - all}
}

// fleetLease is one lease a replica held: from RL.ACQUIRE's answer to RL.RELEASE's
// call, wall-clock ns (the replicas are processes of one machine), a sub-interval of
// the server's own, so the harness's count of leases held at once is at most the
// server's.
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

func (l *fleetLeases) add(h fleetLeaseHeld, releaseErr error) {
	l.mu.Lock()
	l.all = append(l.all, h)
	if releaseErr != nil {
		l.releaseErrs++
	}
	l.mu.Unlock()
}

func (l *fleetLeases) report() fleetReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fleetReport{slices.Clone(l.all), int(l.max.Load()), l.releaseErrs}
}

// fleetHandler is the replica of confFleet: each request takes a lease of the fleet
// limit before work, and releases it after. A sheddable request asks with RESERVE and
// is refused at once; a critical one asks without, and while the fleet is full asks
// again every fleetPoll (jittered) up to a.queue, then is refused.
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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The lease outlives the client's request: the work goes on when the client
		// has gone, and its place must stay taken until it ends.
		ctx := context.WithoutCancel(r.Context())
		sheddable := !isCritical(r)
		deadline := time.Now().Add(a.queue)
		for {
			id, err := acquire(ctx, sheddable)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			if id != "" {
				from := time.Now().UnixNano()
				work.ServeHTTP(w, r)
				to := time.Now().UnixNano()
				leases.add(fleetLeaseHeld{from, to, sheddable}, rdb.Do(ctx, "RL.RELEASE", f.key, id).Err())
				return
			}
			if sheddable || time.Now().After(deadline) {
				shed.WriteShed(w, time.Second)
				return
			}
			time.Sleep(time.Duration((0.5 + rand.Float64()) * float64(fleetPoll)))
		}
	}), nil
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
