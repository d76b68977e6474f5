// Package lua holds the reference Lua scripts: one per rlserver command, for plain Redis
// (EVAL, or EVALSHA with the SHA1 given here), deciding exactly as rlserver does.
//
// They are the Redis + Lua rate limiters of the lab docs/experiments.md reproduces (the
// README's "lesson"), made to follow docs/commands.md to
// the bit: package algo's integer µs for the GCRA family and RL.LEAKY (below 2^53,
// where doubles are exact), its float64 formulas in the same order of operations for
// RL.SLIDE and RL.TOKEN, with its one-ms settling of retry_after; state read back
// exactly (doubles written with %.17g, where Redis would print a Lua number with 14
// digits; an integer tat with %d, a float one from older scripts rounded up); time from
// Redis TIME in µs. Each script runs atomically, and only an allowed call with cost > 0
// that is not PEEK writes (a lease script also drops the ended leases it finds; under
// now_us any script drops a key whose state is fresh). A write gives the key a TTL of
// reset_after (a lease set: until its last lease ends), rounded up to
// the ms (CL.THROTTLE, whose reply is in seconds: its state's lifetime in ms), so that
// no key outlives its state; a state written already fresh deletes the key. Redis
// expires keys to the ms, so a key may outlive its state by under 2 ms: read in that
// time, the state decides as a fresh key does. The compatibility suite
// (../compat_test.go, ../compat_all_test.go) replays random calls against these
// scripts on a real Redis and against rlserver and requires identical replies.
//
// # Arguments
//
// KEYS[1] is the user's key. ARGV holds the command's positional arguments, then
// cost, then the PEEK flag, then the algorithm's one option (always present: pass its
// default), then an optional now_us:
//
//	rl.fixed, rl.slide, rl.log   limit window_ms cost peek [now_us]
//	rl.token                     capacity window_ms cost peek rate [now_us]    rate 0 = capacity
//	rl.gcra                      limit window_ms cost peek burst [now_us]      burst 0 = limit
//	rl.leaky                     limit window_ms cost peek queue [now_us]
//	cl.throttle                  max_burst count_per_period period_s quantity [now_us]
//	gcra                         max_burst tokens_per_period period tokens [now_us]
//
// gcra is Redis 8.8's native GCRA command: period is a float of seconds written so that
// it reads back as the double rlserver parsed (Args writes the shortest such decimal),
// and the script derives the emission interval from it in doubles, as Redis does. It
// decides on the call's time floored to the ms and keeps the key until its tat rounded
// up to the ms, as Redis and rlserver do. Its state is its own (below): rl.gcra answers
// WRONGTYPE on its keys and it on rl.gcra's. It is not a rule of rl.all, whose GCRA
// rules are RL.GCRA's.
//
// peek is 1 for PEEK, 0 otherwise. A cost (CL.THROTTLE: quantity) of -n is REFUND n
// (algo.Request.Refund; Args writes it so): the script gives back n as algo/refund.go
// does, writes the state it leaves unless peek, and answers as a PEEK of cost 0 would on
// it. Redis's GCRA has no refund, as the command has none. Each script answers the same five integers as its
// command, or WRONGTYPE. Arguments are assumed valid: rlserver validates them, a
// client running these scripts must too.
//
// rl.all takes every rule's key in KEYS, in rule order (hash-tag them to one slot on a
// Redis Cluster), and in ARGV the call's peek flag, then for each rule its script's
// name and that script's ARGV without now_us (its peek 0), then the optional now_us
// (ArgsAll builds both). It answers RL.ALL's array: allowed, then each rule's five,
// or the error of the first rule that has one (WRONGTYPE), or ERR for a key named twice.
//
// The lease scripts take one key and answer as their commands (id "" draws one: 16
// lower-case hex digits, new in the key):
//
//	rl.acquire   limit lease_ms id [now_us]    -> acquired limit remaining retry_after_ms lease_id
//	rl.release   lease_id [now_us]             -> 1 or 0
//	rl.renew     lease_id lease_ms [now_us]    -> 1 or 0
//
// rl.acquire's lease_id is a nil bulk (RESP3: null) when no lease was taken.
//
// # Composition
//
// EVALSHA runs one script, so each Source must hold all it uses. The parts every
// script shares live once in common.lua: local functions reading now (now_us or
// TIME, with the self-expiry below), ms, fresh_in, the retry settling, the type check
// of a hash state, the emission interval, the tat reader, and keep, which writes the
// expire time. Each command's file is only
// its body: its header (ARGV layout, state, reply), its arguments and its algorithm.
// Source is common.lua followed by the body, joined once at package init; SHA1 is that
// of the whole. A body alone is not a valid script: send Source (or cat common.lua
// before the body). The lease scripts have a shared part of their own, leases.lua,
// between the two. rl.all holds each window and bucket script whole, wrapped as a
// local function taking KEYS and ARGV (rule_fixed ... rule_leaky), then its main part,
// all.lua: the rules decide as PEEK, and only if all admit do they run again for real.
//
// # Injected time
//
// now_us is for tests only: it replaces Redis TIME. Since Redis's own expiry cannot
// follow an injected clock, the script then stores the key's fresh-at moment in µs as
// its expire time (PEXPIREAT: read as ms it is tens of thousands of years away, so Redis
// never fires it) and drops the key itself once now_us reaches it, which is exactly
// when rlserver drops it. That mode needs Redis 7 (PEXPIRETIME); without now_us the
// scripts need Redis 5 or later (writes after TIME, replicated as effects).
//
// # State and types
//
// A key is recognised by its Redis type and the field its script writes: rl.fixed is a
// hash {fw, fc}, rl.slide {sw, sc, sp}, rl.token {tk, ts}, rl.gcra {gt}, gcra {gn}, rl.leaky {lt},
// cl.throttle {ct}; rl.log is a sorted set of "ts:cost" members scored by ts (µs), one
// per admitted moment; a lease set is a sorted set of "l:id" members scored by the
// lease's deadline (µs), the key living until the last one. Any other existing key
// answers WRONGTYPE, as rlserver does.
package lua

import (
	"crypto/sha1"
	_ "embed" // the scripts' parts
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/algo"
)

// Script is one reference script.
type Script struct {
	Command string // the rlserver command it reproduces, lower case: "rl.fixed", ..., "cl.throttle", "rl.all", "rl.acquire", ...
	Source  string // the Lua text, for EVAL and SCRIPT LOAD
	SHA1    string // lower-case hex SHA1 of Source: the name EVALSHA takes and SCRIPT LOAD returns
}

var (
	//go:embed common.lua
	common string
	//go:embed fixed.lua
	fixedBody string
	//go:embed slide.lua
	slideBody string
	//go:embed log.lua
	logBody string
	//go:embed token.lua
	tokenBody string
	//go:embed gcra.lua
	gcraBody string
	//go:embed leaky.lua
	leakyBody string
	//go:embed throttle.lua
	throttleBody string
	//go:embed gcra_native.lua
	gcraNativeBody string
	//go:embed all.lua
	allMain string
	//go:embed leases.lua
	leases string
	//go:embed acquire.lua
	acquireBody string
	//go:embed release.lua
	releaseBody string
	//go:embed renew.lua
	renewBody string
)

// scripts maps each command, lower case as algo.Kind.Command spells it, to its script
// (Redis's native GCRA is "gcra"). Unexported, so that no
// importer can replace a script under the client's feet: Named and Commands read it.
var scripts = map[string]Script{
	"rl.fixed":    singleScript("rl.fixed", fixedBody),
	"rl.slide":    singleScript("rl.slide", slideBody),
	"rl.log":      singleScript("rl.log", logBody),
	"rl.token":    singleScript("rl.token", tokenBody),
	"rl.gcra":     singleScript("rl.gcra", gcraBody),
	"rl.leaky":    singleScript("rl.leaky", leakyBody),
	"cl.throttle": singleScript("cl.throttle", throttleBody),
	"gcra":        singleScript("gcra", gcraNativeBody),
	"rl.all": newScript("rl.all", wrap("rule_fixed", fixedBody), wrap("rule_slide", slideBody),
		wrap("rule_log", logBody), wrap("rule_token", tokenBody), wrap("rule_gcra", gcraBody),
		wrap("rule_leaky", leakyBody), allMain),
	"rl.acquire": newScript("rl.acquire", common, leases, acquireBody),
	"rl.release": newScript("rl.release", common, leases, releaseBody),
	"rl.renew":   newScript("rl.renew", common, leases, renewBody),
}

// Named returns the script of command, lower case as algo.Kind.Command spells it
// ("gcra" for Redis's native GCRA); the zero Script if it has none.
func Named(command string) Script { return scripts[command] }

// Commands lists the commands that have a script, sorted.
func Commands() []string { return slices.Sorted(maps.Keys(scripts)) }

// singleScript is the script of a one-key command: common.lua, then its body.
func singleScript(command, body string) Script { return newScript(command, common, body) }

// newScript makes the script of command from its parts, joined in order.
func newScript(command string, parts ...string) Script {
	source := strings.Join(parts, "")
	sum := sha1.Sum([]byte(source))
	return Script{Command: command, Source: source, SHA1: hex.EncodeToString(sum[:])}
}

// wrap is a one-key script, common.lua and body, as rl.all's local function name
// taking KEYS and ARGV: its locals and its returns stay its own.
func wrap(name, body string) string {
	return "local function " + name + "(KEYS, ARGV)\n" + common + body + "end\n"
}

// For is the script that decides r: its command's.
func For(r algo.Request) Script { return scripts[r.Kind.Command()] }

// Args is r as its script takes it in ARGV (see Arguments above), without now_us: the
// one place that maps a parsed request onto the scripts' layout. A request of Redis's
// native GCRA (rlcmd.ParseGCRA, algo.NativeGCRA: KindRedisGCRA) is the gcra script's.
func Args(r algo.Request) []any {
	switch {
	case r.Kind == algo.KindThrottle:
		return []any{r.Limit, r.Rate, r.Window / 1_000_000, cost(r)}
	case r.Kind == algo.KindRedisGCRA:
		// The shortest decimal that reads back as the same double, as strtod reads it.
		return []any{r.Limit, r.Rate, strconv.FormatFloat(r.Period, 'g', -1, 64), r.Cost}
	}
	peek := 0
	if r.Peek {
		peek = 1
	}
	args := []any{r.Limit, r.Window / 1000, cost(r), peek}
	switch r.Kind {
	case algo.KindToken:
		args = append(args, r.Rate)
	case algo.KindGCRA:
		args = append(args, r.Burst)
	case algo.KindLeaky:
		args = append(args, r.Queue)
	}
	return args
}

// cost is r's cost as the scripts take it: -n for a refund of n.
func cost(r algo.Request) int64 {
	if r.Refund > 0 {
		return -r.Refund
	}
	return r.Cost
}

// ArgsAll is rules as the rl.all script takes them (see Arguments above): their keys,
// in order, for KEYS, and ARGV without now_us. PEEK on any rule makes the call a PEEK.
func ArgsAll(rules []algo.Rule) (keys []string, args []any) {
	keys = make([]string, len(rules))
	args = []any{0}
	for i, rule := range rules {
		keys[i] = string(rule.Key)
		if rule.Req.Peek {
			args[0] = 1
		}
		req := rule.Req
		req.Peek = false
		args = append(args, req.Kind.Command())
		args = append(args, Args(req)...)
	}
	return keys, args
}
