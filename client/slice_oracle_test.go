package client_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
)

// TestSliceOracle's load: oracleChildren processes, each a Slicer, hammer one Fixed
// key of oracleLimit per oracleWindow for oracleRun: 1,000 whole windows, 10 s.
const (
	oracleEnv      = "RLSERVER_SLICE_ORACLE" // set in a child: "addr start_us end_us outfile fallback"
	oracleChildren = 8
	oracleLimit    = 20
	oracleWindow   = 10 * time.Millisecond
	oracleRun      = 10_020 * time.Millisecond
)

// oracleLimitOf is the oracle's key's limit.
var oracleLimitOf = client.Fixed(oracleLimit, oracleWindow)

// oracleChild runs this process as one of TestSliceOracle's clients, and exits, when
// the environment says so.
func oracleChild() {
	spec := os.Getenv(oracleEnv)
	if spec == "" {
		return
	}
	if err := runOracleChild(strings.Fields(spec)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runOracleChild calls Allow on the oracle's key from two goroutines from start to
// end, waiting out each refusal as a client would, and writes the time of every
// admission (µs, the time the Slicer decided it) to outfile, one a line, followed by
// " local" when the Fallback decided it. With fallback "1" its Client has a Fallback
// for oracleChildren replicas.
func runOracleChild(spec []string) error {
	if len(spec) != 5 {
		return fmt.Errorf("%s: want addr start_us end_us outfile fallback, got %q", oracleEnv, spec)
	}
	start, err1 := strconv.ParseInt(spec[1], 10, 64)
	end, err2 := strconv.ParseInt(spec[2], 10, 64)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("%s: bad times %q", oracleEnv, spec)
	}
	rdb := redis.NewClient(redisOptions(spec[0]))
	defer rdb.Close()
	opts := client.Options{Timeout: time.Second}
	if spec[4] == "1" {
		opts.Fallback = &client.Fallback{Replicas: oracleChildren}
	}
	c, err := client.New(rdb, opts)
	if err != nil {
		return err
	}
	s, err := c.NewSlicer(client.SliceOptions{Replicas: oracleChildren})
	if err != nil {
		return err
	}
	time.Sleep(time.Until(time.UnixMicro(start)))
	times := make([][]string, 2)
	errs := make(chan error, len(times))
	for g := range times {
		go func() {
			for time.Now().Before(time.UnixMicro(end)) {
				res, at, err := client.SlicerAllowAt(context.Background(), s, "oracle", oracleLimitOf)
				switch {
				case err != nil:
					errs <- err
					return
				case res.Allowed && res.Degraded:
					times[g] = append(times[g], strconv.FormatInt(at.UnixMicro(), 10)+" local")
				case res.Allowed:
					times[g] = append(times[g], strconv.FormatInt(at.UnixMicro(), 10))
				default:
					time.Sleep(res.RetryAfter)
				}
			}
			errs <- nil
		}()
	}
	for range times {
		if err := <-errs; err != nil {
			return err
		}
	}
	if err := s.Close(); err != nil && spec[4] != "1" { // the server is killed under a Fallback
		return err
	}
	var out bytes.Buffer
	for _, ts := range times {
		for _, t := range ts {
			fmt.Fprintln(&out, t)
		}
	}
	return os.WriteFile(spec[3], out.Bytes(), 0o644)
}

// TestSliceOracle is the exactness oracle: 8 processes admit from slices of one Fixed
// key of a real rlserver, each recording when it admitted; in every window of the
// key, the admissions of all of them together are at most the limit. The quota
// left unused (under-admission: units that expired held, or were never asked) is
// logged.
func TestSliceOracle(t *testing.T) {
	o := runOracle(t, rlserverProcess(t).Options().Addr, oracleRun, false, nil)
	var admitted, under int
	for win := o.first; win <= o.last; win++ {
		admitted += o.perWindow[win]
		under += max(0, oracleLimit-o.perWindow[win])
	}
	windows := int(o.last - o.first + 1)
	over, overs := o.over(func(int64) int { return oracleLimit })
	t.Logf("%d processes, %d windows of %v, limit %d: admitted %d, over-admitted %d, under-admitted %d (%.1f%% of the quota)",
		oracleChildren, windows, oracleWindow, oracleLimit, admitted, over, under, 100*float64(under)/float64(windows*oracleLimit))
	if over > 0 {
		t.Fatalf("over the limit of %d in %d windows: %s", oracleLimit, len(overs), strings.Join(overs[:min(len(overs), 10)], ", "))
	}
	if admitted < windows*oracleLimit/4 {
		t.Fatalf("admitted %d in %d windows of %d: the load did not reach the limit", admitted, windows, oracleLimit)
	}
}

// TestSliceOracleServerKilled is the oracle with the server killed mid-run, each
// child's Client with a Fallback for the 8 replicas: the window of the kill admits at
// most the limit (from slices spent at the server) plus each replica's share
// (⌊limit/8⌋, from the fallback), and every other window at most the limit.
func TestSliceOracleServerKilled(t *testing.T) {
	p, err := launch.RLServer(testenv.RLServerBin(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	var killed int64 // its window
	o := runOracle(t, p.Addr, 2*time.Second, true, func(start time.Time) {
		time.Sleep(time.Until(start.Add(time.Second + oracleWindow/3))) // mid-window, mid-run
		killed = time.Now().UnixMicro() / oracleWindow.Microseconds()
		p.Kill()
	})
	share := oracleLimit / oracleChildren
	over, overs := o.over(func(win int64) int {
		if win == killed {
			return oracleLimit + oracleChildren*share
		}
		return oracleLimit
	})
	t.Logf("killed in window %d: %d admitted there (bound %d), %d decided by the fallbacks, over the bound %d",
		killed, o.perWindow[killed], oracleLimit+oracleChildren*share, o.local, over)
	if over > 0 {
		t.Fatalf("over the bound in %d windows: %s", len(overs), strings.Join(overs[:min(len(overs), 10)], ", "))
	}
	if o.local == 0 {
		t.Fatal("no admission by the fallbacks: the server was not killed under load")
	}
}

// oracle is what the children of one run admitted: per window of the key, and how
// many of them the fallbacks decided; first and last are the run's whole windows.
type oracle struct {
	perWindow   map[int64]int
	local       int
	first, last int64
}

// over is the admissions past bound(window) in every window, partial ones at both
// ends included, and the windows past it.
func (o oracle) over(bound func(win int64) int) (int, []string) {
	var over int
	var overs []string
	for win, n := range o.perWindow {
		if b := bound(win); n > b {
			over += n - b
			overs = append(overs, fmt.Sprintf("%d admitted in window %d (at most %d)", n, win, b))
		}
	}
	return over, overs
}

// runOracle runs oracleChildren children against the rlserver at addr for run,
// their Clients with a Fallback if fallback, calls during (if not nil) with the
// run's start while they run, and counts what they admitted.
func runOracle(t *testing.T, addr string, run time.Duration, fallback bool, during func(start time.Time)) oracle {
	dir := t.TempDir()
	start := time.Now().Add(time.Second) // the children are started by then
	end := start.Add(run)
	children := make([]*exec.Cmd, oracleChildren)
	stderr := make([]bytes.Buffer, oracleChildren)
	for i := range children {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d %s %d", oracleEnv, addr,
			start.UnixMicro(), end.UnixMicro(), filepath.Join(dir, strconv.Itoa(i)), map[bool]int{false: 0, true: 1}[fallback]))
		cmd.Stderr = &stderr[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = cmd
	}
	if during != nil {
		during(start)
	}
	w := oracleWindow.Microseconds()
	o := oracle{perWindow: map[int64]int{}, first: start.UnixMicro()/w + 1, last: end.UnixMicro()/w - 1}
	for i, cmd := range children {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v: %s", i, err, stderr[i].String())
		}
		f, err := os.Open(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		for sc := bufio.NewScanner(f); sc.Scan(); {
			us, local, _ := strings.Cut(sc.Text(), " ")
			at, err := strconv.ParseInt(us, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			o.perWindow[at/w]++
			if local == "local" {
				o.local++
			}
		}
		f.Close()
	}
	return o
}
