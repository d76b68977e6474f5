package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/middleware"
)

// clientMode is one way the Go client sends its calls.
type clientMode struct {
	name  string
	batch client.Batch
	pool  int  // go-redis's PoolSize; 0: its default, 10 per GOMAXPROCS
	bare  bool // no client: the HTTP handler without the middleware, its ceiling
}

// clientRow is one mode's figures over all rounds.
type clientRow struct {
	mode   string
	calls  int
	perSec float64
	p50    float64 // ms
	p99    float64 // ms
	errors int
}

// runClientBench is `rlbench client`: the Go client's auto-batching against
// go-redis's own pool (Batch.Off) in the same run, on an rlserver process it starts on
// loopback. Each round loads every mode in turn, in alternating order (a shared
// machine drifts), with -goroutines goroutines calling Allow on random keys; then the
// same through the HTTP middleware, with -goroutines concurrent HTTP clients. The last
// line is the headline:
//
//	bench-client: <batched> vs <unbatched> decisions/s = <ratio>x; p99 <batched> vs <unbatched> ms
func runClientBench(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("rlbench client", flag.ContinueOnError)
	bin := fs.String("rlserver-bin", "", "rlserver `binary`; empty: go build ./cmd/rlserver")
	goroutines := fs.Int("goroutines", 256, "concurrent callers (HTTP clients)")
	load := fs.Duration("time", 3*time.Second, "load time per mode and round")
	rounds := fs.Int("rounds", 2, "rounds, each loading every mode")
	keys := fs.Int("keys", 1_000_000, "keys drawn at random from this many")
	lanes := fs.String("lanes", "", "also measure batching with these Batch.Lanes, e.g. 1,2,8")
	noHTTP := fs.Bool("no-http", false, "skip the HTTP middleware's table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *goroutines < 1 || *load <= 0 || *rounds < 1 || *keys < 1 || fs.NArg() != 0 {
		return errors.New("client: -goroutines, -time, -rounds and -keys must be positive, and no argument follows the flags")
	}
	modes := []clientMode{{name: "batched"}, {name: "unbatched", batch: client.Batch{Off: true}},
		{name: fmt.Sprintf("unbatched, PoolSize %d", *goroutines), batch: client.Batch{Off: true}, pool: *goroutines}}
	if *lanes != "" {
		ns, err := intList(*lanes)
		if err != nil {
			return fmt.Errorf("-lanes: %w", err)
		}
		for _, n := range ns {
			modes = append(modes, clientMode{name: fmt.Sprintf("batched, %d lanes", n), batch: client.Batch{Lanes: n}})
		}
	}
	dir, binary, err := rlserverIn(ctx, *bin, "client")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	server, err := launch.RLServer(binary, dir, "-loglevel", "WARN")
	if err != nil {
		return err
	}
	defer server.Kill()

	fmt.Fprintf(w, "== client ==\n%d goroutines calling Allow (token bucket, 100/s) on random keys of %d, rlserver on loopback "+
		"(its own process), GOMAXPROCS %d; %d rounds of %v per mode, in alternating order:\n",
		*goroutines, *keys, runtime.GOMAXPROCS(0), *rounds, *load)
	direct, err := clientRounds(ctx, server.Addr, modes, *rounds, func(c *client.Client) (histogram, int, time.Duration, error) {
		h, errs, took := allowLoad(ctx, c, *goroutines, *load, *keys)
		return h, errs, took, nil
	})
	if err != nil {
		return err
	}
	writeClientTable(w, "decisions/s", direct)
	if !*noHTTP {
		fmt.Fprintf(w, "\nThe HTTP middleware (one ByUser dimension, a random user per request), %d concurrent HTTP clients "+
			"on loopback, same rounds:\n", *goroutines)
		httpModes := append(modes[:2:2], clientMode{name: "no limiter", bare: true})
		web, err := clientRounds(ctx, server.Addr, httpModes, *rounds, func(c *client.Client) (histogram, int, time.Duration, error) {
			return httpLoad(ctx, c, *goroutines, *load, *keys)
		})
		if err != nil {
			return err
		}
		writeClientTable(w, "requests/s", web)
		fmt.Fprintf(w, "bench-client: HTTP %.0f vs %.0f requests/s = %.2fx; p99 %.2f vs %.2f ms\n",
			web[0].perSec, web[1].perSec, web[0].perSec/web[1].perSec, web[0].p99, web[1].p99)
	}
	fmt.Fprintf(w, "bench-client: %.0f vs %.0f decisions/s = %.2fx; p99 %.2f vs %.2f ms\n",
		direct[0].perSec, direct[1].perSec, direct[0].perSec/direct[1].perSec, direct[0].p99, direct[1].p99)
	return nil
}

// clientRounds runs load once per mode and round, each mode on a client of its own
// (nil for a bare mode), and sums each mode's figures.
func clientRounds(ctx context.Context, addr string, modes []clientMode, rounds int,
	load func(*client.Client) (histogram, int, time.Duration, error)) ([]clientRow, error) {
	hists := make([]histogram, len(modes))
	errs := make([]int, len(modes))
	took := make([]time.Duration, len(modes))
	for r := range rounds {
		for i := range modes {
			if r%2 == 1 {
				i = len(modes) - 1 - i
			}
			if modes[i].bare {
				h, e, d, err := load(nil)
				if err != nil {
					return nil, err
				}
				hists[i].merge(&h)
				errs[i] += e
				took[i] += d
				continue
			}
			rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: modes[i].pool})
			// A budget of a second: the table compares throughput and latency, where the
			// default 50 ms would turn the slowest calls into errors.
			c, err := client.New(rdb, client.Options{Timeout: time.Second, Batch: modes[i].batch})
			if err != nil {
				rdb.Close()
				return nil, err
			}
			h, e, d, err := load(c)
			rdb.Close()
			if err == nil {
				err = ctx.Err()
			}
			if err != nil {
				return nil, err
			}
			hists[i].merge(&h)
			errs[i] += e
			took[i] += d
		}
	}
	rows := make([]clientRow, len(modes))
	for i, m := range modes {
		n := int(hists[i].total)
		rows[i] = clientRow{m.name, n, float64(n) / took[i].Seconds(), hists[i].quantile(0.5), hists[i].quantile(0.99), errs[i]}
	}
	return rows, nil
}

// writeClientTable prints rows, rate naming their throughput column.
func writeClientTable(w io.Writer, rate string, rows []clientRow) {
	t := newTable("mode", "calls", rate, "p50 ms", "p99 ms", "errors")
	for _, r := range rows {
		t.row(r.mode, strconv.Itoa(r.calls), fmt.Sprintf("%.0f", r.perSec), ms(r.p50), ms(r.p99), strconv.Itoa(r.errors))
	}
	t.write(w)
}

// allowLoad has n goroutines call Allow on random keys for d; it returns the
// latencies of the decisions, the count of errors, and the time taken.
func allowLoad(ctx context.Context, c *client.Client, n int, d time.Duration, keys int) (histogram, int, time.Duration) {
	limit := client.Token(100, time.Second)
	prefix := fmt.Sprintf("bench:%d:", time.Now().UnixNano())
	return spread(n, d, func(rng *rand.Rand) error {
		_, err := c.Allow(ctx, prefix+strconv.Itoa(rng.IntN(keys)), limit)
		return err
	})
}

// httpLoad serves a handler behind the middleware on loopback (without, if c is nil)
// and has n HTTP clients GET it for d, each request as a random user; an answer but
// 200 is an error.
func httpLoad(ctx context.Context, c *client.Client, n int, d time.Duration, keys int) (histogram, int, time.Duration, error) {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	if c != nil {
		lim, err := middleware.New(middleware.Config{
			Client:     c,
			User:       func(r *http.Request) string { return r.Header.Get("X-User-ID") },
			Dimensions: []middleware.Dimension{{Name: "user", By: middleware.ByUser, Limit: client.Token(1_000_000_000, time.Second)}},
			Prefix:     fmt.Sprintf("bench:%d:", time.Now().UnixNano()),
			FailClosed: true, // a failing limiter answers 429: counted as an error
			Timeout:    time.Second,
			Logger:     slog.New(slog.DiscardHandler), // the errors column counts the failures
		})
		if err != nil {
			return histogram{}, 0, 0, err
		}
		h = lim.Handler(h)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	hist, errs, took := spread(n, d, func(rng *rand.Rand) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return err
		}
		req.Header.Set("X-User-ID", "u"+strconv.Itoa(rng.IntN(keys)))
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
	return hist, errs, took, nil
}

// spread runs op in n goroutines, each with a random source of its own, until d has
// passed; it returns the latencies of the ops that succeeded, the count of those that
// failed, and the time taken.
func spread(n int, d time.Duration, op func(*rand.Rand) error) (histogram, int, time.Duration) {
	hists := make([]histogram, n)
	errs := make([]int, n)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for g := range n {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(g)))
			for time.Now().Before(deadline) {
				began := time.Now()
				if err := op(rng); err != nil {
					errs[g]++
					continue
				}
				hists[g].record(time.Since(began), 1)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	var h histogram
	total := 0
	for g := range n {
		h.merge(&hists[g])
		total += errs[g]
	}
	return h, total, took
}
