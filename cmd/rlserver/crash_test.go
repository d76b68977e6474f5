package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/lua"
)

// The crash test: connections spend RL.FIXED, RL.TOKEN, RL.LOG and RL.ACQUIRE keys
// while the server is killed with SIGKILL at a random moment, crashRounds times;
// after each restart every key must hold at least the spends that were
// acknowledged (appendfsync always: none lost), and at most those sent. The same
// harness runs redis-server with appendonly yes on the lua/ scripts, side by side.
// Limits are far above what a round spends and windows a year long, so every call
// is admitted and writes, and a key's spends read back exactly from its remaining
// (RL.TOKEN's bucket refills one token a year).
const (
	crashConns     = 8
	crashLimit     = 100_000 // RL.LOG's default -max-log-limit
	crashWindowMs  = 31_536_000_000
	crashMinUptime = 100 * time.Millisecond
	crashMaxUptime = 400 * time.Millisecond
)

// crashRounds is 20, or RLSERVER_CRASH_ROUNDS.
func crashRounds() int {
	if n, err := strconv.Atoi(os.Getenv("RLSERVER_CRASH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 20
}

// crashTarget is a server under test: how to start it on addr in dir, and how a
// call is sent to it.
type crashTarget struct {
	name  string
	start func(addr, dir string) (*launch.Proc, error)
	// call spends 1 on key of kind (or PEEKs, or for a lease acquires one) and
	// returns the reply's remaining.
	call func(ctx context.Context, rdb *redis.Client, kind, key string, peek bool) (int64, error)
}

// crashKinds are the commands spent, one key each per connection and round.
var crashKinds = []string{"rl.fixed", "rl.token", "rl.log", "rl.acquire"}

func rlserverTarget(bin, fsync string) crashTarget {
	name, aofArgs := "rlserver appendfsync "+fsync, []string{"--appendonly", "yes", "--appendfsync", fsync}
	if fsync == "" {
		name, aofArgs = "rlserver appendonly no", nil
	}
	return crashTarget{name: name,
		start: func(addr, dir string) (*launch.Proc, error) {
			log, err := launch.LogIn(dir, "rlserver")
			if err != nil {
				return nil, err
			}
			return launch.Start(launch.Spec{Name: "rlserver", Addr: addr, Log: log,
				Argv: append([]string{bin, "-addr", addr, "--dir", dir}, aofArgs...)})
		},
		call: func(ctx context.Context, rdb *redis.Client, kind, key string, peek bool) (int64, error) {
			args := []any{kind, key, crashLimit, crashWindowMs}
			switch {
			case kind == "rl.token":
				args = append(args, "RATE", 1)
			case kind == "rl.acquire":
				args = []any{kind, key, crashLimit, crashWindowMs}
			}
			if peek && kind != "rl.acquire" {
				args = append(args, "PEEK")
			}
			return remaining(rdb.Do(ctx, args...).Slice())
		}}
}

func redisTarget(bin, fsync string) crashTarget {
	return crashTarget{name: "redis-server + Lua appendfsync " + fsync,
		start: func(addr, dir string) (*launch.Proc, error) {
			return launch.RedisAt(bin, dir, addr, "--appendonly", "yes", "--appendfsync", fsync)
		},
		call: func(ctx context.Context, rdb *redis.Client, kind, key string, peek bool) (int64, error) {
			var argv []any
			switch kind {
			case "rl.acquire":
				argv = []any{crashLimit, crashWindowMs, ""}
			default:
				r := algo.Request{Limit: crashLimit, Window: crashWindowMs * 1000, Cost: 1, Peek: peek}
				r.Kind = map[string]algo.Kind{"rl.fixed": algo.KindFixed, "rl.token": algo.KindToken, "rl.log": algo.KindLog}[kind]
				if r.Kind == algo.KindToken {
					r.Rate = 1
				}
				argv = lua.Args(r)
			}
			s := lua.Named(kind)
			reply := rdb.EvalSha(ctx, s.SHA1, []string{key}, argv...)
			if reply.Err() != nil && redis.HasErrorPrefix(reply.Err(), "NOSCRIPT") {
				reply = rdb.Eval(ctx, s.Source, []string{key}, argv...)
			}
			return remaining(reply.Slice())
		}}
}

// remaining reads field 3 of a limiter's or RL.ACQUIRE's reply.
func remaining(v []any, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	if len(v) < 3 {
		return 0, fmt.Errorf("reply %v", v)
	}
	n, ok := v[2].(int64)
	if !ok {
		return 0, fmt.Errorf("reply %v", v)
	}
	return n, nil
}

// crashTally is what the connections of a round sent and had acknowledged, per key.
type crashTally struct {
	mu        sync.Mutex
	sent, ack map[string]int64
	kind      map[string]string
}

// TestCrashAOF runs the crash rounds against rlserver and redis-server under
// appendfsync always and everysec, and reports each one's losses; rlserver without
// the log is the control that shows the harness sees a loss.
func TestCrashAOF(t *testing.T) {
	redisBin := testenv.RedisTool(t, "redis-server")
	bin := buildBinary(t, "")
	targets := []struct {
		target  crashTarget
		maxLost float64 // of the acknowledged spends, per round, as a share of a second's
		control bool    // must lose
	}{
		{rlserverTarget(bin, ""), 0, true},
		{rlserverTarget(bin, "always"), 0, false},
		{redisTarget(redisBin, "always"), 0, false},
		{rlserverTarget(bin, "everysec"), 1, false},
		{redisTarget(redisBin, "everysec"), 1, false},
	}
	for _, tc := range targets {
		t.Run(tc.target.name, func(t *testing.T) {
			lost, acked, elapsed := crashTest(t, tc.target, crashRounds())
			perSec := float64(acked) / elapsed.Seconds()
			t.Logf("%s: %d rounds, %d acknowledged spends (%.0f/s), %d lost", tc.target.name, crashRounds(), acked, perSec, lost)
			if tc.control {
				if lost != acked {
					t.Errorf("without a log %d of %d acknowledged spends were lost, want all", lost, acked)
				}
				return
			}
			if float64(lost) > tc.maxLost*perSec*float64(crashRounds()) {
				t.Errorf("%d acknowledged spends lost, over %.0f s' worth a round", lost, tc.maxLost)
			}
		})
	}
}

// crashTest runs rounds and returns the acknowledged spends lost, those acknowledged
// and the time spent spending.
func crashTest(t *testing.T, target crashTarget, rounds int) (lost, acked int64, spent time.Duration) {
	dir := t.TempDir()
	addr, err := launch.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tallies := make([]*crashTally, rounds)
	for round := range rounds {
		p, err := target.start(addr, dir)
		if err != nil {
			t.Fatalf("round %d: start: %v", round, err)
		}
		if round > 0 {
			lost += checkRound(t, target, addr, round-1, tallies[round-1])
		}
		tally := &crashTally{sent: map[string]int64{}, ack: map[string]int64{}, kind: map[string]string{}}
		uptime := crashMinUptime + rand.N(crashMaxUptime-crashMinUptime)
		var wg sync.WaitGroup
		for c := range crashConns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				spendUntilDead(ctx, target, addr, round, c, tally)
			}()
		}
		time.Sleep(uptime) // the crash's moment: what the test is about, not a wait for a result
		p.Kill()
		wg.Wait()
		spent += uptime
		for _, n := range tally.ack {
			acked += n
		}
		tallies[round] = tally
	}
	p, err := target.start(addr, dir)
	if err != nil {
		t.Fatalf("last start: %v", err)
	}
	lost += checkRound(t, target, addr, rounds-1, tallies[rounds-1])
	p.Stop()
	return lost, acked, spent
}

// spendUntilDead spends on the connection's keys, one call at a time, until the
// server dies.
func spendUntilDead(ctx context.Context, target crashTarget, addr string, round, conn int, tally *crashTally) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1, DialTimeout: time.Second})
	defer rdb.Close()
	for i := 0; ; i++ {
		kind := crashKinds[i%len(crashKinds)]
		key := fmt.Sprintf("r%d:c%d:%s", round, conn, kind)
		tally.mu.Lock()
		tally.sent[key]++
		tally.kind[key] = kind
		tally.mu.Unlock()
		if _, err := target.call(ctx, rdb, kind, key, false); err != nil {
			return
		}
		tally.mu.Lock()
		tally.ack[key]++
		tally.mu.Unlock()
	}
}

// checkRound reads back every key of round after the restart: each must hold from
// its acknowledged spends to its sent ones. It returns the acknowledged spends lost.
func checkRound(t *testing.T, target crashTarget, addr string, round int, tally *crashTally) int64 {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	var lost int64
	for key, sent := range tally.sent {
		kind := tally.kind[key]
		rem, err := target.call(context.Background(), rdb, kind, key, true)
		if err != nil {
			t.Fatalf("round %d: reading %s back: %v", round, key, err)
		}
		held := crashLimit - rem - 1 // a PEEK answers as if it spent 1; reading a lease set back acquires one
		ack := tally.ack[key]
		if held > sent {
			t.Errorf("round %d: %s holds %d spends, only %d were sent", round, key, held, sent)
		}
		if held < ack {
			lost += ack - held
		}
	}
	return lost
}
