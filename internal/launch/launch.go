// Package launch starts the servers that the tests and rlbench run against: rlserver
// in-process or as its binary, redis-server, a Redis Cluster and Redis Sentinels, each
// on loopback, returning once it answers PING. It is the one launcher of the module,
// so that every caller picks ports, waits for a start, keeps logs and stops a server
// the same way; package testenv wraps it for tests, with their cleanup and skips.
//
// A port is free when picked but may be taken before the server binds it; the
// functions that pick one retry a start that failed, up to three times.
package launch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/resp"
)

// Errors of a start whose programs are missing.
var (
	// ErrNoRedis is returned when redis-server or redis-cli is not on PATH.
	ErrNoRedis = errors.New("launch: redis-server and redis-cli not on PATH: install them " +
		"(Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)")
	// ErrNoRatelimit is returned when envoyproxy/ratelimit's binary is not found.
	ErrNoRatelimit = errors.New("launch: envoyproxy/ratelimit not found: go install " +
		"github.com/envoyproxy/ratelimit/src/service_cmd@" + RatelimitVersion + " (or set RATELIMIT_BIN)")
)

// Timeouts of a start.
const (
	// pingWait bounds a server's start, until it answers PING.
	pingWait = 10 * time.Second
	// clusterWait bounds forming a Redis Cluster: redis-cli --cluster create waits for
	// the nodes to join (about a second on loopback), then gossip spreads the slot map.
	clusterWait = 30 * time.Second
	// stopWait is how long Stop waits after SIGTERM before SIGKILL.
	stopWait = 5 * time.Second
	// tries is how often a start on a freshly picked port is tried.
	tries = 3
)

// Proc is a server process started by Start.
type Proc struct {
	Name    string // what logs and errors call it
	Addr    string // host:port it answers on
	LogPath string // its stdout and stderr
	cmd     *exec.Cmd
	exited  chan struct{}
}

// Spec says what Start runs.
type Spec struct {
	Name     string   // for logs and errors: "redis-server", "rlserver-1", ...
	Addr     string   // the address the server will answer PING on
	Password string   // for that PING, if the server requires one
	Log      string   // the log file, appended to (a restart keeps the earlier lines)
	Argv     []string // the program and its arguments
	Env      []string // added to this process's environment
	// Ready, when set, is what Start waits for instead of PING: nil once the server
	// answers (for a server that speaks no RESP).
	Ready func() error
}

// Start runs spec's program, its output appended to spec.Log, and waits up to 10 s
// for it to answer PING at spec.Addr. A server that exits or does not answer is
// stopped, and the error quotes the end of its log.
func Start(spec Spec) (*Proc, error) {
	logFile, err := os.OpenFile(spec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child keeps its own descriptor
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if spec.Env != nil {
		cmd.Env = append(os.Environ(), spec.Env...)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	p := &Proc{Name: spec.Name, Addr: spec.Addr, LogPath: spec.Log, cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(p.exited) }()
	wait := func() error { return waitPing(spec.Addr, spec.Password, p.exited) }
	if spec.Ready != nil {
		wait = func() error { return waitReady(spec.Ready, p.exited) }
	}
	if err := wait(); err != nil {
		p.Kill()
		return nil, fmt.Errorf("%s at %s: %w: %s", spec.Name, spec.Addr, err, p.LogTail(2000))
	}
	return p, nil
}

// waitPing waits up to pingWait for the server at addr to answer PING, giving up
// early once exited is closed. NOAUTH is an answer: a server whose default user
// has a password it was not given serves once it says so.
func waitPing(addr, password string, exited <-chan struct{}) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, MaxRetries: -1})
	defer rdb.Close()
	return waitReady(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := rdb.Ping(ctx).Err(); err != nil && !strings.HasPrefix(err.Error(), "NOAUTH") {
			return err
		}
		return nil
	}, exited)
}

// waitReady waits up to pingWait for ready to answer nil, giving up early once
// exited is closed.
func waitReady(ready func() error, exited <-chan struct{}) error {
	var err error
	for deadline := time.Now().Add(pingWait); ; {
		if err = ready(); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited at start (%v)", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %v (%v)", pingWait, err)
		}
	}
}

// Stop ends p gently: SIGTERM (rlserver and redis-server shut down on it), then
// SIGKILL after 5 s. It returns once p has exited.
func (p *Proc) Stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopWait):
		p.Kill()
	}
}

// Kill ends p with SIGKILL, as a crash would, and returns once it has exited.
func (p *Proc) Kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// Pid is p's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once p has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// LogTail is the last n bytes of p's log.
func (p *Proc) LogTail(n int) string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b[max(0, len(b)-n):])
}

// LogIn is a new log file's path in dir for a server called name.
func LogIn(dir, name string) (string, error) {
	f, err := os.CreateTemp(dir, name+"-*.log")
	if err != nil {
		return "", err
	}
	f.Close()
	return f.Name(), nil
}

// FreeAddr returns a loopback address whose port, and that port + 10000, nobody
// listens on: a Redis Cluster node also binds port+10000 for its bus, so any server
// may take any address given. The port is below 55536 so that both exist, and drawn
// at random from 20000 up, away from the ephemeral ports Linux hands out from 32768
// only in part: two callers rarely draw the same one.
func FreeAddr() (string, error) {
	for range 100 {
		port := 20000 + rand.IntN(35000)
		a, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		a.Close()
		if err != nil {
			continue
		}
		b.Close()
		return a.Addr().String(), nil
	}
	return "", errors.New("launch: no free pair of loopback ports")
}

// FreeAddrs returns n distinct addresses as FreeAddr does.
func FreeAddrs(n int) ([]string, error) {
	var addrs []string
	for len(addrs) < n {
		a, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return addrs, nil
}

// onFreePort starts a server on a freshly picked address, retrying when the start
// fails (the port taken meanwhile).
func onFreePort(start func(addr string) (*Proc, error)) (*Proc, error) {
	var err error
	for range tries {
		var addr string
		if addr, err = FreeAddr(); err != nil {
			return nil, err
		}
		var p *Proc
		if p, err = start(addr); err == nil {
			return p, nil
		}
	}
	return nil, err
}

// Redis starts a redis-server without persistence on a free loopback port, with dir
// as its directory (and its log's), extraArgs after its own arguments.
func Redis(dir string, extraArgs ...string) (*Proc, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedis
	}
	return onFreePort(func(addr string) (*Proc, error) {
		return RedisAt(bin, dir, addr, extraArgs...)
	})
}

// RedisAt starts the redis-server bin on addr, as Redis does.
func RedisAt(bin, dir, addr string, extraArgs ...string) (*Proc, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	log, err := LogIn(dir, "redis-server")
	if err != nil {
		return nil, err
	}
	argv := append([]string{bin, "--port", port, "--bind", host, "--save", "", "--appendonly", "no",
		"--dir", dir, "--loglevel", "warning"}, extraArgs...)
	return Start(Spec{Name: "redis-server", Addr: addr, Log: log, Argv: argv})
}

// RedisCluster starts n redis-servers (n ≥ 3, Redis's least) as a Redis Cluster of n
// masters and no replicas, each in a directory of its own under dir, the 16,384
// slots split by redis-cli --cluster create. It returns once every node says
// cluster_state:ok and all give the same slot map (a ClusterClient reads the map
// from any one node, and a node that has not heard of the others would send it MOVED
// loops); on an error it stops the nodes it started.
func RedisCluster(ctx context.Context, dir string, n int) ([]*Proc, error) {
	if n < 3 {
		return nil, fmt.Errorf("launch: a Redis Cluster needs at least 3 masters, got %d", n)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, ErrNoRedis
	}
	var nodes []*Proc
	stop := func() {
		for _, p := range nodes {
			p.Kill()
		}
	}
	addrs := make([]string, n)
	for i := range n {
		ndir := filepath.Join(dir, "node"+strconv.Itoa(i))
		if err := os.MkdirAll(ndir, 0o755); err != nil {
			stop()
			return nil, err
		}
		// nodes.conf sits in the node's own --dir: one per node, as Redis requires.
		p, err := Redis(ndir, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000")
		if err != nil {
			stop()
			return nil, err
		}
		nodes = append(nodes, p)
		addrs[i] = p.Addr
	}
	ctx, cancel := context.WithTimeout(ctx, clusterWait)
	defer cancel()
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		stop()
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := waitClusterOK(ctx, addrs); err != nil {
		stop()
		return nil, err
	}
	return nodes, nil
}

// waitClusterOK waits until every node at addrs answers cluster_state:ok and the
// same CLUSTER SLOTS as the first.
func waitClusterOK(ctx context.Context, addrs []string) error {
	rdbs := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		rdbs[i] = redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		defer rdbs[i].Close()
	}
	var last string
	for {
		var first string
		ok := true
		for i, rdb := range rdbs {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				ok, last = false, fmt.Sprintf("%s: %v %q", addrs[i], err, info)
				break
			}
			slots, err := slotMap(ctx, rdb)
			if err != nil {
				ok, last = false, fmt.Sprintf("%s: CLUSTER SLOTS: %v", addrs[i], err)
				break
			}
			if i == 0 {
				first = slots
			} else if slots != first {
				ok, last = false, fmt.Sprintf("%s says %s, %s says %s", addrs[0], first, addrs[i], slots)
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Redis Cluster did not settle within %v: %s", clusterWait, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// slotMap is a node's CLUSTER SLOTS as text, ranges in order: "0-5460@host:port ...".
func slotMap(ctx context.Context, rdb *redis.Client) (string, error) {
	//lint:ignore SA1019 CLUSTER SLOTS is what redis-cli and older clients send; rlserver answers it as Redis does
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		return "", err
	}
	slices.SortFunc(slots, func(a, b redis.ClusterSlot) int { return a.Start - b.Start })
	var b strings.Builder
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			return "", fmt.Errorf("slots %d-%d have no node", s.Start, s.End)
		}
		fmt.Fprintf(&b, "%d-%d@%s ", s.Start, s.End, s.Nodes[0].Addr)
	}
	return b.String(), nil
}

// Sentinel starts a Redis Sentinel (redis-server --sentinel) on a free loopback
// port, with dir as its directory and its configuration file: the port, bind and dir
// lines, then conf (its "sentinel monitor ..." lines).
func Sentinel(dir, conf string) (*Proc, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedis
	}
	return onFreePort(func(addr string) (*Proc, error) {
		_, port, _ := net.SplitHostPort(addr)
		path := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("port %s\nbind 127.0.0.1\ndir %s\n%s", port, dir, conf)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return nil, err
		}
		log, err := LogIn(dir, "sentinel")
		if err != nil {
			return nil, err
		}
		return Start(Spec{Name: "sentinel", Addr: addr, Log: log, Argv: []string{bin, path, "--sentinel"}})
	})
}

// BuildRLServer builds cmd/rlserver into dir and returns the binary's path. It builds
// in the root module's directory, whose go.sum has every dependency of rlserver's, so
// that a module of its own (cmd/rlbench) can build it too.
func BuildRLServer(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "rlserver")
	root, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/rlserver/rlserver").Output()
	if err != nil {
		return "", fmt.Errorf("go list the rlserver module: %v", err)
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/rlserver")
	build.Dir = strings.TrimSpace(string(root))
	out, err := build.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build cmd/rlserver: %v\n%s", err, out)
	}
	return bin, nil
}

// built is what Built built: the binary, its directory and the build's error.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// Built returns the rlserver binary built from cmd/rlserver (BuildRLServer) into a
// temporary directory on the first call only: every test of a test binary, and
// every server they start, shares one build, which costs seconds of linking under
// -race. RemoveBuilt removes it.
func Built() (string, error) {
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "rlserver-bin-"); built.err == nil {
			built.bin, built.err = BuildRLServer(context.Background(), built.dir)
		}
	})
	return built.bin, built.err
}

// RemoveBuilt removes what Built built, if anything; call it once no server runs the
// binary (a TestMain, after m.Run).
func RemoveBuilt() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// RLServer starts the rlserver binary bin on a free loopback port with args after
// -addr, its log in dir.
func RLServer(bin, dir string, args ...string) (*Proc, error) {
	return onFreePort(func(addr string) (*Proc, error) { return RLServerAt(bin, dir, addr, args...) })
}

// RLServerAt starts the rlserver binary bin on addr, as RLServer does: for nodes
// whose addresses are known before they start (cluster mode), and for restarts.
func RLServerAt(bin, dir, addr string, args ...string) (*Proc, error) {
	log, err := LogIn(dir, "rlserver")
	if err != nil {
		return nil, err
	}
	return Start(Spec{Name: "rlserver", Addr: addr, Log: log, Argv: append([]string{bin, "-addr", addr}, args...)})
}

// InProcess runs an rlserver in this process on a free loopback port with cfg (its
// log discarded unless cfg.Logger is set), and returns it, its address and how to stop
// it: stop closes the server and returns Serve's error, nil when it ended as asked.
func InProcess(cfg resp.Config) (srv *resp.Server, addr string, stop func() error, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	srv, err = resp.NewServer(cfg)
	if err != nil {
		return nil, "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	return srv, ln.Addr().String(), func() error {
		srv.Close()
		// ErrServerClosed: Close came before Serve began. That is no Serve failure.
		if err := <-done; err != nil && !errors.Is(err, resp.ErrServerClosed) {
			return err
		}
		return nil
	}, nil
}
