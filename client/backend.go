package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/reply"
	"github.com/rlserver/rlserver/internal/rlcmd"
	"github.com/rlserver/rlserver/lua"
	"github.com/rlserver/rlserver/store"
)

// serverBackend is rlserver, called with its native commands.
type serverBackend struct{ send sender }

func (s serverBackend) decide(ctx context.Context, key string, r algo.Request) (algo.Decision, error) {
	return decision(do(ctx, s.send, rlcmd.AppendRequest(append(make([]any, 0, 11), rlcmd.Name(r.Kind), key), r)...))
}

func (s serverBackend) decideAll(ctx context.Context, rules []algo.Rule) (bool, []algo.Decision, error) {
	cmd := redis.NewCmd(ctx, rlcmd.AppendRLAll(append(make([]any, 0, 1+8*len(rules)), "RL.ALL"), rules)...)
	// RL.ALL's keys move (COMMAND INFO says movablekeys): a Ring or a cluster client
	// routes by the first rule's key, always the second argument.
	cmd.SetFirstKeyPos(2)
	return allDecisions(s.send.send(ctx, string(rules[0].Key), cmd), len(rules))
}

func (s serverBackend) acquire(ctx context.Context, key string, r algo.LeaseRequest) (algo.LeaseDecision, error) {
	return leaseDecision(do(ctx, s.send, rlcmd.AppendAcquire([]any{"RL.ACQUIRE", key}, r)...))
}

func (s serverBackend) release(ctx context.Context, key, id string) (bool, error) {
	return flag(do(ctx, s.send, "RL.RELEASE", key, id))
}

func (s serverBackend) renew(ctx context.Context, key, id string, duration int64) (bool, error) {
	return flag(do(ctx, s.send, "RL.RENEW", key, id, duration/1000))
}

func (s serverBackend) reset(ctx context.Context, key string) error {
	if err := do(ctx, s.send, "RL.RESET", key).Err(); err != nil {
		return classify(err)
	}
	return nil
}

// luaBackend is Redis (or Valkey, or a cluster) running package lua's scripts.
type luaBackend struct {
	send        sender
	maxLogLimit int64 // the scripts trust their arguments: rlserver's check is made here
}

// scripts are package lua's scripts by algorithm, looked up once.
var scripts = func() (s [algo.KindLeaky + 1]lua.Script) {
	for k := algo.KindFixed; k <= algo.KindLeaky; k++ {
		s[k] = lua.Named(k.Command())
	}
	return s
}()

func (b luaBackend) decide(ctx context.Context, key string, r algo.Request) (algo.Decision, error) {
	if err := checkLogLimit(r, b.maxLogLimit); err != nil {
		return algo.Decision{}, err
	}
	if r.Reserve > 0 {
		return algo.Decision{}, errLuaReserve
	}
	return decision(b.eval(ctx, scripts[r.Kind], []string{key}, lua.Args(r)))
}

// errLuaReserve: the reference scripts have no RESERVE.
var errLuaReserve = fmt.Errorf("%w: a reserve (WithReserve, Priorities, AcquireReserving) needs rlserver or the embedded backend, not Lua", ErrBadLimit)

// eval runs sc by its SHA1, and by its source when the server does not have it.
func (b luaBackend) eval(ctx context.Context, sc lua.Script, keys []string, args []any) *redis.Cmd {
	cmd := b.send.send(ctx, keys[0], evalCmd(ctx, "evalsha", sc.SHA1, keys, args))
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		// First call on this node, or after SCRIPT FLUSH or a restart: EVAL runs the
		// script and caches it, so the next EVALSHA finds it.
		cmd = b.send.send(ctx, keys[0], evalCmd(ctx, "eval", sc.Source, keys, args))
	}
	return cmd
}

// evalCmd is EVAL or EVALSHA (name) of script on keys and args, routed by its first
// key, as go-redis's rdb.Eval makes it.
func evalCmd(ctx context.Context, name, script string, keys []string, args []any) *redis.Cmd {
	words := make([]any, 0, 3+len(keys)+len(args))
	words = append(words, name, script, len(keys))
	for _, k := range keys {
		words = append(words, k)
	}
	cmd := redis.NewCmd(ctx, append(words, args...)...)
	cmd.SetFirstKeyPos(3)
	return cmd
}

// The scripts of RL.ALL and the leases, looked up once.
var (
	scriptAll     = lua.Named("rl.all")
	scriptAcquire = lua.Named("rl.acquire")
	scriptRelease = lua.Named("rl.release")
	scriptRenew   = lua.Named("rl.renew")
)

func (b luaBackend) decideAll(ctx context.Context, rules []algo.Rule) (bool, []algo.Decision, error) {
	for _, r := range rules {
		if r.Req.Reserve > 0 {
			return false, nil, errLuaReserve
		}
	}
	for _, r := range rules {
		if err := checkLogLimit(r.Req, b.maxLogLimit); err != nil {
			return false, nil, err
		}
	}
	keys, args := lua.ArgsAll(rules)
	return allDecisions(b.eval(ctx, scriptAll, keys, args), len(rules))
}

func (b luaBackend) acquire(ctx context.Context, key string, r algo.LeaseRequest) (algo.LeaseDecision, error) {
	if err := checkLeaseLimit(r, b.maxLogLimit); err != nil {
		return algo.LeaseDecision{}, err
	}
	if r.Reserve > 0 {
		return algo.LeaseDecision{}, errLuaReserve
	}
	// An empty id asks the script to draw one; the client never sends an empty ID.
	return leaseDecision(b.eval(ctx, scriptAcquire, []string{key}, []any{r.Limit, r.Duration / 1000, string(r.ID)}))
}

func (b luaBackend) release(ctx context.Context, key, id string) (bool, error) {
	return flag(b.eval(ctx, scriptRelease, []string{key}, []any{id}))
}

func (b luaBackend) renew(ctx context.Context, key, id string, duration int64) (bool, error) {
	return flag(b.eval(ctx, scriptRenew, []string{key}, []any{id, duration / 1000}))
}

func (b luaBackend) reset(ctx context.Context, key string) error {
	if err := do(ctx, b.send, "DEL", key).Err(); err != nil {
		return classify(err)
	}
	return nil
}

// checkLogLimit refuses a Log limit above most, as rlserver does above its
// -max-log-limit.
func checkLogLimit(r algo.Request, most int64) error {
	if r.Kind == algo.KindLog && r.Limit > most {
		return fmt.Errorf("%w: rl.log limit must be between 1 and %d (the MaxLogLimit option), got %d", ErrBadLimit, most, r.Limit)
	}
	return nil
}

// checkLeaseLimit refuses a lease limit above most, as rlserver does above its
// -max-log-limit.
func checkLeaseLimit(r algo.LeaseRequest, most int64) error {
	if r.Limit > most {
		return fmt.Errorf("%w: rl.acquire limit must be between 1 and %d (the MaxLogLimit option), got %d", ErrBadLimit, most, r.Limit)
	}
	return nil
}

// allDecisions reads RL.ALL's reply to n rules: allowed, then n arrays of five integers.
func allDecisions(cmd *redis.Cmd, n int) (bool, []algo.Decision, error) {
	v, err := cmd.Slice()
	if err != nil {
		return false, nil, classify(err)
	}
	var allowed int64
	ok := len(v) == 1+n
	if ok {
		allowed, ok = v[0].(int64)
	}
	if !ok {
		return false, nil, fmt.Errorf("%w: malformed RL.ALL reply %v to %d rules", ErrUnavailable, v, n)
	}
	ds := make([]algo.Decision, n)
	for i := range ds {
		f, ok := v[1+i].([]any)
		var ints [5]int64
		for j := 0; ok && j < 5 && len(f) == 5; j++ {
			ints[j], ok = f[j].(int64)
		}
		if !ok || len(f) != 5 {
			return false, nil, fmt.Errorf("%w: malformed RL.ALL reply %v: rule %d", ErrUnavailable, v, i+1)
		}
		ds[i] = algo.Decision{Allowed: ints[0] == 1, Limit: ints[1], Remaining: ints[2], RetryAfter: micros(ints[3]), ResetAfter: micros(ints[4])}
	}
	return allowed == 1, ds, nil
}

// leaseDecision reads RL.ACQUIRE's reply: four integers and the id, nil when not acquired.
func leaseDecision(cmd *redis.Cmd) (algo.LeaseDecision, error) {
	v, err := cmd.Slice()
	if err != nil {
		return algo.LeaseDecision{}, classify(err)
	}
	var ints [4]int64
	ok := len(v) == 5
	for j := 0; ok && j < 4; j++ {
		ints[j], ok = v[j].(int64)
	}
	if !ok {
		return algo.LeaseDecision{}, fmt.Errorf("%w: malformed RL.ACQUIRE reply %v", ErrUnavailable, v)
	}
	d := algo.LeaseDecision{Acquired: ints[0] == 1, Limit: ints[1], Remaining: ints[2], RetryAfter: micros(ints[3])}
	if id, isString := v[4].(string); isString && d.Acquired {
		d.ID = []byte(id)
	}
	return d, nil
}

// flag reads a reply of 1 or 0.
func flag(cmd *redis.Cmd) (bool, error) {
	n, err := cmd.Int64()
	if err != nil {
		return false, classify(err)
	}
	return n == 1, nil
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
	return algo.Decision{Allowed: v[0] == 1, Limit: v[1], Remaining: v[2], RetryAfter: micros(v[3]), ResetAfter: micros(v[4])}, nil
}

// micros is a time of the wire, in ms, as a Decision's µs; -1 (never) stays -1.
func micros(ms int64) int64 {
	if ms < 0 {
		return -1
	}
	return ms * 1000
}

// classify wraps a go-redis error in the sentinel it means. A reply is ErrWrongType
// or ErrBadLimit by its first word where Redis gives it a word of its own (WRONGTYPE,
// CROSSSLOT: AllowAll's keys over several cluster slots), and by the exact set of
// rlserver's refusals of a request (reply.BadRequest) among the replies Redis starts
// with "ERR", which also says "ERR" for conditions of the server; anything else,
// network errors and timeouts included, means no decision came back.
func classify(err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		switch {
		case strings.HasPrefix(msg, "WRONGTYPE"):
			return fmt.Errorf("%w: %w", ErrWrongType, err)
		case strings.HasPrefix(msg, "CROSSSLOT"), reply.BadRequest(msg):
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
	return e.decideAt(key, r, e.clock())
}

// decideAt is decide at now.
func (e embeddedBackend) decideAt(key string, r algo.Request, now time.Time) (algo.Decision, error) {
	if err := checkLogLimit(r, e.maxLogLimit); err != nil {
		return algo.Decision{}, err
	}
	d, err := e.store.Do([]byte(key), r, now.UnixMicro())
	return d, storeError(err)
}

func (e embeddedBackend) decideAll(_ context.Context, rules []algo.Rule) (bool, []algo.Decision, error) {
	for _, r := range rules {
		if err := checkLogLimit(r.Req, e.maxLogLimit); err != nil {
			return false, nil, err
		}
	}
	ds := make([]algo.Decision, len(rules))
	allowed, err := e.store.DoAll(rules, ds, e.clock().UnixMicro())
	if err != nil {
		return false, nil, storeError(err)
	}
	return allowed, ds, nil
}

func (e embeddedBackend) acquire(_ context.Context, key string, r algo.LeaseRequest) (algo.LeaseDecision, error) {
	if err := checkLeaseLimit(r, e.maxLogLimit); err != nil {
		return algo.LeaseDecision{}, err
	}
	d, err := e.store.Acquire([]byte(key), r, e.clock().UnixMicro())
	return d, storeError(err)
}

func (e embeddedBackend) release(_ context.Context, key, id string) (bool, error) {
	ok, err := e.store.Release([]byte(key), []byte(id), e.clock().UnixMicro())
	return ok, storeError(err)
}

func (e embeddedBackend) renew(_ context.Context, key, id string, duration int64) (bool, error) {
	ok, err := e.store.Renew([]byte(key), []byte(id), duration, e.clock().UnixMicro())
	return ok, storeError(err)
}

// storeError wraps a store error in the sentinel it means, nil as nil.
func storeError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrWrongType):
		return fmt.Errorf("%w: %w", ErrWrongType, err)
	}
	return fmt.Errorf("%w: %w", ErrBadLimit, err) // store.ErrKeyTooLong, store.ErrSameKey
}

func (e embeddedBackend) reset(_ context.Context, key string) error {
	e.store.Delete([]byte(key), e.clock().UnixMicro())
	return nil
}
