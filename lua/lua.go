// Package lua holds the reference Lua scripts: one per rlserver command, for plain Redis
// (EVAL, or EVALSHA with the SHA1 given here), deciding exactly as rlserver does.
//
// They are the lesson's Redis-plus-Lua rate limiters made to follow COMMANDS.md to the
// bit: package algo's float64 formulas in the same order of operations, with its
// shortcuts and its one-ms settling of retry_after; state read back exactly (doubles
// written with %.17g, where Redis would print a Lua number with 14 digits); time from
// Redis TIME in µs. Each script runs atomically, and only an allowed call with cost > 0
// that is not PEEK writes. A write gives the key a TTL of reset_after, rounded up to
// the ms (CL.THROTTLE, whose reply is in seconds: its state's lifetime in ms), so that
// no key outlives its state; a state written already fresh deletes the key. Redis
// expires keys to the ms, so a key may outlive its state by under 2 ms: read in that
// time, the state decides as a fresh key does. The compatibility suite
// (../compat_test.go) replays random calls against these scripts on a real Redis and
// against rlserver and requires identical replies.
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
//
// peek is 1 for PEEK, 0 otherwise. Each script answers the same five integers as its
// command, or WRONGTYPE. Arguments are assumed valid: rlserver validates them, a
// client running these scripts must too.
//
// # Composition
//
// EVALSHA runs one script, so each Source must hold all it uses. The parts every
// script shares live once in common.lua: local functions reading now (now_us or
// TIME, with the self-expiry below), ms, fresh_in, the retry settling, the type check
// of a hash state, and keep, which writes the expire time. Each command's file is only
// its body: its header (ARGV layout, state, reply), its arguments and its algorithm.
// Source is common.lua followed by the body, joined once at package init; SHA1 is that
// of the whole. A body alone is not a valid script: send Source (or cat common.lua
// before the body).
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
// hash {fw, fc}, rl.slide {sw, sc, sp}, rl.token {tk, ts}, rl.gcra {gt}, rl.leaky {lt},
// cl.throttle {ct}; rl.log is a sorted set of "ts:cost" members scored by ts (µs), one
// per admitted moment. Any other existing key answers WRONGTYPE, as rlserver does.
package lua

import (
	"crypto/sha1"
	_ "embed" // the scripts' parts
	"encoding/hex"

	"github.com/rlserver/rlserver/algo"
)

// Script is one reference script.
type Script struct {
	Command string // the rlserver command it reproduces, lower case: "rl.fixed", ..., "cl.throttle"
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
)

// Scripts maps each command, lower case as algo.Kind.Command spells it, to its script.
var Scripts = map[string]Script{
	"rl.fixed":    newScript("rl.fixed", fixedBody),
	"rl.slide":    newScript("rl.slide", slideBody),
	"rl.log":      newScript("rl.log", logBody),
	"rl.token":    newScript("rl.token", tokenBody),
	"rl.gcra":     newScript("rl.gcra", gcraBody),
	"rl.leaky":    newScript("rl.leaky", leakyBody),
	"cl.throttle": newScript("cl.throttle", throttleBody),
}

// newScript makes the script of command from its body: common.lua, then the body.
func newScript(command, body string) Script {
	source := common + body
	sum := sha1.Sum([]byte(source))
	return Script{Command: command, Source: source, SHA1: hex.EncodeToString(sum[:])}
}

// Args is r as its script takes it in ARGV (see Arguments above), without now_us: the
// one place that maps a parsed request onto the scripts' layout.
func Args(r algo.Request) []any {
	if r.Kind == algo.KindThrottle {
		return []any{r.Limit, r.Rate, r.Window / 1_000_000, r.Cost}
	}
	peek := 0
	if r.Peek {
		peek = 1
	}
	args := []any{r.Limit, r.Window / 1000, r.Cost, peek}
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
