package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/internal/lab"
	"github.com/rlserver/rlserver/internal/launch"
)

// memoryLesson is the lesson's Redis bytes per user.
var memoryLesson = map[algo.Kind]string{algo.KindLog: "1,499", algo.KindFixed: "121–171",
	algo.KindSlide: "121–171", algo.KindToken: "121–171"}

// logLimits are the log-growth series' limits: the lesson notes Redis's log grows
// a hundredfold from 100 to 10,000.
var logLimits = []int{10, 100, 1_000, 10_000}

// memoryResult is memory.json. Bytes are per user; -1 where a side is absent.
type memoryResult struct {
	Users     int            `json:"users"`
	Rows      []memoryRow    `json:"rows"`
	LogGrowth []logGrowthRow `json:"log_growth"`
}

// memoryRow is one algorithm's bytes per user. The headline is RSS growth, no
// purge (INFO used_memory_rss: the process's RSS on both sides); beside it Redis's
// used_memory, rlserver's store (used_memory_dataset, what -maxmemory bounds) and
// used_memory (Go heap plus the store's off-heap mappings).
type memoryRow struct {
	Algorithm   string  `json:"algorithm"`
	Users       int     `json:"users"`
	RedisRSS    float64 `json:"redis_rss"`
	ServerRSS   float64 `json:"rlserver_rss"`
	RedisUsed   float64 `json:"redis_used"`
	ServerStore float64 `json:"rlserver_dataset"`
	ServerHeap  float64 `json:"rlserver_used"`
	Lesson      string  `json:"lesson"`
}

// logGrowthRow is RL.LOG's bytes per user with the log full at limit entries.
type logGrowthRow struct {
	Limit       int     `json:"limit"`
	Users       int     `json:"users"`
	RedisRSS    float64 `json:"redis_rss"`
	ServerRSS   float64 `json:"rlserver_rss"`
	RedisUsed   float64 `json:"redis_used"`
	ServerStore float64 `json:"rlserver_dataset"`
}

// runMemory builds the same state for many users on both sides, one algorithm at
// a time, and reports the memory per user as a user measures it: the growth of each
// server's RSS, a second after loading, with no MEMORY PURGE. With -start every row
// gets a newly started redis-server and rlserver process (default flags but
// -enable-debug-command; -rlserver-bin, or go build); with -redis and -rlserver the
// given servers are emptied (FLUSHALL) between rows, and a Redis whose allocator kept
// the pages of an earlier row grows less than a new one would. Every algorithm
// takes one call per user (limit 10 per hour) on keys user:%08d; the log takes 100
// entries for a tenth of the users (limit 100 per hour), then the log-growth series
// fills logs of 10 to 10,000 entries.
//
// Filling a log through real calls would take O(limit²) on Redis (the script
// reads the whole set per call) and merge calls that land in the same µs, so
// each Redis log is built with one ZADD of the members the script writes for
// calls 100 ms apart, and rlserver gets the same calls at those moments through
// DEBUG CLOCK SET: rlserver must run with -enable-debug-command (-start does).
func runMemory(ctx context.Context, cfg config, e *env, w io.Writer) (any, error) {
	res := memoryResult{Users: cfg.users}
	servers, cleanup, err := newServers(ctx, cfg, e)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	for _, k := range kinds {
		users, limit := cfg.users, 10
		if k == algo.KindLog {
			users, limit = cfg.users/10, 100
		}
		bytes, err := measure(ctx, servers, users, func(tg target, done func(int)) error {
			if k == algo.KindLog {
				return fillLogs(ctx, tg, users, limit, done)
			}
			return lab.Bulk(ctx, tg.addr, users, keyed(tg.words("", lab.Request(k, int64(limit), 3_600_000)), tg.script), done)
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.Command(), err)
		}
		row := memoryRow{Algorithm: k.Command(), Users: users, RedisRSS: bytes.redisRSS, ServerRSS: bytes.serverRSS,
			RedisUsed: bytes.redisUsed, ServerStore: bytes.serverStore, ServerHeap: bytes.serverHeap, Lesson: "-"}
		if s, ok := memoryLesson[k]; ok {
			row.Lesson = s
		}
		res.Rows = append(res.Rows, row)
	}
	for _, limit := range logLimits {
		users := max(1, cfg.logCalls/limit)
		bytes, err := measure(ctx, servers, users, func(tg target, done func(int)) error {
			return fillLogs(ctx, tg, users, limit, done)
		})
		if err != nil {
			return nil, fmt.Errorf("rl.log limit %d: %w", limit, err)
		}
		res.LogGrowth = append(res.LogGrowth, logGrowthRow{limit, users, bytes.redisRSS, bytes.serverRSS,
			bytes.redisUsed, bytes.serverStore})
	}

	fmt.Fprintf(w, "bytes per user: RSS growth, no purge (INFO used_memory_rss); beside it Redis's used_memory, "+
		"rlserver's store (used_memory_dataset) and used_memory (Go heap + store):\n")
	t := newTable("algorithm", "users", "redis+lua rss", "rlserver rss", "rss/rss", "redis used", "rlserver store",
		"rlserver used", "lesson (redis)")
	for _, r := range res.Rows {
		t.row(r.Algorithm, strconv.Itoa(r.Users), perUser(r.RedisRSS), perUser(r.ServerRSS), ratio(r.ServerRSS, r.RedisRSS),
			perUser(r.RedisUsed), perUser(r.ServerStore), perUser(r.ServerHeap), r.Lesson)
	}
	t.write(w)
	fmt.Fprintf(w, "\nrl.log bytes per user, the log full at limit entries (lesson: grows ~100x from 100 to 10,000 on Redis):\n")
	t = newTable("limit", "users", "redis+lua rss", "rlserver rss", "redis used", "rlserver store")
	for _, r := range res.LogGrowth {
		t.row(strconv.Itoa(r.Limit), strconv.Itoa(r.Users), perUser(r.RedisRSS), perUser(r.ServerRSS),
			perUser(r.RedisUsed), perUser(r.ServerStore))
	}
	t.write(w)
	return res, nil
}

func perUser(b float64) string {
	if b < 0 {
		return "-"
	}
	return strconv.FormatFloat(b, 'f', 1, 64)
}

// ratio is a/b to two places, "-" where a side is absent.
func ratio(a, b float64) string {
	if a < 0 || b <= 0 {
		return "-"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64)
}

// keyed is the words of a call for user i, its key "user:<i>" in place of the
// empty one; the slice is reused from call to call, as bulk allows.
func keyed(words []string, script bool) func(i int) []string {
	at := 1
	if script {
		at = 3 // EVALSHA sha 1 key
	}
	return func(i int) []string {
		words[at] = memoryKey(i)
		return words
	}
}

// memoryKey is user i's key, 13 bytes as in issue 13's measurement.
func memoryKey(i int) string { return fmt.Sprintf("user:%08d", i) }

// bytesPerUser is one load's memory per user on each side; -1 where absent.
type bytesPerUser struct{ redisRSS, serverRSS, redisUsed, serverStore, serverHeap float64 }

// newServers returns what measure loads for each row: with -start, a function that
// starts a new redis-server and rlserver process and returns them (to be closed
// after the row); otherwise e itself, emptied first. cleanup removes what it made.
func newServers(ctx context.Context, cfg config, e *env) (func() (*env, error), func(), error) {
	if !cfg.start {
		return func() (*env, error) {
			for _, tg := range e.targets {
				if err := tg.client.FlushAll(ctx).Err(); err != nil {
					return nil, fmt.Errorf("%s: FLUSHALL: %w", tg.name, err)
				}
			}
			return &env{targets: e.targets}, nil
		}, func() {}, nil
	}
	dir, bin, err := rlserverIn(ctx, cfg.rlserverBin, "memory")
	if err != nil {
		return nil, nil, err
	}
	return func() (*env, error) {
		raddr, stopRedis, err := startRedis()
		if err != nil {
			return nil, err
		}
		var s stopper
		s.add(stopRedis)
		p, err := launch.RLServer(bin, dir, "-enable-debug-command", "-loglevel", "WARN")
		if err != nil {
			s.stop()
			return nil, err
		}
		s.add(p.Kill)
		started, err := connect(ctx, config{redis: raddr, rlserver: p.Addr})
		if err != nil {
			s.stop()
			return nil, err
		}
		started.stops = append(started.stops, s.stop)
		return started, nil
	}, func() { os.RemoveAll(dir) }, nil
}

// measure gets its servers from servers(), loads each side with load, waits a second, checks
// it holds users keys, and returns the memory per user the load added.
func measure(ctx context.Context, servers func() (*env, error), users int, load func(tg target, done func(int)) error) (bytesPerUser, error) {
	out := bytesPerUser{-1, -1, -1, -1, -1}
	e, err := servers()
	if err != nil {
		return out, err
	}
	defer e.close()
	before := map[string]usage{}
	for _, tg := range e.targets {
		if before[tg.name], err = memoryOf(ctx, tg.client); err != nil {
			return out, fmt.Errorf("%s: %w", tg.name, err)
		}
	}
	for _, tg := range e.targets {
		bar := newProgress(users, tg.name)
		err := load(tg, bar.add)
		bar.done()
		if err != nil {
			return out, fmt.Errorf("%s: %w", tg.name, err)
		}
	}
	time.Sleep(time.Second) // as a user would: let both settle before reading RSS
	for _, tg := range e.targets {
		after, err := memoryOf(ctx, tg.client)
		if err != nil {
			return out, fmt.Errorf("%s: %w", tg.name, err)
		}
		if n, err := tg.client.DBSize(ctx).Result(); err != nil || n != int64(users) {
			return out, fmt.Errorf("%s: DBSIZE %d, %v after loading %d users", tg.name, n, err, users)
		}
		b, n := before[tg.name], float64(users)
		if tg.script {
			out.redisRSS = float64(after.rss-b.rss) / n
			out.redisUsed = float64(after.used-b.used) / n
		} else {
			out.serverRSS = float64(after.rss-b.rss) / n
			out.serverStore = float64(after.dataset-b.dataset) / n
			out.serverHeap = float64(after.used-b.used) / n
		}
	}
	return out, nil
}

// fillLogs gives each of users keys a full log of limit entries, 100 ms apart,
// the newest now, in a 1-hour window (10,000 entries span 1,000 s).
func fillLogs(ctx context.Context, tg target, users, limit int, done func(int)) error {
	const gap, windowMs = 100_000, 3_600_000
	base := time.Now().UnixMicro() - int64(limit-1)*gap
	if tg.script {
		zadd := []string{"ZADD", ""}
		for j := range int64(limit) {
			ts := strconv.FormatInt(base+j*gap, 10)
			zadd = append(zadd, ts, ts+":1")
		}
		expire := []string{"PEXPIREAT", "", strconv.FormatInt((base+int64(limit-1)*gap)/1000+windowMs, 10)}
		return lab.Bulk(ctx, tg.addr, 2*users, func(i int) []string {
			key := memoryKey(i / 2)
			if i%2 == 1 {
				expire[1] = key
				return expire
			}
			zadd[1] = key
			return zadd
		}, func(n int) { done(n / 2) })
	}
	defer tg.client.Do(context.WithoutCancel(ctx), "DEBUG", "CLOCK", "REAL")
	call := keyed(tg.words("", lab.Request(algo.KindLog, int64(limit), windowMs)), false)
	for j := range int64(limit) {
		if err := tg.client.Do(ctx, "DEBUG", "CLOCK", "SET", base+j*gap).Err(); err != nil {
			return fmt.Errorf("DEBUG CLOCK SET (run rlserver with -enable-debug-command): %w", err)
		}
		if err := lab.Bulk(ctx, tg.addr, users, call, nil); err != nil {
			return err
		}
		if (j+1)%int64(max(1, limit/100)) == 0 {
			done(0) // the bar counts users; keep the terminal responsive
		}
	}
	done(users)
	return nil
}

// usage is a server's INFO memory: used_memory, used_memory_dataset and
// used_memory_rss.
type usage struct{ used, dataset, rss int64 }

// memoryOf reads c's memory as it is: no MEMORY PURGE, which a user would not run.
func memoryOf(ctx context.Context, c *redis.Client) (usage, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return usage{}, fmt.Errorf("INFO memory: %w", err)
	}
	fields := map[string]int64{}
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
			fields[k] = n
		}
	}
	u, ok := usage{fields["used_memory"], fields["used_memory_dataset"], fields["used_memory_rss"]}, fields["used_memory"] > 0
	if !ok {
		return u, errors.New("INFO memory has no used_memory")
	}
	return u, nil
}
