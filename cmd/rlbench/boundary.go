package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/lab"
)

// boundaryKinds are the algorithms the boundary experiment compares: the lesson's
// four and two more; CL.THROTTLE is GCRA with a max_burst and would repeat it.
var boundaryKinds = []algo.Kind{algo.KindFixed, algo.KindSlide, algo.KindLog, algo.KindToken, algo.KindGCRA, algo.KindLeaky}

// boundaryLesson is the lesson's figure per algorithm: most admitted in any 1-s window.
var boundaryLesson = map[algo.Kind]int{algo.KindFixed: 200, algo.KindSlide: 105, algo.KindLog: 100, algo.KindToken: 119}

// boundaryResult is boundary.json.
type boundaryResult struct {
	Limit    int                   `json:"limit"`
	WindowMs int                   `json:"window_ms"`
	Rows     []boundaryRow         `json:"rows"`
	Series   map[string][]admitted `json:"series"` // "side algorithm": admissions over time, for the chart
}

// boundaryRow is one algorithm's most admitted in any 1-s window, per side (-1: side absent).
type boundaryRow struct {
	Algorithm string `json:"algorithm"`
	RedisLua  int    `json:"redis_lua"`
	RLServer  int    `json:"rlserver"`
	Lesson    int    `json:"lesson"` // -1: the lesson has no figure
}

// admitted is how many calls of one burst were admitted, at ms from the boundary.
type admitted struct {
	AtMs  float64 `json:"at_ms"`
	Count int     `json:"count"`
}

// runBoundary is the lesson's boundary test: limit 100 per 1,000 ms, 100 calls
// 150 ms before a boundary of the 1-s grid fixed windows align to and 100 calls
// 50 ms after, all sides at the same moment. It reports the most admitted in any
// sliding 1-s window: the fixed window lets 200 through, the log exactly 100.
func runBoundary(ctx context.Context, _ config, e *env, w io.Writer) (any, error) {
	const limit, windowMs, burst = 100, 1000, 100
	now := time.Now()
	boundary := now.Truncate(time.Second).Add(time.Second)
	if boundary.Sub(now) < 300*time.Millisecond {
		boundary = boundary.Add(time.Second)
	}
	tag := fmt.Sprintf("boundary:%d:", now.UnixNano()) // fresh keys on a reused server
	times := make([]map[algo.Kind][]time.Time, len(e.targets))
	for i := range times {
		times[i] = map[algo.Kind][]time.Time{}
	}
	for _, at := range []time.Time{boundary.Add(-150 * time.Millisecond), boundary.Add(50 * time.Millisecond)} {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Until(at)):
		}
		var wg sync.WaitGroup
		errs := make([]error, len(e.targets))
		for i, tg := range e.targets {
			wg.Go(func() {
				pipe := tg.client.Pipeline()
				cmds := map[algo.Kind][]*redis.Cmd{}
				for _, k := range boundaryKinds {
					for range burst {
						cmds[k] = append(cmds[k], tg.call(ctx, pipe, tag+k.Command(), lab.Request(k, limit, windowMs)))
					}
				}
				sent := time.Now()
				if _, errs[i] = pipe.Exec(ctx); errs[i] != nil {
					return
				}
				for k, cs := range cmds {
					for _, c := range cs {
						ok, err := allowed(k, c)
						if err != nil {
							errs[i] = err
							return
						}
						if ok {
							times[i][k] = append(times[i][k], sent)
						}
					}
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.targets[i].name, err)
			}
		}
	}

	res := boundaryResult{Limit: limit, WindowMs: windowMs, Series: map[string][]admitted{}}
	for _, k := range boundaryKinds {
		row := boundaryRow{Algorithm: k.Command(), RedisLua: -1, RLServer: -1, Lesson: -1}
		if n, ok := boundaryLesson[k]; ok {
			row.Lesson = n
		}
		for i, tg := range e.targets {
			n := lab.MaxInWindow(times[i][k], time.Second)
			if tg.script {
				row.RedisLua = n
			} else {
				row.RLServer = n
			}
			res.Series[tg.name+" "+k.Command()] = series(times[i][k], boundary)
		}
		res.Rows = append(res.Rows, row)
	}
	fmt.Fprintf(w, "most admitted in any 1-s window, limit %d per %d ms, %d calls 150 ms before a window boundary and %d 50 ms after:\n",
		limit, windowMs, burst, burst)
	t := newTable("algorithm", "redis+lua", "rlserver", "lesson")
	for _, r := range res.Rows {
		t.row(r.Algorithm, count(r.RedisLua), count(r.RLServer), count(r.Lesson))
	}
	t.write(w)
	return res, nil
}

// series groups admission times (one per admitted call, the burst's send time)
// into counts per moment, in ms from the boundary.
func series(times []time.Time, boundary time.Time) []admitted {
	var out []admitted
	for _, t := range slices.SortedFunc(slices.Values(times), time.Time.Compare) {
		at := float64(t.Sub(boundary).Microseconds()) / 1000
		if n := len(out); n > 0 && out[n-1].AtMs == at {
			out[n-1].Count++
			continue
		}
		out = append(out, admitted{at, 1})
	}
	return out
}
