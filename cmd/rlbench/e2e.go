package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/middleware"
)

// replicaEnv, when set to "<side> <limiter address> <limit> <key prefix>", makes
// the process an app replica for e2e instead of rlbench: it serves an endpoint
// behind the middleware on a loopback port, prints the port's address, and exits
// when its stdin closes (its parent gone).
const replicaEnv = "RLBENCH_REPLICA"

// e2eReplicas and e2eConns are the lesson's setup: three replicas, 20 connections.
const e2eReplicas, e2eConns = 3, 20

// e2eResult is e2e.json.
type e2eResult struct {
	Limit    int      `json:"limit_per_s"`
	Replicas int      `json:"replicas"`
	Conns    int      `json:"connections"`
	Rows     []e2eRow `json:"rows"`
}

// e2eRow is one side's run: allowed against expected (a token bucket of limit,
// full at the start: limit + limit per second between the first and last answer).
type e2eRow struct {
	Side     string  `json:"side"`
	Seconds  float64 `json:"seconds"`
	Allowed  int     `json:"allowed"`
	Expected float64 `json:"expected"`
	Limited  int     `json:"limited_429"`
	// ServedUs and RefusedUs are the mean µs of a 200 and of a 429, as the clients
	// timed them: the cost of a refusal against a served request.
	ServedUs  float64 `json:"served_us"`
	RefusedUs float64 `json:"refused_us"`
	ErrorPct  float64 `json:"error_pct"`
	LessonRow string  `json:"lesson"`
}

// runE2E starts three app replicas (separate processes, each with the middleware)
// sharing one limiter, global limit -e2e-limit/s, and sends 20 connections'
// requests round-robin across them for -e2e-time, on each side in turn.
func runE2E(ctx context.Context, cfg config, e *env, w io.Writer) (any, error) {
	res := e2eResult{Limit: cfg.e2eLimit, Replicas: e2eReplicas, Conns: e2eConns}
	for _, tg := range e.targets {
		row, err := e2eSide(ctx, cfg, tg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tg.name, err)
		}
		res.Rows = append(res.Rows, row)
	}
	fmt.Fprintf(w, "%d replicas sharing one limiter, %d/s global, %d connections round-robin for %v:\n",
		e2eReplicas, cfg.e2eLimit, e2eConns, cfg.e2eTime)
	t := newTable("side", "seconds", "allowed", "expected", "error %", "429s", "429s per 200", "200 µs", "429 µs", "lesson")
	for _, r := range res.Rows {
		t.row(r.Side, strconv.FormatFloat(r.Seconds, 'f', 3, 64), strconv.Itoa(r.Allowed), strconv.FormatFloat(r.Expected, 'f', 0, 64),
			strconv.FormatFloat(r.ErrorPct, 'f', 3, 64), strconv.Itoa(r.Limited), strconv.FormatFloat(float64(r.Limited)/float64(max(r.Allowed, 1)), 'f', 1, 64),
			strconv.FormatFloat(r.ServedUs, 'f', 0, 64), strconv.FormatFloat(r.RefusedUs, 'f', 0, 64), r.LessonRow)
	}
	t.write(w)
	return res, nil
}

// e2eSide runs the replicas on tg and the load against them.
func e2eSide(ctx context.Context, cfg config, tg target) (e2eRow, error) {
	row := e2eRow{Side: tg.name, LessonRow: "-"}
	if tg.script {
		row.LessonRow = "5,493 of 5,500, 185,660 x429"
	}
	exe, err := os.Executable()
	if err != nil {
		return row, err
	}
	prefix := fmt.Sprintf("e2e:%d:", time.Now().UnixNano())
	var urls []string
	for range e2eReplicas {
		cmd := exec.CommandContext(ctx, exe)
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d %s", replicaEnv, tg.name, tg.addr, cfg.e2eLimit, prefix))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return row, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return row, err
		}
		if err := cmd.Start(); err != nil {
			return row, err
		}
		defer func() { stdin.Close(); cmd.Wait() }()
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			return row, fmt.Errorf("replica did not start: %w", err)
		}
		urls = append(urls, "http://"+strings.TrimSpace(line)+"/")
	}

	// The bucket refills from the first decision to the last: the span between the
	// first and the last answer, each a short way back from its decision. Send
	// times would not do: the first requests wait for connections to be dialled
	// (tens of ms under -race, a dozen tokens at 200/s) before any decision.
	var next, allowed, limited, firstAnswer, lastAnswer, allowedNs, limitedNs atomic.Int64
	firstAnswer.Store(math.MaxInt64)
	errs := make([]error, e2eConns)
	deadline := time.Now().Add(cfg.e2eTime)
	began := time.Now()
	var wg sync.WaitGroup
	for c := range e2eConns {
		wg.Go(func() {
			tr := &http.Transport{MaxIdleConnsPerHost: 1}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
			for n := 0; n < cfg.e2eMax/e2eConns && time.Now().Before(deadline); n++ {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, urls[next.Add(1)%e2eReplicas], nil)
				if err != nil {
					errs[c] = err
					return
				}
				sent := time.Now()
				resp, err := hc.Do(req)
				if err != nil {
					errs[c] = err
					return
				}
				answered := time.Since(began).Nanoseconds()
				atomicMin(&firstAnswer, answered)
				atomicMax(&lastAnswer, answered)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				took := int64(time.Since(sent))
				switch resp.StatusCode {
				case http.StatusOK:
					allowed.Add(1)
					allowedNs.Add(took)
				case http.StatusTooManyRequests:
					limited.Add(1)
					limitedNs.Add(took)
				default:
					errs[c] = errors.New("replica answered " + resp.Status)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return row, err
	}
	row.Seconds = time.Duration(lastAnswer.Load() - firstAnswer.Load()).Seconds()
	row.Allowed, row.Limited = int(allowed.Load()), int(limited.Load())
	row.ServedUs = float64(allowedNs.Load()) / float64(max(row.Allowed, 1)) / 1e3
	row.RefusedUs = float64(limitedNs.Load()) / float64(max(row.Limited, 1)) / 1e3
	row.Expected = float64(cfg.e2eLimit) * (1 + row.Seconds)
	row.ErrorPct = 100 * math.Abs(float64(row.Allowed)-row.Expected) / row.Expected
	return row, nil
}

// atomicMin lowers a to v if v is smaller.
func atomicMin(a *atomic.Int64, v int64) {
	for old := a.Load(); v < old && !a.CompareAndSwap(old, v); old = a.Load() {
	}
}

// atomicMax raises a to v if v is larger.
func atomicMax(a *atomic.Int64, v int64) {
	for old := a.Load(); v > old && !a.CompareAndSwap(old, v); old = a.Load() {
	}
}

// runReplica is an app replica (see replicaEnv); spec is the variable's value.
func runReplica(spec string) error {
	var side, addr, prefix string
	var limit int
	if _, err := fmt.Sscan(spec, &side, &addr, &limit, &prefix); err != nil {
		return fmt.Errorf("%s=%q: %w", replicaEnv, spec, err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	// A budget far above any loopback call, even under -race: a call timing out would
	// answer 429 (fail closed) and undercount what the limiter allows.
	const budget = time.Second
	opts := client.Options{Timeout: budget}
	var c *client.Client
	var err error
	if side == "redis+lua" {
		c, err = client.NewLua(rdb, client.LuaOptions{Options: opts})
	} else {
		c, err = client.New(rdb, opts)
	}
	if err != nil {
		return err
	}
	lim, err := middleware.New(middleware.Config{
		Client:  c,
		Timeout: budget,
		// One key for every request on every replica: the global limit.
		Dimensions: []middleware.Dimension{{Name: "global", By: middleware.ByRoute, Limit: client.Token(limit, time.Second)}},
		Route:      func(*http.Request) string { return "all" },
		Prefix:     prefix,
		FailClosed: true, // a failing limiter must not pass requests the count then misses
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	fmt.Println(ln.Addr())
	io.Copy(io.Discard, os.Stdin) // until the parent closes it or dies
	return srv.Close()
}
