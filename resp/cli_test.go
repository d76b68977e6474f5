package resp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// needTool finds a program the test runs, or skips the test; with
// RLSERVER_REQUIRE_REDIS=1 (as in CI) a missing program fails it instead.
func needTool(t *testing.T, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := name + " not found on PATH: " + install
	if os.Getenv("RLSERVER_REQUIRE_REDIS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestRedisCLIScripted runs redis-cli as scripts run it: one command from the
// command line, then a session read from stdin.
func TestRedisCLIScripted(t *testing.T) {
	cli := needTool(t, "redis-cli", "apt-get install redis-tools")
	ts := startServer(t, Config{})
	_, port, _ := net.SplitHostPort(ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	out, err := exec.CommandContext(ctx, cli, "-p", port, "RL.TOKEN", "user:1", "10", "1000").CombinedOutput()
	if err != nil || string(out) != "1\n10\n9\n0\n100\n" {
		t.Errorf("redis-cli RL.TOKEN user:1 10 1000: %q, %v", out, err)
	}

	session := strings.Join([]string{
		"PING",
		"RL.GCRA api 10 1000",
		"TYPE api",
		"PTTL nosuch",
		"RL.GCRA api 0 1000",
		"FOO bar",
		"CONFIG GET save",
		"MEMORY USAGE nosuch",
		"DEL api",
	}, "\n") + "\n"
	cmd := exec.CommandContext(ctx, cli, "-p", port, "--no-raw")
	cmd.Stdin = strings.NewReader(session)
	out, err = cmd.CombinedOutput()
	want := strings.Join([]string{
		"PONG",
		"1) (integer) 1", "2) (integer) 10", "3) (integer) 9", "4) (integer) 0", "5) (integer) 100",
		"rl.gcra",
		"(integer) -2",
		"(error) ERR limit must be an integer between 1 and 1000000000",
		"(error) ERR unknown command 'FOO', with args beginning with: 'bar' ",
		`1) "save"`, `2) ""`,
		"(nil)",
		"(integer) 1",
	}, "\n") + "\n"
	if err != nil || string(out) != want {
		t.Errorf("redis-cli session: %v\n got:\n%s\nwant:\n%s", err, out, want)
	}

	// redis-cli in RESP3 (-3) sends HELLO 3 first and prints maps.
	out, err = exec.CommandContext(ctx, cli, "-3", "-p", port, "--no-raw", "CONFIG", "GET", "appendonly").CombinedOutput()
	if err != nil || string(out) != "1# \"appendonly\" => \"no\"\n" {
		t.Errorf("redis-cli -3 CONFIG GET appendonly: %q, %v", out, err)
	}
}

// TestRedisCLIInteractive types into an interactive redis-cli on a pseudo-terminal
// (util-linux script provides it) and checks the argument hint and HELP text it
// builds from COMMAND DOCS.
func TestRedisCLIInteractive(t *testing.T) {
	cli := needTool(t, "redis-cli", "apt-get install redis-tools")
	script := needTool(t, "script", "apt-get install util-linux")
	ts := startServer(t, Config{})
	_, port, _ := net.SplitHostPort(ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A fixed terminal size keeps linenoise from querying the cursor position.
	cmd := exec.CommandContext(ctx, script, "-qec", "stty cols 300 rows 50; exec "+cli+" -p "+port, "/dev/null")
	cmd.Env = append(os.Environ(), "TERM=xterm", "HOME="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{changed: make(chan struct{}, 1)}
	cmd.Stdout = term
	cmd.Stderr = term
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cancel() // kills redis-cli if a step failed
		<-exited
	}()

	prompt := "127.0.0.1:" + port + "> "
	if !term.waitFor(ctx, 0, prompt) {
		t.Fatalf("no prompt; the terminal shows:\n%q", term.since(0))
	}
	for _, s := range []struct{ typed, want string }{
		{"RL.TOKEN ", "key capacity window_ms [RATE rate] [COST cost] [PEEK]"}, // the hint
		{"user:7 ", "capacity window_ms [RATE rate] [COST cost] [PEEK]"},
		{"10 1000\r", "5) (integer) 100"},
		{"help RL.TOKEN\r", "group:\x1b[0m ratelimit"},
		{"help @ratelimit\r", "CL.THROTTLE"},
		{"GCRA ", "key max_burst tokens_per_period period [TOKENS count]"},
		{"k 1 2 0.5\r", "4) (integer) -1"},
	} {
		mark := term.len()
		if _, err := io.WriteString(stdin, s.typed); err != nil {
			t.Fatal(err)
		}
		if !term.waitFor(ctx, mark, s.want) {
			t.Fatalf("after typing %q, the terminal never showed %q; it shows:\n%q", s.typed, s.want, term.since(mark))
		}
		if strings.HasSuffix(s.typed, "\r") {
			// Typing before the next prompt would reach the terminal in cooked mode.
			mark += strings.Index(term.since(mark), s.want)
			if !term.waitFor(ctx, mark, prompt) {
				t.Fatalf("no prompt after %q; the terminal shows:\n%q", s.typed, term.since(mark))
			}
		}
	}
	io.WriteString(stdin, "quit\r")
	select {
	case err := <-exited:
		exited <- err // for the deferred receive
		if err != nil {
			t.Errorf("redis-cli exited with %v", err)
		}
	case <-ctx.Done():
		t.Error("redis-cli did not quit")
	}
}

// terminal collects what redis-cli writes and signals each change.
type terminal struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func (t *terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf.Write(p)
	t.mu.Unlock()
	select {
	case t.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (t *terminal) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.Len()
}

func (t *terminal) since(mark int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()[mark:]
}

// waitFor waits until the output after mark contains want, or ctx ends.
func (t *terminal) waitFor(ctx context.Context, mark int, want string) bool {
	for !strings.Contains(t.since(mark), want) {
		select {
		case <-t.changed:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// TestRedisCLIHotKeys: redis-cli --hotkeys and --bigkeys scan the keys and report,
// OBJECT FREQ answering for each key (0: rlserver tracks no access frequency).
func TestRedisCLIHotKeys(t *testing.T) {
	cli := needTool(t, "redis-cli", "apt-get install redis-tools")
	ts := startServer(t, Config{})
	rdb := ts.client(t, 2)
	for i := range 50 {
		do(rdb, fmt.Sprintf("RL.TOKEN user:%d 10 60000", i))
	}
	_, port, _ := net.SplitHostPort(ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, "-p", port, "--hotkeys").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Sampled 50 keys in the keyspace!") ||
		strings.Contains(string(out), "Error") {
		t.Errorf("redis-cli --hotkeys: %v\n%s", err, out)
	}
}
