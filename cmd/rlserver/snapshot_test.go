package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// proc is the rlserver binary running as a child, with its log kept for checks.
type proc struct {
	cmd         *exec.Cmd
	addr        string // the RESP address, "" if it exited before listening
	metricsAddr string
	done        chan struct{}

	mu  sync.Mutex
	log strings.Builder
}

var (
	listeningAt = regexp.MustCompile(`msg="rlserver listening" addr=(\S+)`)
	metricsAt   = regexp.MustCompile(`msg="metrics listening" addr=(\S+)`)
)

// startProc runs bin with args until it logs that it listens, or exits. It is killed
// at the end of the test if still running.
func startProc(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	ready := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			line := lines.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			if m := metricsAt.FindStringSubmatch(line); m != nil {
				p.metricsAddr = m[1]
			}
			if m := listeningAt.FindStringSubmatch(line); m != nil {
				p.addr = m[1]
				close(ready)
			}
			p.mu.Unlock()
		}
		p.cmd.Wait()
		close(p.done)
	}()
	select {
	case <-ready:
	case <-p.done:
	case <-time.After(30 * time.Second): // only a hung test waits this long
		t.Fatal("rlserver neither listened nor exited")
	}
	return p
}

// exit waits for the process to end and returns its exit code and log.
func (p *proc) exit(t *testing.T) (int, string) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("rlserver did not exit")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.ProcessState.ExitCode(), p.log.String()
}

func (p *proc) client(t *testing.T) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// token calls a bucket of 5 per hour on key k.
func token(t *testing.T, rdb *redis.Client) []int64 {
	t.Helper()
	got, err := rdb.Do(context.Background(), "RL.TOKEN", "k", 5, 3600000).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// drain empties the bucket and returns the limited reply that follows.
func drain(t *testing.T, rdb *redis.Client) []int64 {
	t.Helper()
	for range 5 {
		if got := token(t, rdb); got[0] != 1 {
			t.Fatalf("draining: %v", got)
		}
	}
	limited := token(t, rdb)
	if limited[0] != 0 || limited[3] < 719_000 {
		t.Fatalf("after draining: %v, want limited for ~720 s", limited)
	}
	return limited
}

// checkStillLimited: after a restart the bucket is still empty, with the retry time
// of before less at most the time that passed.
func checkStillLimited(t *testing.T, rdb *redis.Client, before []int64, since time.Time) {
	t.Helper()
	got := token(t, rdb)
	elapsed := time.Since(since).Milliseconds() + 1
	if got[0] != 0 || got[2] != 0 || got[3] > before[3] || got[3] < before[3]-elapsed {
		t.Errorf("after restart: %v, want limited with retry in [%d, %d]", got, before[3]-elapsed, before[3])
	}
}

// TestSnapshotProcess runs the built binary: a state survives kill -9 (from the last
// background snapshot) and SIGTERM (from the final one), and a damaged snapshot stops
// the start unless -snapshot-ignore-corrupt.
func TestSnapshotProcess(t *testing.T) {
	bin := buildBinary(t, "")
	dir := t.TempDir()
	start := func(path string, extra ...string) *proc {
		return startProc(t, bin, append([]string{"-addr", "127.0.0.1:0", "-snapshot", path}, extra...)...)
	}

	t.Run("kill -9 after a background snapshot", func(t *testing.T) {
		path := filepath.Join(dir, "kill.snap")
		p := start(path, "-snapshot-interval", "20ms", "-metrics-addr", "127.0.0.1:0")
		rdb := p.client(t)
		drained := time.Now()
		limited := drain(t, rdb)
		waitSaved(t, rdb)
		scrapeContains(t, p.metricsAddr, `rlserver_requests_total{command="rl.token",result="allowed"} 5`,
			`rlserver_requests_total{command="rl.token",result="limited"} 1`, "rlserver_snapshot_changes 0")
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.exit(t)
		q := start(path)
		checkStillLimited(t, q.client(t), limited, drained)
		q.cmd.Process.Signal(syscall.SIGTERM)
		if code, log := q.exit(t); code != 0 {
			t.Errorf("SIGTERM: exit %d\n%s", code, log)
		}
	})

	terminated := filepath.Join(dir, "term.snap")
	t.Run("SIGTERM writes a final snapshot", func(t *testing.T) {
		p := start(terminated, "-snapshot-interval", "1h") // no background save in time
		rdb := p.client(t)
		drained := time.Now()
		limited := drain(t, rdb)
		p.cmd.Process.Signal(syscall.SIGTERM)
		if code, log := p.exit(t); code != 0 || !strings.Contains(log, "signal received") {
			t.Fatalf("SIGTERM: exit %d\n%s", code, log)
		}
		q := start(terminated)
		if log := q.logText(); !strings.Contains(log, `msg="snapshot loaded"`) || !strings.Contains(log, "keys=1 ") {
			t.Errorf("the restart did not log the load:\n%s", log)
		}
		checkStillLimited(t, q.client(t), limited, drained)
	})

	whole, err := os.ReadFile(terminated)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		contents []byte
		ignore   bool
		want     string // in the log
	}{
		{"corrupt refused", []byte("GARBAGE!GARBAGE!GARBAGE!"), false, `snapshot is corrupt: bad magic \"GARBAGE!\"`},
		{"truncated refused", whole[:len(whole)-5], false, "snapshot is corrupt: truncated at byte"},
		{"bit flip refused", flipped(whole, len(whole)/2), false, "snapshot is corrupt: checksum mismatch"},
		{"corrupt ignored", []byte("GARBAGE!GARBAGE!GARBAGE!"), true, "snapshot unreadable, starting empty"},
		{"truncated ignored", whole[:len(whole)-5], true, "snapshot unreadable, starting empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.snap")
			if err := os.WriteFile(path, tc.contents, 0o600); err != nil {
				t.Fatal(err)
			}
			var args []string
			if tc.ignore {
				args = append(args, "-snapshot-ignore-corrupt")
			}
			p := start(path, args...)
			if !tc.ignore {
				code, log := p.exit(t)
				if code != 1 || !strings.Contains(log, tc.want) || !strings.Contains(log, "-snapshot-ignore-corrupt") {
					t.Errorf("exit %d, want 1 and %q in the log:\n%s", code, tc.want, log)
				}
				return
			}
			if p.addr == "" {
				_, log := p.exit(t)
				t.Fatalf("did not start:\n%s", log)
			}
			if got := token(t, p.client(t)); got[0] != 1 || got[2] != 4 {
				t.Errorf("started with %v, want a fresh bucket", got)
			}
			p.cmd.Process.Signal(syscall.SIGTERM)
			if code, log := p.exit(t); code != 0 || !strings.Contains(log, tc.want) {
				t.Errorf("exit %d, want 0 and %q in the log:\n%s", code, tc.want, log)
			}
		})
	}
}

// logText returns the log so far.
func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func flipped(b []byte, i int) []byte {
	b = append([]byte(nil), b...)
	b[i] ^= 0x10
	return b
}

// waitSaved polls INFO until a background save has taken every change: a bounded
// wait for the real process's own ticker.
func waitSaved(t *testing.T, rdb *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := rdb.Info(context.Background(), "persistence").Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info, "rdb_changes_since_last_save:0\r\n") && !strings.Contains(info, "rdb_saves:0\r\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no background save within 10 s:\n%s", info)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// scrapeContains GETs /metrics from addr and checks that each line is there.
func scrapeContains(t *testing.T, addr string, want ...string) {
	t.Helper()
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(body), w) {
			t.Errorf("/metrics lacks %q", w)
		}
	}
}
