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
)

// TestSliceOracle's load: oracleChildren processes, each a Slicer, hammer one Fixed
// key of oracleLimit per oracleWindow for oracleRun: 1,000 whole windows, 10 s.
const (
	oracleEnv      = "RLSERVER_SLICE_ORACLE" // set in a child: "addr start_us end_us outfile"
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
// admission (µs, the time the Slicer decided it) to outfile, one a line.
func runOracleChild(spec []string) error {
	if len(spec) != 4 {
		return fmt.Errorf("%s: want addr start_us end_us outfile, got %q", oracleEnv, spec)
	}
	start, err1 := strconv.ParseInt(spec[1], 10, 64)
	end, err2 := strconv.ParseInt(spec[2], 10, 64)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("%s: bad times %q", oracleEnv, spec)
	}
	rdb := redis.NewClient(redisOptions(spec[0]))
	defer rdb.Close()
	c, err := client.New(rdb, client.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	s, err := c.NewSlicer(client.SliceOptions{Replicas: oracleChildren})
	if err != nil {
		return err
	}
	time.Sleep(time.Until(time.UnixMicro(start)))
	times := make([][]int64, 2)
	errs := make(chan error, len(times))
	for g := range times {
		go func() {
			for time.Now().Before(time.UnixMicro(end)) {
				res, at, err := client.SlicerAllowAt(context.Background(), s, "oracle", oracleLimitOf)
				switch {
				case err != nil:
					errs <- err
					return
				case res.Allowed:
					times[g] = append(times[g], at.UnixMicro())
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
	if err := s.Close(); err != nil {
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
	rdb := rlserverProcess(t)
	dir := t.TempDir()
	start := time.Now().Add(time.Second) // the children are started by then
	end := start.Add(oracleRun)
	children := make([]*exec.Cmd, oracleChildren)
	stderr := make([]bytes.Buffer, oracleChildren)
	for i := range children {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d %s", oracleEnv, rdb.Options().Addr,
			start.UnixMicro(), end.UnixMicro(), filepath.Join(dir, strconv.Itoa(i))))
		cmd.Stderr = &stderr[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = cmd
	}
	perWindow := map[int64]int{}
	w := oracleWindow.Microseconds()
	for i, cmd := range children {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v: %s", i, err, stderr[i].String())
		}
		f, err := os.Open(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		for sc := bufio.NewScanner(f); sc.Scan(); {
			at, err := strconv.ParseInt(sc.Text(), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			perWindow[at/w]++
		}
		f.Close()
	}
	first, last := start.UnixMicro()/w+1, end.UnixMicro()/w-1 // whole windows of the run
	var admitted, under, over int
	var overs []string // the windows past the limit, partial ones at both ends included
	for win, n := range perWindow {
		if win >= first && win <= last {
			admitted += n
			under += max(0, oracleLimit-n)
		}
		if n > oracleLimit {
			over += n - oracleLimit
			overs = append(overs, fmt.Sprintf("%d admitted in window %d", n, win))
		}
	}
	for win := first; win <= last; win++ {
		if perWindow[win] == 0 {
			under += oracleLimit
		}
	}
	windows := int(last - first + 1)
	t.Logf("%d processes, %d windows of %v, limit %d: admitted %d, over-admitted %d, under-admitted %d (%.1f%% of the quota)",
		oracleChildren, windows, oracleWindow, oracleLimit, admitted, over, under, 100*float64(under)/float64(windows*oracleLimit))
	if over > 0 {
		t.Fatalf("over the limit of %d in %d windows: %s", oracleLimit, len(overs), strings.Join(overs[:min(len(overs), 10)], ", "))
	}
	if admitted < windows*oracleLimit/4 {
		t.Fatalf("admitted %d in %d windows of %d: the load did not reach the limit", admitted, windows, oracleLimit)
	}
}
