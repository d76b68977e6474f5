package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/lab"
)

// benchKeys is how many users a bench spreads its calls over, round robin.
const benchKeys = 10_000

// benchResult is bench.json.
type benchResult struct {
	Requests int        `json:"max_requests_per_cell"`
	CellTime string     `json:"max_time_per_cell"`
	Rows     []benchRow `json:"rows"`
}

// benchRow is one cell: a side, an algorithm (or GET, Redis's empty baseline),
// a pipeline depth and a client count.
type benchRow struct {
	Side      string     `json:"side"`
	Command   string     `json:"command"`
	Depth     int        `json:"depth"`
	Clients   int        `json:"clients"`
	Requests  int        `json:"requests"`
	PerSecond float64    `json:"per_second"`
	P50Ms     float64    `json:"p50_ms"`
	P95Ms     float64    `json:"p95_ms"`
	P99Ms     float64    `json:"p99_ms"`
	Lesson    string     `json:"lesson"`
	CDF       []cdfPoint `json:"cdf"`
}

// runBench measures throughput and latency per algorithm at each pipeline depth
// and client count, on each side in turn, in the same run. A command's latency is
// its pipeline's round trip. Each cell stops at -requests commands or -cell-time.
func runBench(ctx context.Context, cfg config, e *env, w io.Writer) (any, error) {
	res := benchResult{Requests: cfg.requests, CellTime: cfg.cellTime.String()}
	type cell struct {
		tg   target
		kind algo.Kind // 0: GET, the empty baseline
	}
	var cells []cell
	for _, tg := range e.targets {
		if tg.script {
			cells = append(cells, cell{tg, 0})
		}
		for _, k := range kinds {
			cells = append(cells, cell{tg, k})
		}
	}
	bar := newProgress(len(cells)*len(cfg.depths)*len(cfg.clientSets), "bench")
	defer bar.done()
	for _, c := range cells {
		for _, depth := range cfg.depths {
			for _, clients := range cfg.clientSets {
				row, err := benchCell(ctx, cfg, c.tg, c.kind, depth, clients)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", c.tg.name, row.Command, err)
				}
				res.Rows = append(res.Rows, row)
				bar.add(1)
			}
		}
	}
	fmt.Fprintf(w, "throughput and latency per command (a pipeline's round trip), at most %d commands or %v per cell:\n",
		cfg.requests, cfg.cellTime)
	t := newTable("side", "command", "depth", "clients", "ops/s", "p50 ms", "p95 ms", "p99 ms", "lesson p50")
	for _, r := range res.Rows {
		t.row(r.Side, r.Command, strconv.Itoa(r.Depth), strconv.Itoa(r.Clients), strconv.FormatFloat(r.PerSecond, 'f', 0, 64),
			ms(r.P50Ms), ms(r.P95Ms), ms(r.P99Ms), r.Lesson)
	}
	t.write(w)
	return res, nil
}

func ms(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// benchCell runs one cell: clients goroutines, each sending pipelines of depth
// calls until the cell's count or time is spent.
func benchCell(ctx context.Context, cfg config, tg target, kind algo.Kind, depth, clients int) (benchRow, error) {
	row := benchRow{Side: tg.name, Command: "GET", Depth: depth, Clients: clients, Lesson: "-"}
	if kind != 0 {
		row.Command = kind.Command()
	}
	if depth == 1 && clients == 1 {
		row.Lesson = "0.08"
		if kind == 0 {
			row.Lesson = "0.073"
		}
	}
	// A limit no cell reaches per key (RL.LOG's largest by default): the calls are
	// allowed and write, the costly path.
	req := lab.Request(max(kind, algo.KindFixed), 100_000, 60_000)
	prefix := fmt.Sprintf("bench:%d:", time.Now().UnixNano())
	deadline := time.Now().Add(cfg.cellTime)
	perClient := max(1, cfg.requests/clients)
	hists := make([]histogram, clients)
	errs := make([]error, clients)
	began := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			pipe := tg.client.Pipeline()
			for sent := 0; sent < perClient && time.Now().Before(deadline); {
				n := min(depth, perClient-sent)
				for i := range n {
					key := prefix + strconv.Itoa((c*perClient+sent+i)%benchKeys)
					if kind == 0 {
						pipe.Get(ctx, key)
					} else {
						tg.call(ctx, pipe, key, req)
					}
				}
				start := time.Now()
				if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
					errs[c] = err
					return
				}
				hists[c].record(time.Since(start), n)
				sent += n
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	var h histogram
	for c := range clients {
		if errs[c] != nil {
			return row, errs[c]
		}
		h.merge(&hists[c])
	}
	row.Requests = int(h.total)
	row.PerSecond = float64(h.total) / elapsed.Seconds()
	row.P50Ms, row.P95Ms, row.P99Ms = h.quantile(0.50), h.quantile(0.95), h.quantile(0.99)
	row.CDF = h.cdf()
	return row, nil
}
