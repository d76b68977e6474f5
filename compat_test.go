// The compatibility suite: rlserver decides exactly as a real Redis running the
// reference Lua scripts (package lua) does, and spends less memory per user doing it.
//
// TestMain starts a redis-server from PATH and an rlserver built from ./cmd/rlserver,
// each on a random loopback port, and stops both at the end. Without redis-server the
// suite skips, saying how to install it, unless RLSERVER_REQUIRE_REDIS=1 (CI): then it
// fails.
//
// The differential tests replay seeded random calls on an injected clock (rlserver:
// DEBUG CLOCK SET; the scripts: their now_us argument) and require identical replies,
// EXISTS and PTTL, call by call. The real-clock tests put both sides through the same
// scenarios: the lesson's window boundary, a sustained hammering, 50 concurrent
// clients on one key, expiry, the non-atomic INCR+EXPIRE contrast, and memory per user.
// compat_all_test.go does the same for RL.ALL and the leases (RL.ACQUIRE, RL.RELEASE,
// RL.RENEW), with package store as a third side, plus counter pollution and the
// crash of a lease holder.
//
//	go test -run . -v    # the suite, with its tables
//	go test -run 'LuaMatchesAlgo|ServerMatchesLua' -compat.calls=1000000 -compat.seed=42
//	go test -run 'AllMatches|LeasesMatch' -compat.calls=1000000
package rlserver_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/lua"
)

var (
	compatCalls = flag.Int("compat.calls", 10_000, "calls per algorithm in each differential test")
	compatSeed  = flag.Uint64("compat.seed", 0, "seed of the differential tests; 0 draws one (logged, to replay a failure)")
	compatUsers = flag.Int("compat.users", 200_000, "users per algorithm in the memory test (RL.LOG: a tenth, 100 entries each)")
	compatMem   = flag.String("compat.memory", "", "commands the memory test measures, comma-separated (rl.token,rl.fixed); empty: all")
)

const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// kinds are every algorithm, in command order.
var kinds = []algo.Kind{algo.KindFixed, algo.KindSlide, algo.KindLog, algo.KindToken,
	algo.KindGCRA, algo.KindLeaky, algo.KindThrottle}

// suite holds what TestMain started, shared by the tests, which run one at a time.
var suite struct {
	dir       string
	redis     *process // nil when redis-server is not on PATH or did not start
	redisErr  error
	serverBin string
	server    *process
	serverErr error
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rlserver-compat-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	suite.dir = dir
	if _, err := exec.LookPath("redis-server"); err != nil {
		return m.Run() // needRedis skips or fails each test
	}
	if suite.redis, suite.redisErr = startRedis(dir); suite.redis != nil {
		defer suite.redis.stop()
	}
	defer launch.RemoveBuilt()
	if suite.serverBin, suite.serverErr = launch.Built(); suite.serverErr == nil {
		if suite.server, suite.serverErr = startServer(dir, suite.serverBin); suite.server != nil {
			defer suite.server.stop()
		}
	}
	return m.Run()
}

// needRedis returns the shared redis-server, its scripts loaded and its data flushed,
// or skips (fails under RLSERVER_REQUIRE_REDIS=1) when there is none.
func needRedis(t *testing.T) *process {
	t.Helper()
	testenv.RedisTool(t, "redis-server")
	if suite.redisErr != nil {
		t.Fatal(suite.redisErr)
	}
	flush(t, suite.redis)
	return suite.redis
}

// needServer returns the shared rlserver, its clock real and its data flushed.
func needServer(t *testing.T) *process {
	t.Helper()
	needRedis(t)
	if suite.serverErr != nil {
		t.Fatal(suite.serverErr)
	}
	flush(t, suite.server)
	return suite.server
}

// flush empties p, and puts rlserver's clock back on the real time.
func flush(t *testing.T, p *process) {
	t.Helper()
	ctx := context.Background()
	if p.name == "rlserver" {
		if err := p.client.Do(ctx, "DEBUG", "CLOCK", "REAL").Err(); err != nil {
			t.Fatalf("rlserver: DEBUG CLOCK REAL: %v", err)
		}
	}
	if err := p.client.FlushAll(ctx).Err(); err != nil {
		t.Fatalf("%s: FLUSHALL: %v", p.name, err)
	}
}

// process is a server the suite started (package launch), with a client on it.
type process struct {
	*launch.Proc
	name   string // "redis-server" or "rlserver"
	addr   string
	client *redis.Client
}

// newProcess puts a client on p.
func newProcess(p *launch.Proc, name string) *process {
	return &process{Proc: p, name: name, addr: p.Addr, client: newClient(p.Addr)}
}

// stop closes the client and ends p: SIGTERM (both servers shut down on it), then
// SIGKILL after 5 s.
func (p *process) stop() {
	p.client.Close()
	p.Proc.Stop()
}

// newClient connects to addr with go-redis's defaults (RESP3 through HELLO 3) and
// no retries: a retried RL.* call would be counted twice.
func newClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64, MaxRetries: -1,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute})
}

// startRedis starts a redis-server in dir with the scripts loaded.
func startRedis(dir string) (*process, error) {
	rp, err := launch.Redis(dir)
	if err != nil {
		return nil, err
	}
	p := newProcess(rp, "redis-server")
	ctx := context.Background()
	for _, name := range lua.Commands() {
		s := lua.Named(name)
		sha, err := p.client.ScriptLoad(ctx, s.Source).Result()
		if err != nil {
			p.stop()
			return nil, fmt.Errorf("SCRIPT LOAD %s: %w", name, err)
		}
		if sha != s.SHA1 {
			p.stop()
			return nil, fmt.Errorf("SCRIPT LOAD %s answered %s, lua.Named says %s", name, sha, s.SHA1)
		}
	}
	return p, nil
}

// startServer starts the built rlserver bin with DEBUG CLOCK, its log in dir.
func startServer(dir, bin string) (*process, error) {
	sp, err := launch.RLServer(bin, dir, "-enable-debug-command", "-loglevel", "WARN")
	if err != nil {
		return nil, err
	}
	return newProcess(sp, "rlserver"), nil
}

// allowed reads a reply's first field: 1 = allowed for RL.*, 0 = allowed for CL.THROTTLE.
func allowed(kind algo.Kind, reply [5]int64) bool {
	return (reply[0] == 1) != (kind == algo.KindThrottle)
}

// replyOf is the wire reply of a Decision: its times in ms rounded up, or in seconds
// for CL.THROTTLE (rounded up, as redis-cell) and Redis's GCRA (ceil of a float64
// quotient, as gcra.c); retry_after -1 stays -1.
func replyOf(kind algo.Kind, d algo.Decision) [5]int64 {
	var first int64
	if d.Allowed != (kind == algo.KindThrottle) {
		first = 1
	}
	retry, reset := algo.Millis(d.RetryAfter), algo.Millis(d.ResetAfter)
	switch kind {
	case algo.KindThrottle:
		retry, reset = (d.RetryAfter+999_999)/1_000_000, (d.ResetAfter+999_999)/1_000_000
	case algo.KindRedisGCRA:
		retry, reset = int64(math.Ceil(float64(d.RetryAfter)/1e6)), int64(math.Ceil(float64(d.ResetAfter)/1e6))
	}
	if d.RetryAfter < 0 {
		retry = -1
	}
	return [5]int64{first, d.Limit, d.Remaining, retry, reset}
}

// reply5 reads a five-integer reply.
func reply5(cmd *redis.Cmd) ([5]int64, error) {
	var r [5]int64
	v, err := cmd.Int64Slice()
	if err != nil {
		return r, err
	}
	if len(v) != 5 {
		return r, fmt.Errorf("%d integers in the reply, want 5: %v", len(v), v)
	}
	copy(r[:], v)
	return r, nil
}
