// The client-library suite's harness: TestMain builds rlserver, the helpers start
// servers and run the scripts of testdata/, which print one line per check — "ok
// NAME" or "not ok NAME: what differed" — and "done" at the end. Every "not ok", a
// script that exits non-zero or stops before "done" fails the test.

package clients_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/launch"
)

// frozenUs is the clock every rlserver of the suite is frozen at (DEBUG CLOCK SET):
// 2026-01-01T00:00:00Z in µs, the start of every window of a minute, an hour or a
// day, so that the scripts can expect the algorithms' answers on fresh keys exactly.
const frozenUs = 1_767_225_600_000_000

// scriptWait bounds one script's run.
const scriptWait = 2 * time.Minute

// suite is what TestMain prepared, shared by the tests.
var suite struct {
	dir       string // the servers' logs
	serverBin string // rlserver built from ./cmd/rlserver
	buildErr  error
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rlserver-clients-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	suite.dir = dir
	defer launch.RemoveBuilt()
	suite.serverBin, suite.buildErr = launch.Built()
	return m.Run()
}

// required reports whether a missing library or program fails the suite instead of
// skipping it: in CI (CI=true) and under RLSERVER_REQUIRE_REDIS=1.
func required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("RLSERVER_REQUIRE_REDIS") == "1"
}

// missing skips tb, or fails it when required, saying what is missing and how to
// install it.
func missing(tb testing.TB, what string) {
	tb.Helper()
	if required() {
		tb.Fatal(what + " (CI=true or RLSERVER_REQUIRE_REDIS=1 makes this a failure)")
	}
	tb.Skip(what + "; under CI=true or RLSERVER_REQUIRE_REDIS=1 this skip is a failure")
}

// tool is the path of a program on PATH, or missing.
func tool(tb testing.TB, name, install string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		missing(tb, name+" is not on PATH: "+install)
	}
	return path
}

// redisTools returns redis-server's and redis-cli's paths, or missing.
func redisTools(tb testing.TB) (server, cli string) {
	tb.Helper()
	const install = "apt-get install redis-server redis-tools (macOS: brew install redis)"
	return tool(tb, "redis-server", install), tool(tb, "redis-cli", install)
}

var (
	pythonOnce sync.Once
	pythonPath string
)

// python is a Python 3 that imports redis (redis-py): RLSERVER_PYTHON if set, else
// python3 on PATH, else /usr/bin/python3 (Debian's python3-redis lives there, and a
// pyenv python3 first on PATH may lack it); or missing.
func python(tb testing.TB) string {
	tb.Helper()
	pythonOnce.Do(func() {
		candidates := []string{os.Getenv("RLSERVER_PYTHON"), "python3", "/usr/bin/python3"}
		for _, c := range candidates {
			if c == "" {
				continue
			}
			if exec.Command(c, "-c", "import redis").Run() == nil {
				pythonPath = c
				return
			}
		}
	})
	if pythonPath == "" {
		missing(tb, "no python3 imports redis (redis-py): apt-get install python3-redis, "+
			"or pip install redis and set RLSERVER_PYTHON")
	}
	return pythonPath
}

// node is the node program, once testdata/node_modules holds ioredis and node-redis
// (npm ci --prefix clients/testdata); or missing.
func node(tb testing.TB) string {
	tb.Helper()
	bin := tool(tb, "node", "install Node.js 20 or later")
	for _, lib := range []string{"ioredis", "redis"} {
		if _, err := os.Stat(filepath.Join("testdata", "node_modules", lib, "package.json")); err != nil {
			missing(tb, "the npm package "+lib+" is not installed: run npm ci --prefix clients/testdata")
		}
	}
	return bin
}

// rlServer starts the suite's rlserver binary on a free port with args, its clock
// frozen at frozenUs, and stops it when tb ends.
func rlServer(tb testing.TB, args ...string) string {
	tb.Helper()
	if suite.buildErr != nil {
		tb.Fatal(suite.buildErr)
	}
	p, err := launch.RLServer(suite.serverBin, suite.dir, append([]string{"-enable-debug-command", "-loglevel", "WARN"}, args...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Stop)
	freeze(tb, p.Addr)
	return p.Addr
}

// freeze sets the rlserver at addr's clock to frozenUs.
func freeze(tb testing.TB, addr string) {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	if err := rdb.Do(context.Background(), "DEBUG", "CLOCK", "SET", frozenUs).Err(); err != nil {
		tb.Fatalf("DEBUG CLOCK SET on %s: %v", addr, err)
	}
}

// script is a client script running in testdata/.
type script struct {
	tb     testing.TB
	name   string
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stdin  io.WriteCloser
	lines  chan string // stdout, a line at a time; closed at its end
	stderr bytes.Buffer
	oks    int
	done   bool
}

// startScript runs argv (an interpreter and a script of testdata/, then its
// arguments) in testdata/, for at most scriptWait and no longer than tb.
func startScript(tb testing.TB, name string, argv ...string) *script {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scriptWait)
	s := &script{tb: tb, name: name, cancel: cancel, lines: make(chan string, 64)}
	s.cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	s.cmd.Dir = "testdata"
	s.cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") // no __pycache__ in testdata/
	s.cmd.Stderr = &s.stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cancel) // kills the script if the test ends before it does
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	return s
}

// line handles one line of output: a check's result, "done", or a log line.
func (s *script) line(l string) {
	s.tb.Helper()
	switch {
	case strings.HasPrefix(l, "ok "):
		s.oks++
	case strings.HasPrefix(l, "not ok "):
		s.tb.Errorf("%s: %s", s.name, l)
	case l == "done":
		s.done = true
	default:
		s.tb.Logf("%s: %s", s.name, l)
	}
}

// waitFor handles lines until one equal to want (which it returns true for), or
// false when the script ends first.
func (s *script) waitFor(want string) bool {
	s.tb.Helper()
	for l := range s.lines {
		if l == want {
			return true
		}
		s.line(l)
	}
	return false
}

// send writes a line to the script's stdin.
func (s *script) send(l string) {
	s.tb.Helper()
	if _, err := io.WriteString(s.stdin, l+"\n"); err != nil {
		s.tb.Errorf("%s: writing %q: %v", s.name, l, err)
	}
}

// finish handles the rest of the output, waits for the script's end, and fails the
// test unless it exited 0 after "done".
func (s *script) finish() {
	s.tb.Helper()
	for l := range s.lines {
		s.line(l)
	}
	err := s.cmd.Wait()
	s.cancel()
	switch {
	case err != nil:
		s.tb.Errorf("%s: %v after %d checks passed; stderr:\n%s", s.name, err, s.oks, tail(s.stderr.String()))
	case !s.done:
		s.tb.Errorf("%s ended before \"done\" after %d checks passed; stderr:\n%s", s.name, s.oks, tail(s.stderr.String()))
	default:
		s.tb.Logf("%s: %d checks passed", s.name, s.oks)
	}
}

// scriptRun is one script's run: its interpreter (python or node, which skip or fail the
// test when the library is missing) and its arguments.
type scriptRun struct {
	name   string
	interp func(testing.TB) string
	args   []string
}

// runScript runs a script to its end (startScript, then finish).
func runScript(tb testing.TB, name string, argv ...string) {
	tb.Helper()
	startScript(tb, name, argv...).finish()
}

// tail is the end of a long text.
func tail(s string) string {
	return s[max(0, len(s)-3000):]
}

// startRedis starts a redis-server on a free port and stops it when tb ends.
func startRedis(tb testing.TB) string {
	tb.Helper()
	p, err := launch.Redis(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Kill)
	return p.Addr
}
