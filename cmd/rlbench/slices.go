package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/launch"
)

// slicesLead is how long before their start the client processes are started: long
// enough for each to be up and connected on a busy machine.
const slicesLead = 700 * time.Millisecond

// slicesRun is one mode's run: what its processes measured together.
type slicesRun struct {
	mode       string
	out        slicesOut
	hist       histogram
	start, end time.Time
	commands   int64 // the server's RL.* commands during the run (INFO commandstats)
}

// perSec is the run's decisions per second.
func (r slicesRun) perSec() float64 { return float64(r.out.Decisions) / r.end.Sub(r.start).Seconds() }

// tripsPer is the run's network round trips per decision.
func (r slicesRun) tripsPer() float64 { return float64(r.out.Trips) / float64(max(r.out.Decisions, 1)) }

// windowed is a run's admissions against the limit over its whole windows.
type windowed struct {
	windows, admitted, most, over, unused int64
}

// runSlicesBench is `rlbench slices` (make bench-slices): one hot key, -children
// client processes (rlbench itself, re-run) of -goroutines goroutines each, on an
// rlserver process it starts, the server pinned to -server-cpu and the clients to
// -load-cpu. Each mode runs in turn on fresh processes and a fresh key: the batched
// client (a server command per call), the Slicer (in-process, from RL.SLICE's slices)
// and count-then-flush (flushCounter, written for the comparison). First a Fixed limit
// no load reaches, every goroutine calling as fast as it can for -time: decisions/s,
// round trips per decision (go-redis's commands and pipelines, counted in each
// process) and the server's commands per decision, and the in-process latency of a
// decision. Then a limit of -limit per -window, below the -rate offered, paced, for
// -windows whole windows, for the Slicer and count-then-flush: per window, what all
// processes admitted against the limit. The last line is the headline:
//
//	bench-slices: <r>x decisions/s of the batched client, <r>x fewer round trips, p99 <t> us, over-admitted <n> (count-then-flush <m>)
func runSlicesBench(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("rlbench slices", flag.ContinueOnError)
	bin := fs.String("rlserver-bin", "", "rlserver `binary`; empty: go build ./cmd/rlserver")
	children := fs.Int("children", 8, "client processes")
	goroutines := fs.Int("goroutines", 64, "goroutines per client process")
	load := fs.Duration("time", 3*time.Second, "first phase: load time per mode")
	window := fs.Duration("window", time.Second, "second phase: the Fixed window")
	windows := fs.Int("windows", 5, "second phase: whole windows per mode")
	rate := fs.Int("rate", 100_000, "second phase: calls offered per second, all processes together")
	limit := fs.Int("limit", 0, "second phase: the key's limit per window; 0: 90% of the calls offered in a window")
	flush := fs.Duration("flush", 100*time.Millisecond, "count-then-flush's flush interval")
	serverCPU := fs.Int("server-cpu", 0, "CPU the server is pinned to; -1: no pinning")
	loadCPU := fs.Int("load-cpu", 1, "CPU the client processes are pinned to; -1: no pinning")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *limit == 0 {
		*limit = int(0.9 * float64(*rate) * window.Seconds())
	}
	if *children < 1 || *goroutines < 1 || *load <= 0 || *window < time.Millisecond || *windows < 1 || *rate < 1 ||
		*limit < 1 || *flush <= 0 || fs.NArg() != 0 {
		return errors.New("slices: -children, -goroutines, -time, -window (≥ 1ms), -windows, -rate, -limit and -flush must be positive, and no argument follows the flags")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, binary, err := rlserverIn(ctx, *bin, "slices")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := pinApart(*serverCPU, *loadCPU); err != nil { // the children inherit the load's CPU
		return err
	}
	server, err := launch.RLServer(binary, dir, "-loglevel", "WARN")
	if err != nil {
		return err
	}
	defer server.Kill()
	if *serverCPU >= 0 {
		if err := pin(server.Pid(), *serverCPU); err != nil {
			return err
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr})
	defer rdb.Close()

	base := slicesSpec{Addr: server.Addr, Goroutines: *goroutines, Replicas: *children, Flush: *flush,
		Key: fmt.Sprintf("slices:%d:", time.Now().UnixNano())}
	fmt.Fprintf(w, "== slices ==\none hot key, %d client processes × %d goroutines, rlserver on loopback (CPU %d, clients CPU %d; -1: not pinned)\n",
		*children, *goroutines, *serverCPU, *loadCPU)
	fmt.Fprintf(w, "\nA limit no load reaches (Fixed, %d per %v), every goroutine calling as fast as it can for %v per mode:\n",
		flushHuge, *window, *load)
	var fast []slicesRun
	for _, mode := range []string{modeBatched, modeSlicer, modeFlush} {
		s := base
		s.Mode, s.Key, s.Limit, s.Window = mode, base.Key+"fast:"+mode, flushHuge, *window
		s.Start = time.Now().Add(slicesLead)
		s.End = s.Start.Add(*load)
		r, err := runSlicesMode(ctx, self, rdb, s, *children)
		if err != nil {
			return err
		}
		fast = append(fast, r)
	}
	writeSlicesFast(w, fast)

	fmt.Fprintf(w, "\nA limit of %d per %v (Fixed), %d calls/s offered, paced, %d whole windows per mode:\n",
		*limit, *window, *rate, *windows)
	base.Rate = float64(*rate) / float64(*children**goroutines)
	near, counted, err := slicesNearLimit(ctx, self, rdb, base, *children, *limit, *window, *windows)
	if err != nil {
		return err
	}
	writeSlicesNear(w, near, counted, *limit)
	fmt.Fprintln(w, slicesHeadline(fast[0], fast[1], counted[0], counted[1]))
	return nil
}

// slicesNearLimit runs the Slicer and count-then-flush in turn under limit per window
// for windows whole windows, and counts what each admitted in each.
func slicesNearLimit(ctx context.Context, self string, rdb *redis.Client, base slicesSpec, children, limit int,
	window time.Duration, windows int) ([]slicesRun, []windowed, error) {
	var runs []slicesRun
	var counted []windowed
	for _, mode := range []string{modeSlicer, modeFlush} {
		s := base
		s.Mode, s.Key, s.Limit, s.Window = mode, base.Key+"near:"+mode, limit, window
		edge := (time.Now().Add(slicesLead).UnixNano()/int64(window) + 1) * int64(window)
		s.Start = time.Unix(0, edge)
		s.End = s.Start.Add(time.Duration(windows) * window)
		r, err := runSlicesMode(ctx, self, rdb, s, children)
		if err != nil {
			return nil, nil, err
		}
		runs = append(runs, r)
		counted = append(counted, countWindows(r, int64(limit), window))
	}
	return runs, counted, nil
}

// runSlicesMode runs n client processes of spec and sums what they measured.
func runSlicesMode(ctx context.Context, self string, rdb *redis.Client, spec slicesSpec, n int) (slicesRun, error) {
	js, err := json.Marshal(spec)
	if err != nil {
		return slicesRun{}, err
	}
	before, err := rlCommands(ctx, rdb)
	if err != nil {
		return slicesRun{}, err
	}
	ctx, cancel := context.WithCancel(ctx) // kills the children on an early return
	defer cancel()
	cmds := make([]*exec.Cmd, n)
	stdout, stderr := make([]bytes.Buffer, n), make([]bytes.Buffer, n)
	for i := range cmds {
		cmds[i] = exec.CommandContext(ctx, self)
		cmds[i].Env = append(os.Environ(), slicesChildEnv+"="+string(js))
		cmds[i].Stdout, cmds[i].Stderr = &stdout[i], &stderr[i]
		if err := cmds[i].Start(); err != nil {
			return slicesRun{}, err
		}
	}
	r := slicesRun{mode: spec.Mode, start: spec.Start, end: spec.End, out: slicesOut{Windows: map[int64]int64{}}}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			return slicesRun{}, fmt.Errorf("%s process %d: %w: %s", spec.Mode, i, err, strings.TrimSpace(stderr[i].String()))
		}
		var o slicesOut
		if err := json.Unmarshal(stdout[i].Bytes(), &o); err != nil {
			return slicesRun{}, fmt.Errorf("%s process %d: %w", spec.Mode, i, err)
		}
		if len(o.Latency) != len(r.hist.counts) {
			return slicesRun{}, fmt.Errorf("%s process %d: %d histogram counts, want %d", spec.Mode, i, len(o.Latency), len(r.hist.counts))
		}
		r.out.add(o)
		for b, c := range o.Latency {
			r.hist.counts[b] += c
			r.hist.total += c
		}
	}
	after, err := rlCommands(ctx, rdb)
	r.commands = after - before
	return r, err
}

// rlCommands is how many RL.* commands the server has run (INFO commandstats): the
// calls, slices, refunds and flushes of every mode, and nothing else rlbench sends.
func rlCommands(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	var n int64
	for sc := bufio.NewScanner(strings.NewReader(info)); sc.Scan(); {
		name, stats, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_rl.") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		c, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("INFO commandstats: %q: %w", sc.Text(), err)
		}
		n += c
	}
	return n, nil
}

// countWindows is r's admissions against limit in each whole window of its run.
func countWindows(r slicesRun, limit int64, window time.Duration) windowed {
	var c windowed
	for win := r.start.UnixNano() / int64(window); win < r.end.UnixNano()/int64(window); win++ {
		n := r.out.Windows[win]
		c.windows++
		c.admitted += n
		c.most = max(c.most, n)
		c.over += max(0, n-limit)
		c.unused += max(0, limit-n)
	}
	return c
}

// writeSlicesFast prints the first phase's table.
func writeSlicesFast(w io.Writer, runs []slicesRun) {
	t := newTable("mode", "decisions", "decisions/s", "round trips", "trips/decision", "server cmds/decision", "p50 µs", "p99 µs", "errors")
	for _, r := range runs {
		t.row(r.mode, strconv.FormatInt(r.out.Decisions, 10), fmt.Sprintf("%.0f", r.perSec()), strconv.FormatInt(r.out.Trips, 10),
			fmt.Sprintf("%.6f", r.tripsPer()), fmt.Sprintf("%.6f", float64(r.commands)/float64(max(r.out.Decisions, 1))),
			fmt.Sprintf("%.2f", r.hist.quantile(0.5)*1000), fmt.Sprintf("%.2f", r.hist.quantile(0.99)*1000), strconv.FormatInt(r.out.Errors, 10))
	}
	t.write(w)
	writeSlicesNotes(w, runs, runs[1].out.Stats)
}

// writeSlicesNear prints the second phase's table.
func writeSlicesNear(w io.Writer, runs []slicesRun, counted []windowed, limit int) {
	t := newTable("mode", "windows", "limit", "decisions", "admitted", "most in a window", "over-admitted", "unused quota", "errors")
	for i, r := range runs {
		c := counted[i]
		t.row(r.mode, strconv.FormatInt(c.windows, 10), strconv.Itoa(limit), strconv.FormatInt(r.out.Decisions, 10),
			strconv.FormatInt(c.admitted, 10), strconv.FormatInt(c.most, 10), strconv.FormatInt(c.over, 10),
			strconv.FormatInt(c.unused, 10), strconv.FormatInt(r.out.Errors, 10))
	}
	t.write(w)
	writeSlicesNotes(w, runs, runs[0].out.Stats)
}

// writeSlicesNotes prints what the Slicer's processes did with their slices, and for
// each mode its first error and whether a process was ready late, if so.
func writeSlicesNotes(w io.Writer, runs []slicesRun, s client.SliceStats) {
	fmt.Fprintf(w, "slicer: %d slices asked, %d units taken, %d used, %d given back, %d expired held\n",
		s.Asked, s.Taken, s.Used, s.GivenBack, s.Expired)
	for _, r := range runs {
		if r.out.FirstError != "" {
			fmt.Fprintf(w, "%s: first error: %s\n", r.mode, r.out.FirstError)
		}
		if r.out.Late > 0 {
			fmt.Fprintf(w, "%s: a process was ready %v after the start: its figures cover less of the run\n", r.mode, r.out.Late)
		}
	}
}

// slicesHeadline is the last line: the Slicer against the batched client in the
// first phase, and its over-admission against count-then-flush's in the second.
func slicesHeadline(batched, slicer slicesRun, sliced, flushed windowed) string {
	fewer := batched.tripsPer() / max(slicer.tripsPer(), 1e-12)
	return fmt.Sprintf("bench-slices: %.1fx decisions/s of the batched client, %.0fx fewer round trips, p99 %.1f us, over-admitted %s (count-then-flush %s)",
		slicer.perSec()/batched.perSec(), fewer, slicer.hist.quantile(0.99)*1000, thousands(sliced.over), thousands(flushed.over))
}

// thousands prints n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
