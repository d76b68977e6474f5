package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/launch"
)

// burstRate is the lesson-002 limit: 100 a second.
const burstRate = 100

// burstResult is burst.json: the lesson-002 figures on the real clock, rlserver (its
// own process, the Go client) beside golang.org/x/time/rate in this process.
type burstResult struct {
	Goroutines int        `json:"goroutines"`
	Rows       []burstRow `json:"rows"`
}

// burstRow is one figure on one side.
type burstRow struct {
	Figure    string  `json:"figure"`
	Side      string  `json:"side"`
	Lesson    int     `json:"lesson"`
	Admitted  int     `json:"admitted"`
	Most      int     `json:"most"` // what the bucket can admit between the first call and the last answer
	Decisions int     `json:"decisions"`
	Seconds   float64 `json:"seconds"`
	NsPerDec  float64 `json:"ns_per_decision"`
}

// burstFigure is one of the lesson's three: a bucket, and how it is called.
type burstFigure struct {
	name     string
	lesson   int
	capacity int
	calls    int           // a burst: this many calls at once
	load     time.Duration // else calls as fast as they go for this long
}

// runBurstBench prints the lesson-002 table (rlbench burst): a burst of 1000 calls at
// once on a bucket of 100 at 100/s, the same bucket called as fast as it goes for a
// second, and a bucket of 1 at 100/s for three seconds, each on rlserver and on
// x/time/rate.
func runBurstBench(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("rlbench burst", flag.ContinueOnError)
	bin := fs.String("rlserver-bin", "", "the rlserver `binary` to run; empty: go build ./cmd/rlserver")
	goroutines := fs.Int("goroutines", 16, "concurrent callers in the sustained figures")
	sustain := fs.Duration("sustain", time.Second, "the sustained figure's time (the lesson: 1s)")
	slow := fs.Duration("slow", 3*time.Second, "the burst-1 figure's time (the lesson: 3s)")
	out := fs.String("out", "", "write burst.json into this `directory`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *goroutines < 1 || *sustain <= 0 || *slow <= 0 || fs.NArg() != 0 {
		return errors.New("burst: want -goroutines, -sustain and -slow positive, no arguments")
	}
	dir, binary, err := rlserverIn(ctx, *bin, "burst")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	server, err := launch.RLServer(binary, dir, "-loglevel", "WARN")
	if err != nil {
		return err
	}
	defer server.Kill()
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr, MaxRetries: -1})
	defer rdb.Close()
	// A budget far above any loopback call: the burst queues 1000 calls at once, and a
	// call timing out would count as an error, not a decision.
	c, err := client.New(rdb, client.Options{Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	figures := []burstFigure{
		{name: "burst of 1000 at once", lesson: 100, capacity: burstRate, calls: 1000},
		{name: fmt.Sprintf("%v sustained", *sustain), lesson: 199, capacity: burstRate, load: *sustain},
		{name: fmt.Sprintf("%v at burst 1", *slow), lesson: 300, capacity: 1, load: *slow},
	}
	res := burstResult{Goroutines: *goroutines}
	for i, f := range figures {
		key := fmt.Sprintf("burst:%d:%d", time.Now().UnixNano(), i)
		limit := client.TokenRate(burstRate, time.Second, f.capacity)
		server := func() (bool, error) {
			r, err := c.Allow(ctx, key, limit)
			return r.Allowed, err
		}
		local := rate.NewLimiter(burstRate, f.capacity)
		inProcess := func() (bool, error) { return local.Allow(), nil }
		for _, side := range []struct {
			name  string
			allow func() (bool, error)
		}{{"rlserver", server}, {"x/time/rate", inProcess}} {
			row, err := runBurstFigure(f, *goroutines, side.allow)
			if err != nil {
				return fmt.Errorf("burst %s, %s: %w", f.name, side.name, err)
			}
			row.Side = side.name
			res.Rows = append(res.Rows, row)
		}
	}
	writeBurstTable(w, res)
	return writeResult(*out, "burst", res)
}

// runBurstFigure calls allow as f says: f.calls at once, or from goroutines for f.load.
func runBurstFigure(f burstFigure, goroutines int, allow func() (bool, error)) (burstRow, error) {
	var admitted, decisions atomic.Int64
	errs := make(chan error, max(f.calls, goroutines))
	var wg sync.WaitGroup
	call := func() bool {
		ok, err := allow()
		if err != nil {
			errs <- err
			return false
		}
		decisions.Add(1)
		if ok {
			admitted.Add(1)
		}
		return true
	}
	start := time.Now()
	if f.calls > 0 {
		for range f.calls {
			wg.Go(func() { call() })
		}
	} else {
		end := start.Add(f.load)
		for range goroutines {
			wg.Go(func() {
				for time.Now().Before(end) && call() {
				}
			})
		}
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return burstRow{}, err
	}
	n := int(decisions.Load())
	return burstRow{Figure: f.name, Lesson: f.lesson, Admitted: int(admitted.Load()),
		Most:      f.capacity + int(took.Seconds()*burstRate),
		Decisions: n, Seconds: took.Seconds(), NsPerDec: float64(took.Nanoseconds()) / float64(n)}, nil
}

// writeBurstTable prints one row per figure and side.
func writeBurstTable(w io.Writer, r burstResult) {
	fmt.Fprintf(w, "== burst: the lesson-002 figures on the real clock, a token bucket at %d/s; rlserver (its own process, the Go client, %d callers) beside x/time/rate (in process, %d callers) ==\n",
		burstRate, r.Goroutines, r.Goroutines)
	t := newTable("figure", "side", "lesson", "admitted", "most", "decisions", "seconds", "ns/decision")
	for _, row := range r.Rows {
		t.row(row.Figure, row.Side, strconv.Itoa(row.Lesson), strconv.Itoa(row.Admitted), strconv.Itoa(row.Most),
			strconv.Itoa(row.Decisions), strconv.FormatFloat(row.Seconds, 'f', 3, 64), strconv.FormatFloat(row.NsPerDec, 'f', 0, 64))
	}
	t.write(w)
}
