package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/priority"

	"github.com/rlserver/rlserver/shed"
)

// overloadAppEnv, set, makes rlbench the overload experiment's application instead:
// the value is the overloadSpec, and the process serves on a loopback port it prints, until
// its stdin closes. The experiment runs it as a child so that it can pin it to a CPU
// apart from the load (taskset) and start each cell from a fresh process.
const overloadAppEnv = "RLBENCH_OVERLOAD_APP"

// The overload experiment's configurations.
const (
	confNone     = 1 // no shedding: every request waits for a worker
	confStatic   = 2 // a static concurrency limit of K: uniform shedding
	confFailsafe = 3 // failsafe-go's PriorityLimiter, critical High, sheddable Low
	confShed     = 4 // package shed, critical queueing, sheddable never
	confFleet    = 5 // three replicas sharing an RL.ACQUIRE limit, 20% reserved for critical
)

// overloadConfNames are the configurations' names in the table.
var overloadConfNames = map[int]string{confNone: "none", confStatic: "static", confFailsafe: "failsafe-go", confShed: "shed", confFleet: "fleet"}

// overloadSpec is one application: its configuration and its capacity, and for
// confFleet the shared limit it takes its leases from.
type overloadSpec struct {
	conf    int
	workers int           // K
	service time.Duration // S: each request holds a worker this long
	queue   time.Duration // the shedders' queue timeout
	fleet   fleetSpec     // confFleet only
}

func (a overloadSpec) String() string {
	return fmt.Sprintf("%d,%d,%s,%s,%s,%s,%d,%d", a.conf, a.workers, a.service, a.queue,
		cmp.Or(a.fleet.addr, "-"), cmp.Or(a.fleet.key, "-"), a.fleet.limit, a.fleet.reserve)
}

func parseOverloadSpec(s string) (a overloadSpec, err error) {
	f := strings.Split(s, ",")
	if len(f) != 8 {
		return a, fmt.Errorf("app spec %q: want conf,workers,service,queue,addr,key,limit,reserve", s)
	}
	a.fleet.addr, a.fleet.key = f[4], f[5]
	if a.fleet.limit, err = strconv.Atoi(f[6]); err != nil {
		return a, err
	}
	if a.fleet.reserve, err = strconv.Atoi(f[7]); err != nil {
		return a, err
	}
	if a.conf, err = strconv.Atoi(f[0]); err != nil {
		return a, err
	}
	if a.workers, err = strconv.Atoi(f[1]); err != nil {
		return a, err
	}
	if a.service, err = time.ParseDuration(f[2]); err != nil {
		return a, err
	}
	a.queue, err = time.ParseDuration(f[3])
	return a, err
}

// overloadCosts is what the application's requests cost it, server side: time from the
// request's arrival in the handler chain to its answer, served (200) and refused (503).
type overloadCosts struct {
	ServedNs, Served, RefusedNs, Refused int64
	Limit                                int // the shedder's learned limit (configurations 3 and 4)
}

// runOverloadApp is the child: it serves spec on a loopback port it prints on
// stdout, until stdin closes.
func runOverloadApp(spec string) error {
	a, err := parseOverloadSpec(spec)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var leases fleetLeases
	h, limit, err := overloadHandler(ctx, a, &leases)
	if err != nil {
		return err
	}
	var served, servedNs, refused, refusedNs atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {}) // bypasses every configuration
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(overloadCosts{servedNs.Swap(0), served.Swap(0), refusedNs.Swap(0), refused.Swap(0), limit()})
	})
	mux.HandleFunc("/leases", func(w http.ResponseWriter, r *http.Request) { json.NewEncoder(w).Encode(leases.report()) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &overloadStatusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		ns := int64(time.Since(start))
		if sw.code == http.StatusOK {
			served.Add(1)
			servedNs.Add(ns)
		} else {
			refused.Add(1)
			refusedNs.Add(ns)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	go func() {
		bufio.NewReader(os.Stdin).ReadString('\n') // the parent closes stdin to stop us
		os.Exit(0)
	}()
	return (&http.Server{Handler: mux}).Serve(ln)
}

// overloadStatusWriter remembers the status a handler wrote.
type overloadStatusWriter struct {
	http.ResponseWriter
	code int
}

func (s *overloadStatusWriter) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// isCritical is whether r is of the critical class.
func isCritical(r *http.Request) bool { return r.Header.Get("X-Priority") == "critical" }

// shedOptions gives package shed the experiment's two priorities: critical (0) and
// sheddable (1).
var shedOptions = shed.HandlerOptions{Priority: func(r *http.Request) shed.Priority {
	if isCritical(r) {
		return 0
	}
	return 1
}}

// overloadHandler is the application of a, and its learned limit (0 where none is).
// The work holds one of a.workers workers for a.service, and, as most applications,
// does not notice that its client has gone: a request queued past its client's
// deadline is still served, for nobody.
// confFleet's leases are recorded in leases.
func overloadHandler(ctx context.Context, a overloadSpec, leases *fleetLeases) (http.Handler, func() int, error) {
	workers := make(chan struct{}, a.workers)
	work := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		workers <- struct{}{}
		time.Sleep(a.service)
		<-workers
	})
	none := func() int { return 0 }
	switch a.conf {
	case confNone:
		return work, none, nil
	case confStatic:
		var n atomic.Int64
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer n.Add(-1)
			if n.Add(1) > int64(a.workers) {
				shed.WriteShed(w, time.Second)
				return
			}
			work.ServeHTTP(w, r)
		}), none, nil
	case confFailsafe:
		p := adaptivelimiter.NewPrioritizer()
		p.ScheduleCalibrations(ctx, 100*time.Millisecond)
		// The same learning pace as package shed's (100 ms windows of at least 10
		// requests) and the same queue timeout: failsafe-go's defaults (1 s to 30 s
		// windows of 50) would learn nothing within a cell.
		l := adaptivelimiter.NewBuilder[any]().WithLimits(1, 200, shed.DefaultInitialLimit).
			WithRecentWindow(100*time.Millisecond, time.Second, 10).WithMaxWaitTime(a.queue).BuildPrioritized(p)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			prio := priority.Low
			if isCritical(r) {
				prio = priority.High
			}
			permit, err := l.AcquirePermitWithMaxWait(priority.ContextWithPriority(r.Context(), prio), a.queue)
			if err != nil {
				shed.WriteShed(w, time.Second)
				return
			}
			defer permit.Record()
			work.ServeHTTP(w, r)
		}), l.Limit, nil
	case confShed:
		s, err := shed.New(shed.Config{Priorities: []string{"critical", "sheddable"}, MaxLimit: 200, QueueTimeout: a.queue})
		if err != nil {
			return nil, nil, err
		}
		return s.Handler(work, shedOptions), func() int { return s.Stats().Limit }, nil
	case confFleet:
		// The recipe of docs/overload.md: each replica's shedder first (a refusal
		// without a round trip), then the fleet's lease.
		s, err := shed.New(shed.Config{Priorities: []string{"critical", "sheddable"}, MaxLimit: 200, QueueTimeout: a.queue})
		if err != nil {
			return nil, nil, err
		}
		h, err := fleetHandler(a, work, leases)
		return s.Handler(h, shedOptions), func() int { return a.fleet.limit }, err
	}
	return nil, nil, fmt.Errorf("configuration %d: want 1 to 5", a.conf)
}
