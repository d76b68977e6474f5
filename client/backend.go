package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/lua"
	"github.com/rlserver/rlserver/store"
)

// commandNames are the RL.* commands by algorithm, upper case as people type them
// (MONITOR and slow logs show them so).
var commandNames = [...]string{algo.KindFixed: "RL.FIXED", algo.KindSlide: "RL.SLIDE", algo.KindLog: "RL.LOG",
	algo.KindToken: "RL.TOKEN", algo.KindGCRA: "RL.GCRA", algo.KindLeaky: "RL.LEAKY"}

// serverBackend is rlserver, called with its native commands.
type serverBackend struct{ rdb redis.UniversalClient }

func (s serverBackend) decide(ctx context.Context, key string, r algo.Request) (algo.Decision, error) {
	args := make([]any, 0, 9)
	args = append(args, commandNames[r.Kind], key, r.Limit, r.Window/1000, "COST", r.Cost)
	switch r.Kind {
	case algo.KindToken:
		args = append(args, "RATE", r.Rate)
	case algo.KindGCRA:
		args = append(args, "BURST", r.Burst)
	case algo.KindLeaky:
		args = append(args, "QUEUE", r.Queue)
	}
	if r.Peek {
		args = append(args, "PEEK")
	}
	return decision(s.rdb.Do(ctx, args...))
}

func (s serverBackend) reset(ctx context.Context, key string) error {
	if err := s.rdb.Do(ctx, "RL.RESET", key).Err(); err != nil {
		return classify(err)
	}
	return nil
}

// luaBackend is Redis (or Valkey, or a cluster) running package lua's scripts.
type luaBackend struct {
	rdb         redis.UniversalClient
	maxLogLimit int64 // the scripts trust their arguments: rlserver's check is made here
}

// scripts are package lua's scripts by algorithm, looked up once.
var scripts = func() (s [len(commandNames)]lua.Script) {
	for k := range commandNames {
		if k > 0 {
			s[k] = lua.Scripts[algo.Kind(k).Command()]
		}
	}
	return s
}()

func (b luaBackend) decide(ctx context.Context, key string, r algo.Request) (algo.Decision, error) {
	if err := checkLogLimit(r, b.maxLogLimit); err != nil {
		return algo.Decision{}, err
	}
	args := lua.Args(r)
	keys := []string{key}
	sc := scripts[r.Kind]
	cmd := b.rdb.EvalSha(ctx, sc.SHA1, keys, args...)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		// First call on this node, or after SCRIPT FLUSH or a restart: EVAL runs the
		// script and caches it, so the next EVALSHA finds it.
		cmd = b.rdb.Eval(ctx, sc.Source, keys, args...)
	}
	return decision(cmd)
}

func (b luaBackend) reset(ctx context.Context, key string) error {
	if err := b.rdb.Del(ctx, key).Err(); err != nil {
		return classify(err)
	}
	return nil
}

// checkLogLimit refuses a Log limit above most, as rlserver does above its
// -max-log-limit.
func checkLogLimit(r algo.Request, most int64) error {
	if r.Kind == algo.KindLog && r.Limit > most {
		return fmt.Errorf("%w: rl.log limit must be between 1 and %d (Options.MaxLogLimit), got %d", ErrBadLimit, most, r.Limit)
	}
	return nil
}

// decision reads a five-integer reply.
func decision(cmd *redis.Cmd) (algo.Decision, error) {
	v, err := cmd.Int64Slice()
	if err != nil {
		return algo.Decision{}, classify(err)
	}
	if len(v) != 5 {
		return algo.Decision{}, fmt.Errorf("%w: %d integers in the reply to %v, want 5", ErrUnavailable, len(v), cmd.Args()[0])
	}
	return algo.Decision{Allowed: v[0] == 1, Limit: v[1], Remaining: v[2], RetryAfter: v[3], ResetAfter: v[4]}, nil
}

// classify wraps a go-redis error in the sentinel it means. The server's argument
// errors read "ERR <argument> must be ..." (COMMANDS.md); anything else that is not
// WRONGTYPE, network errors and timeouts included, means no decision came back.
func classify(err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		switch {
		case strings.HasPrefix(msg, "WRONGTYPE"):
			return fmt.Errorf("%w: %w", ErrWrongType, err)
		case strings.HasPrefix(msg, "ERR ") && strings.Contains(msg, " must be "):
			return fmt.Errorf("%w: %w", ErrBadLimit, err)
		}
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// embeddedBackend is an in-process store on the local clock.
type embeddedBackend struct {
	store       *store.Store
	clock       func() time.Time
	maxLogLimit int64
}

func (e embeddedBackend) decide(_ context.Context, key string, r algo.Request) (algo.Decision, error) {
	if err := checkLogLimit(r, e.maxLogLimit); err != nil {
		return algo.Decision{}, err
	}
	d, err := e.store.Do([]byte(key), r, e.clock().UnixMicro())
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, store.ErrWrongType):
		return d, fmt.Errorf("%w: %w", ErrWrongType, err)
	}
	return d, fmt.Errorf("%w: %w", ErrBadLimit, err) // store.ErrKeyTooLong
}

func (e embeddedBackend) reset(_ context.Context, key string) error {
	e.store.Delete([]byte(key), e.clock().UnixMicro())
	return nil
}
