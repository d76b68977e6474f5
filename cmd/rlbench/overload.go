package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlserver/rlserver/internal/launch"
)

// overloadLoads are the offered loads, as multiples of the application's capacity.
var overloadLoads = []float64{0.5, 1, 1.5, 2, 3}

// overloadConfs are the configurations, in the table's order.
var overloadConfs = []int{confNone, confStatic, confFailsafe, confShed, confFleet}

// The experiment's traffic: 20% critical, a health check every 100 ms, and a 1 s SLO
// (a request answered 200 later than that, or not at all, failed).
const (
	criticalShare  = 0.2
	healthInterval = 100 * time.Millisecond
	slo            = time.Second
)

// overloadCell is one configuration at one load.
type overloadCell struct {
	Conf        string
	Load        float64
	Critical    float64 // share of critical requests answered 200 within the SLO
	CriticalP50 float64 // ms, of the critical requests that succeeded
	CriticalP99 float64
	Sheddable   float64 // share of sheddable requests answered 200 within the SLO
	Goodput     float64 // successful requests per second over the capacity
	Health      float64 // share of health checks answered 200 within the SLO
	ServedUs    float64 // server-side µs of a served request (mean)
	RefusedUs   float64 // server-side µs of a refused request (mean); 0 if none
	Limit       int     // the learned limit at the cell's end (failsafe-go, shed), the fleet limit (fleet)
	Requests    int     // requests sent in the measured window

	// Configuration 5 only, over the whole cell (warmup included): the RESERVE of
	// sheddable calls, the most leases live at once by RL.ACQUIRE's answers, and the
	// most the replicas held at once, all and sheddable.
	FleetReserve  int `json:",omitempty"`
	FleetMax      int `json:",omitempty"`
	FleetHeld     int `json:",omitempty"`
	SheddableHeld int `json:",omitempty"`
}

// runOverloadBench runs the overload experiment (make bench-overload): each
// configuration at each load on a fresh application process, then the table, whether
// each configuration meets the targets at the highest load, and the headline last.
func runOverloadBench(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("rlbench overload", flag.ContinueOnError)
	workers := fs.Int("workers", 8, "the application's workers (K)")
	service := fs.Duration("service", 10*time.Millisecond, "the time a request holds a worker (S)")
	warmup := fs.Duration("warmup", time.Second, "load before measuring, per cell (the limiters learn)")
	measure := fs.Duration("time", 2*time.Second, "measured load time per cell")
	queue := fs.Duration("queue", 100*time.Millisecond, "the shedders' queue timeout")
	out := fs.String("out", "", "write overload.json into this `directory`")
	// Off by default: the application needs little CPU (its workers sleep), but on a
	// box shared with other jobs one core can be a small share of one, and pinned runs
	// there stalled whole cells (health checks failing in every configuration).
	pin := fs.Bool("pin", false, "pin the application to CPU 0 with taskset (when installed)")
	only := fs.String("only", "", "run only these configurations, e.g. shed,static (the headline needs all)")
	loadList := fs.String("loads", "", "offered loads instead of 0.5,1,1.5,2,3 (the targets compare the first and the last)")
	bin := fs.String("rlserver-bin", "", "fleet: the rlserver `binary` to run; empty: go build ./cmd/rlserver")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *workers < 1 || *service <= 0 || *warmup < 0 || *measure <= 0 || *queue <= 0 || fs.NArg() != 0 {
		return fmt.Errorf("overload: want -workers ≥ 1, -service, -time and -queue > 0, -warmup ≥ 0, no arguments")
	}
	loads := overloadLoads
	if *loadList != "" {
		loads = nil
		for _, f := range strings.Split(*loadList, ",") {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || v <= 0 {
				return fmt.Errorf("overload: -loads %q: want positive numbers", *loadList)
			}
			loads = append(loads, v)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	capacity := float64(*workers) / service.Seconds()
	fmt.Fprintf(w, "== overload: an app of %d workers × %v (%.0f req/s), %.0f%% critical, a health check every %v, SLO %v; pinned %v ==\n",
		*workers, *service, capacity, criticalShare*100, healthInterval, slo, *pin)
	var confs []int
	for _, conf := range overloadConfs {
		if *only == "" || slices.Contains(strings.Split(*only, ","), overloadConfNames[conf]) {
			confs = append(confs, conf)
		}
	}
	var fleetAddr string
	if slices.Contains(confs, confFleet) {
		dir, binary, err := rlserverIn(ctx, *bin, "overload")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		server, err := launch.RLServer(binary, dir, "-loglevel", "WARN")
		if err != nil {
			return err
		}
		defer server.Kill()
		fleetAddr = server.Addr
	}
	var res []overloadCell
	for _, conf := range confs {
		for i, load := range loads {
			a := overloadSpec{conf: conf, workers: *workers, service: *service, queue: *queue}
			if conf == confFleet {
				a.service *= fleetReplicas
				a.fleet = newFleetSpec(fleetAddr, fmt.Sprintf("fleet:%d", i), *workers)
			}
			c, err := runOverloadCell(ctx, self, *pin, a, load, capacity, *warmup, *measure)
			if err != nil {
				return fmt.Errorf("overload %s at %.1fx: %w", overloadConfNames[conf], load, err)
			}
			res = append(res, c)
		}
	}
	writeOverloadTable(w, res)
	broken := writeFleetChecks(w, res)
	if err := writeResult(*out, "overload", res); err != nil {
		return err
	}
	if err := writeCharts(*out, "overload", res); err != nil {
		return err
	}
	if *only == "" {
		fmt.Fprintln(w, overloadHeadline(res))
	}
	return broken
}

// overloadPinned is the command running name pinned to cpu when taskset is installed.
func overloadPinned(pin bool, cpu string, name string, args ...string) *exec.Cmd {
	if ts, err := exec.LookPath("taskset"); err == nil && pin {
		return exec.Command(ts, append([]string{"-c", cpu, name}, args...)...)
	}
	return exec.Command(name, args...)
}

// startOverloadApp starts the application a as a child and returns its address and its stop.
func startOverloadApp(self string, pin bool, a overloadSpec) (addr string, stop func(), err error) {
	cmd := overloadPinned(pin, "0", self)
	cmd.Env = append(os.Environ(), overloadAppEnv+"="+a.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("the app printed no address: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

// overloadSent is one request's outcome.
type overloadSent struct {
	class int8 // 0 critical, 1 sheddable, 2 health
	ok    bool // 200 within the SLO
	lat   time.Duration
}

// runOverloadCell offers load × capacity req/s of Poisson arrivals to a fresh application
// for warmup + measure, with health checks, and measures the requests sent during
// the measured part.
func runOverloadCell(ctx context.Context, self string, pin bool, a overloadSpec, load, capacity float64, warmup, measure time.Duration) (overloadCell, error) {
	replicas := 1
	if a.conf == confFleet {
		replicas = fleetReplicas
	}
	var bases []string
	for range replicas {
		addr, stop, err := startOverloadApp(self, pin, a)
		if err != nil {
			return overloadCell{}, err
		}
		defer stop()
		bases = append(bases, "http://"+addr)
	}
	// The clients are a load balancer's pool: at most overloadConns connections, opened
	// before the load starts. Dialing on demand let a stall of either process (the box
	// is shared) turn into hundreds of simultaneous dials, and the SYN retry after an
	// overflowed backlog (1 s) failed every request of the cell, health checks included.
	tr := &http.Transport{MaxConnsPerHost: overloadConns, MaxIdleConnsPerHost: overloadConns, DialContext: (&net.Dialer{}).DialContext}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	for _, base := range bases {
		if err := overloadPrewarm(hc, base); err != nil {
			return overloadCell{}, err
		}
	}

	var mu sync.Mutex
	var got []overloadSent
	var wg sync.WaitGroup
	fire := func(class int8, base string, measured bool) {
		defer wg.Done()
		path, prio := "/work", "sheddable"
		switch class {
		case 0:
			prio = "critical"
		case 2:
			path = "/healthz"
		}
		rctx, cancel := context.WithTimeout(ctx, slo)
		defer cancel()
		req, _ := http.NewRequestWithContext(rctx, "GET", base+path, nil)
		req.Header.Set("X-Priority", prio)
		start := time.Now()
		resp, err := hc.Do(req)
		lat := time.Since(start)
		ok := err == nil && resp.StatusCode == http.StatusOK && lat <= slo
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if measured {
			mu.Lock()
			got = append(got, overloadSent{class, ok, lat})
			mu.Unlock()
		}
	}

	rate := load * capacity
	start := time.Now()
	from, end := start.Add(warmup), start.Add(warmup+measure)
	reset := true
	next, health := start, start
	sent := 0 // round robin over the replicas, as a load balancer
	for now := start; now.Before(end); now = time.Now() {
		if reset && !now.Before(from) {
			reset = false
			if _, err := overloadFleetStats(hc, bases); err != nil { // zero the apps' costs
				return overloadCell{}, err
			}
		}
		for ; !next.After(now); next = next.Add(time.Duration(rand.ExpFloat64() / rate * float64(time.Second))) {
			class := int8(1)
			if rand.Float64() < criticalShare {
				class = 0
			}
			wg.Add(1)
			go fire(class, bases[sent%len(bases)], !next.Before(from))
			sent++
		}
		for ; !health.After(now); health = health.Add(healthInterval) {
			for _, base := range bases { // a load balancer checks every replica
				wg.Add(1)
				go fire(2, base, !health.Before(from))
			}
		}
		time.Sleep(min(time.Until(next), time.Until(health)))
	}
	costs, err := overloadFleetStats(hc, bases)
	if err != nil {
		return overloadCell{}, err
	}
	wg.Wait()
	c := summarizeOverload(a, load, capacity, measure, got, costs)
	if a.conf == confFleet {
		c.FleetReserve = a.fleet.reserve
		if c.FleetMax, c.FleetHeld, c.SheddableHeld, err = fleetHeld(hc, bases); err != nil {
			return overloadCell{}, err
		}
	}
	return c, nil
}

// overloadConns is the size of the clients' connection pool.
const overloadConns = 512

// overloadPrewarm opens the pool's connections, overloadConns health checks at once
// whose connections stay idle in the pool.
func overloadPrewarm(hc *http.Client, base string) error {
	errs := make(chan error, overloadConns)
	for range overloadConns {
		go func() {
			resp, err := hc.Get(base + "/healthz")
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	for range overloadConns {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// overloadFleetStats reads (and zeroes) the costs of the applications at bases, summed.
func overloadFleetStats(hc *http.Client, bases []string) (overloadCosts, error) {
	var sum overloadCosts
	for _, base := range bases {
		c, err := overloadAppStats(hc, base)
		if err != nil {
			return sum, err
		}
		sum.ServedNs, sum.Served, sum.RefusedNs, sum.Refused = sum.ServedNs+c.ServedNs, sum.Served+c.Served, sum.RefusedNs+c.RefusedNs, sum.Refused+c.Refused
		sum.Limit = c.Limit
	}
	return sum, nil
}

// fleetHeld is, over the replicas at bases, the most leases live by RL.ACQUIRE's
// answers, and the most the replicas held at once, all and sheddable.
func fleetHeld(hc *http.Client, bases []string) (live, all, sheddable int, err error) {
	var held []fleetLeaseHeld
	for _, base := range bases {
		resp, err := hc.Get(base + "/leases")
		if err != nil {
			return 0, 0, 0, err
		}
		var r fleetReport
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil {
			return 0, 0, 0, err
		}
		if r.ReleaseErrors > 0 {
			return 0, 0, 0, fmt.Errorf("%s: %d RL.RELEASE calls failed", base, r.ReleaseErrors)
		}
		held, live = append(held, r.Held...), max(live, r.MaxLive)
	}
	all, sheddable = fleetPeak(held)
	return live, all, sheddable, nil
}

// overloadAppStats reads (and zeroes) the application's costs.
func overloadAppStats(hc *http.Client, base string) (overloadCosts, error) {
	var c overloadCosts
	resp, err := hc.Get(base + "/stats")
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	return c, json.NewDecoder(resp.Body).Decode(&c)
}

// summarizeOverload makes the cell's figures from the requests sent in the measured window.
func summarizeOverload(a overloadSpec, load, capacity float64, measure time.Duration, got []overloadSent, c overloadCosts) overloadCell {
	var n, ok [3]int
	var crit []float64
	for _, s := range got {
		n[s.class]++
		if s.ok {
			ok[s.class]++
			if s.class == 0 {
				crit = append(crit, float64(s.lat)/1e6)
			}
		}
	}
	slices.Sort(crit)
	r := overloadCell{
		Conf: overloadConfNames[a.conf], Load: load,
		Critical: overloadShare(ok[0], n[0]), Sheddable: overloadShare(ok[1], n[1]), Health: overloadShare(ok[2], n[2]),
		CriticalP50: overloadQuantile(crit, 0.5), CriticalP99: overloadQuantile(crit, 0.99),
		Goodput:  float64(ok[0]+ok[1]) / measure.Seconds() / capacity,
		Limit:    c.Limit,
		Requests: n[0] + n[1],
	}
	if c.Served > 0 {
		r.ServedUs = float64(c.ServedNs) / float64(c.Served) / 1e3
	}
	if c.Refused > 0 {
		r.RefusedUs = float64(c.RefusedNs) / float64(c.Refused) / 1e3
	}
	return r
}

func overloadShare(ok, n int) float64 {
	if n == 0 {
		return 1
	}
	return float64(ok) / float64(n)
}

// overloadQuantile is the q quantile of sorted v (nearest rank); 0 for none.
func overloadQuantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return v[min(len(v)-1, int(q*float64(len(v))))]
}
