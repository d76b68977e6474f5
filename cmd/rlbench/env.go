package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/lab"
	"github.com/rlserver/rlserver/internal/launch"
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
	_, addr, stop, err := launch.InProcess(resp.Config{EnableDebugCommand: true})
	if err != nil {
		return "", nil, err
	}
	return addr, func() { stop() }, nil
}

// startRedis runs a redis-server without persistence on a free loopback port, in a
// directory of its own that goes with it.
func startRedis() (string, func(), error) {
	dir, err := os.MkdirTemp("", "rlbench-redis-")
	if err != nil {
		return "", nil, err
	}
	p, err := launch.Redis(dir)
	if err != nil {
		os.RemoveAll(dir)
		if errors.Is(err, launch.ErrNoRedis) {
			err = fmt.Errorf("%w, or give -rlserver alone", err)
		}
		return "", nil, err
	}
	return p.Addr, func() { p.Kill(); os.RemoveAll(dir) }, nil
}

// call makes (or, on a pipeline, queues) one call of r on key, at the server's own time.
func (t target) call(ctx context.Context, c lab.Caller, key string, r algo.Request) *redis.Cmd {
	return lab.Call(ctx, c, t.script, key, r)
}

// words is the call of r on key as the words sent on the wire.
func (t target) words(key string, r algo.Request) []string {
	var args []any
	if t.script {
		args = append([]any{"EVALSHA", lua.Named(r.Kind.Command()).SHA1, 1, key}, lua.Args(r)...)
	} else {
		args = lab.Command(r, key, nil)
	}
	w := make([]string, len(args))
	for i, a := range args {
		w[i] = fmt.Sprint(a)
	}
	return w
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
