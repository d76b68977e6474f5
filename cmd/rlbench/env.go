package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/lua"
	"github.com/rlserver/rlserver/resp"
)

// kinds are the algorithms every experiment covers, in the table's order.
var kinds = []algo.Kind{algo.KindFixed, algo.KindSlide, algo.KindLog, algo.KindToken,
	algo.KindGCRA, algo.KindLeaky, algo.KindThrottle}

// target is one side: Redis running the scripts, or rlserver.
type target struct {
	name   string
	addr   string
	client *redis.Client
	script bool // Redis+Lua: calls go through EVALSHA
}

// env is the servers the experiments run against, and how to stop those rlbench
// started.
type env struct {
	targets []target // Redis+Lua first, then rlserver; either may be missing
	stops   []func()
}

// side returns the target named name ("redis+lua" or "rlserver"), if there is one.
func (e *env) side(name string) (target, bool) {
	for _, t := range e.targets {
		if t.name == name {
			return t, true
		}
	}
	return target{}, false
}

func (e *env) close() {
	for _, t := range e.targets {
		t.client.Close()
	}
	for i := len(e.stops) - 1; i >= 0; i-- {
		e.stops[i]()
	}
}

// connect starts the servers (-start) or dials the given ones, loading the
// scripts into Redis.
func connect(ctx context.Context, cfg config) (*env, error) {
	e := &env{}
	if cfg.start {
		raddr, stop, err := startRedis()
		if err != nil {
			return nil, err
		}
		e.stops = append(e.stops, stop)
		saddr, stop, err := startServer()
		if err != nil {
			e.close()
			return nil, err
		}
		e.stops = append(e.stops, stop)
		cfg.redis, cfg.rlserver = raddr, saddr
	}
	if cfg.redis != "" {
		c := newClient(cfg.redis)
		e.targets = append(e.targets, target{"redis+lua", cfg.redis, c, true})
		for _, k := range kinds {
			s := lua.Named(k.Command())
			if err := c.ScriptLoad(ctx, s.Source).Err(); err != nil {
				e.close()
				return nil, fmt.Errorf("redis %s: SCRIPT LOAD %s: %w", cfg.redis, k.Command(), err)
			}
		}
	}
	if cfg.rlserver != "" {
		c := newClient(cfg.rlserver)
		e.targets = append(e.targets, target{"rlserver", cfg.rlserver, c, false})
		if err := c.Ping(ctx).Err(); err != nil {
			e.close()
			return nil, fmt.Errorf("rlserver %s: %w", cfg.rlserver, err)
		}
	}
	return e, nil
}

// newClient is a go-redis client that never retries: a retried call whose reply
// was lost would count twice.
func newClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 64})
}

// startServer runs an rlserver in-process on a free loopback port, with DEBUG
// CLOCK on: the memory experiment fills logs at set moments.
func startServer() (string, func(), error) {
	srv, err := resp.NewServer(resp.Config{EnableDebugCommand: true}) // memory sets the clock
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	return ln.Addr().String(), func() { srv.Close(); <-done }, nil
}

// errNoRedis says how to get redis-server when -start cannot find it.
var errNoRedis = errors.New("redis-server not on PATH: install it (apt-get install redis-server, brew install redis) or give -rlserver alone")

// startRedis runs a redis-server without persistence on a free loopback port.
func startRedis() (string, func(), error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, errNoRedis
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "rlbench-redis-")
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() { cmd.Process.Kill(); <-exited; os.RemoveAll(dir) }
	c := newClient(addr)
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err = c.Ping(context.Background()).Err(); err == nil {
			return addr, stop, nil
		}
		select {
		case <-exited:
			stop()
			return "", nil, fmt.Errorf("redis-server exited: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("redis-server did not answer in 10 s: %w", err)
		}
	}
}

// caller is a client or a pipeline.
type caller interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
	EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd
}

// call makes (or, on a pipeline, queues) one call of r on key, at the server's own time.
func (t target) call(ctx context.Context, c caller, key string, r algo.Request) *redis.Cmd {
	if t.script {
		return c.EvalSha(ctx, lua.Named(r.Kind.Command()).SHA1, []string{key}, lua.Args(r)...)
	}
	return c.Do(ctx, command(r, key)...)
}

// words is the call of r on key as the words sent on the wire.
func (t target) words(key string, r algo.Request) []string {
	var args []any
	if t.script {
		args = append([]any{"EVALSHA", lua.Named(r.Kind.Command()).SHA1, 1, key}, lua.Args(r)...)
	} else {
		args = command(r, key)
	}
	w := make([]string, len(args))
	for i, a := range args {
		w[i] = fmt.Sprint(a)
	}
	return w
}

// command is r as rlserver takes it.
func command(r algo.Request, key string) []any {
	args := []any{strings.ToUpper(r.Kind.Command()), key}
	if r.Kind == algo.KindThrottle {
		return append(args, r.Limit, r.Rate, r.Window/1_000_000, r.Cost)
	}
	args = append(args, r.Limit, r.Window/1000, "COST", r.Cost)
	if r.Peek {
		args = append(args, "PEEK")
	}
	return args
}

// request is a cost-1 call of kind at limit per windowMs (CL.THROTTLE: max_burst
// limit-1 and limit per windowMs/1000 s, the same capacity).
func request(kind algo.Kind, limit, windowMs int64) algo.Request {
	r := algo.Request{Kind: kind, Limit: limit, Window: windowMs * 1000, Cost: 1}
	if kind == algo.KindThrottle {
		r.Limit, r.Rate = limit-1, limit
	}
	return r
}

// allowed reads a reply's first field: 1 = allowed for RL.*, 0 = allowed for CL.THROTTLE.
func allowed(kind algo.Kind, cmd *redis.Cmd) (bool, error) {
	v, err := cmd.Int64Slice()
	if err != nil {
		return false, err
	}
	if len(v) != 5 {
		return false, fmt.Errorf("reply %v: want 5 integers", v)
	}
	return (v[0] == 1) != (kind == algo.KindThrottle), nil
}
