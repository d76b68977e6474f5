package resp

import (
	"slices"
	"strings"

	"github.com/rlserver/rlserver/algo"
)

// command is one entry of the command table. The table is the one description of
// every command: dispatch and arity checks, COMMAND / COMMAND INFO / COMMAND DOCS
// (redis-cli's argument hints come from there) and docs/commands.md are all read
// from it, so they cannot disagree.
type command struct {
	name  string // lower case, as Redis spells it in errors; a subcommand's own word ("setname")
	arity int    // Redis's convention: n means exactly n words, -n at least n; the name counts
	flags []string
	// Key positions as COMMAND INFO reports them: first and last key index (last -1:
	// up to the end) and the step between keys; 0, 0, 0 for commands without keys.
	firstKey, lastKey, keyStep int
	summary                    string
	group                      string
	complexity                 string
	args                       []arg
	subs                       []*command // subcommands of a container (CLIENT, COMMAND, ...)
	doc                        string     // longer text for docs/commands.md (markdown)
	examples                   []example  // for docs/commands.md; a test replays them
	run                        func(s *Server, c *client, args [][]byte, now int64)
	// keys finds the keys of a command whose keys move ("movablekeys": RL.ALL), for
	// cluster mode's slot check; nil: firstKey, lastKey and keyStep say where they are.
	keys func(args [][]byte) [][]byte

	// Filled in by init.
	full      string              // the name in errors and COMMAND INFO: "client|setname" for a subcommand
	id        int                 // the command's index in allCommands, for per-command metrics
	noAuth    bool                // "no-auth" in flags: served before the connection authenticates
	parent    *command            // the container of a subcommand
	subIndex  map[string]*command // subs by name
	write     bool                // "write" in flags: refused on a replica (READONLY)
	peekable  bool                // takes PEEK: its run refuses a write on a replica itself
	loadingOK bool                // "loading" in flags: runs while a replica loads a full sync

	// Set in the table.
	tx      bool // MULTI, EXEC, DISCARD: run at once inside MULTI, never queued
	noMulti bool // refused inside MULTI: it takes the connection over (SUBSCRIBE, RLSYNC)
}

// arg describes one argument for COMMAND DOCS and the syntax line, in Redis's terms.
type arg struct {
	name     string
	typ      string // key, string, integer, pattern, pure-token, oneof, block
	token    string // the keyword before the value, such as COST
	optional bool
	multiple bool
	args     []arg // the alternatives of a oneof, the parts of a block
}

// example is one call shown in docs/commands.md with its reply on a fresh server
// whose clock stands at the start of a day (so windows start now).
type example struct {
	command string // as typed in redis-cli
	reply   string // the reply: an array's elements space-separated (a nested array in brackets), or one integer
}

// Command groups, as COMMAND DOCS reports them.
const (
	groupRateLimit    = "ratelimit"
	groupGeneric      = "generic"
	groupConnection   = "connection"
	groupServer       = "server"
	groupCluster      = "cluster"
	groupPubSub       = "pubsub"
	groupTransactions = "transactions"
)

// since is the version every command first appeared in: rlserver's first.
const since = "1.0.0"

var (
	commands     []*command          // top-level commands, in the order of docs/commands.md
	commandIndex map[string]*command // top-level commands by lower-case name
	allCommands  []*command          // commands and subcommands, each once
)

// limiterArgs are the arguments of an RL.* command: key, the two positional
// numbers, its own option (if any), then COST and PEEK.
func limiterArgs(limit string, option *arg) []arg {
	a := []arg{
		{name: "key", typ: "key"},
		{name: limit, typ: "integer"},
		{name: "window_ms", typ: "integer"},
	}
	if option != nil {
		a = append(a, *option)
	}
	return append(a,
		arg{name: "cost", typ: "integer", token: "COST", optional: true},
		arg{name: "peek", typ: "pure-token", token: "PEEK", optional: true},
	)
}

// allArgs are RL.ALL's arguments: one or more rules, each an algorithm word, its
// command's positional arguments and its options; PEEK may come among any rule's.
var allArgs = []arg{{name: "rule", typ: "block", multiple: true, args: []arg{
	{name: "algorithm", typ: "oneof", args: []arg{
		{name: "fixed", typ: "pure-token", token: "FIXED"},
		{name: "slide", typ: "pure-token", token: "SLIDE"},
		{name: "log", typ: "pure-token", token: "LOG"},
		{name: "token", typ: "pure-token", token: "TOKEN"},
		{name: "gcra", typ: "pure-token", token: "GCRA"},
		{name: "leaky", typ: "pure-token", token: "LEAKY"},
	}},
	{name: "key", typ: "key"},
	{name: "limit", typ: "integer"},
	{name: "window_ms", typ: "integer"},
	{name: "option", typ: "oneof", optional: true, multiple: true, args: []arg{
		{name: "cost", typ: "integer", token: "COST"},
		{name: "rate", typ: "integer", token: "RATE"},
		{name: "burst", typ: "integer", token: "BURST"},
		{name: "queue", typ: "integer", token: "QUEUE"},
		{name: "peek", typ: "pure-token", token: "PEEK"},
	}},
}}}

var (
	flagsLimiter = []string{"write", "fast"}
	flagsReadKey = []string{"readonly", "fast"}
	flagsConn    = []string{"noscript", "loading", "stale", "fast"}
	flagsAdmin   = []string{"admin", "noscript", "loading", "stale"}
)

var flushArgs = []arg{{name: "flush-type", typ: "oneof", optional: true, args: []arg{
	{name: "async", typ: "pure-token", token: "ASYNC"},
	{name: "sync", typ: "pure-token", token: "SYNC"},
}}}

func init() {
	commands = []*command{
		{
			name: "rl.fixed", arity: -4, flags: flagsLimiter, firstKey: 1, lastKey: 1, keyStep: 1,
			summary:    "Fixed window: allow up to limit requests in each window, windows aligned to the Unix epoch.",
			group:      groupRateLimit,
			complexity: "O(1)",
			args:       limiterArgs("limit", nil),
			doc: "Counts requests in windows of `window_ms` that start at multiples of the window since " +
				"the Unix epoch, so every key's window turns over at the same moment. A request of cost c " +
				"is allowed while `count + c ≤ limit`. When limited, `retry_after_ms` is the time to the " +
				"next window. Cheap and simple; a client can send up to 2·limit around a window boundary.",
			examples: []example{
				{"RL.FIXED api:alice 3 60000 COST 3", "1 3 0 0 60000"},
				{"RL.FIXED api:alice 3 60000", "0 3 0 60000 60000"},
			},
			run: limiter(parseKind(algo.KindFixed)),
		},
		{
			name: "rl.slide", arity: -4, flags: flagsLimiter, firstKey: 1, lastKey: 1, keyStep: 1,
			summary:    "Sliding window counter: the current window's count plus the previous one's, weighted by overlap.",
			group:      groupRateLimit,
			complexity: "O(1)",
			args:       limiterArgs("limit", nil),
			doc: "Keeps the counts of the current and the previous fixed window and estimates the " +
				"requests of the last `window_ms` as `cur + prev · (time left in this window / window)`. " +
				"A request is allowed while `estimate + c ≤ limit`. Smooths the boundary burst of " +
				"RL.FIXED with two counters per key. `retry_after_ms` is the exact moment the estimate " +
				"falls far enough, in this window or the next.",
			examples: []example{
				{"RL.SLIDE api:bob 10 60000", "1 10 9 0 120000"},
				{"RL.SLIDE api:bob 10 60000 COST 10", "0 10 9 120000 120000"},
			},
			run: limiter(parseKind(algo.KindSlide)),
		},
		{
			name: "rl.log", arity: -4, flags: flagsLimiter, firstKey: 1, lastKey: 1, keyStep: 1,
			summary:    "Sliding window log: remember every admitted request of the last window, exactly.",
			group:      groupRateLimit,
			complexity: "O(n) in the admitted requests still in the window",
			args:       limiterArgs("limit", nil),
			doc: "Stores the timestamp and cost of each admitted request and allows a request while " +
				"the costs inside the last `window_ms` plus c stay within `limit`. Exact, and its memory " +
				"grows with the limit, which the server caps with `-max-log-limit` (default 100000). " +
				"`retry_after_ms` is the moment enough old entries have left the window.",
			examples: []example{
				{"RL.LOG login:carol 5 10000", "1 5 4 0 10000"},
				{"RL.LOG login:carol 5 10000 COST 5", "0 5 4 10000 10000"},
			},
			run: limiter(parseKind(algo.KindLog)),
		},
		{
			name: "rl.token", arity: -4, flags: flagsLimiter, firstKey: 1, lastKey: 1, keyStep: 1,
			summary:    "Token bucket: up to capacity tokens, refilled continuously at rate tokens per window.",
			group:      groupRateLimit,
			complexity: "O(1)",
			args:       limiterArgs("capacity", &arg{name: "rate", typ: "integer", token: "RATE", optional: true}),
			doc: "A new key starts with a full bucket of `capacity` tokens, refilled continuously at " +
				"`rate` tokens per `window_ms` (default: `capacity`). A request of cost c is allowed " +
				"when c tokens are there, and takes them. Field 2 is the capacity; `reset_after_ms` is " +
				"the time until the bucket is full again.",
			examples: []example{
				{"RL.TOKEN user:1 10 1000", "1 10 9 0 100"},
				{"RL.TOKEN user:1 10 1000 COST 20", "0 10 9 -1 100"},
			},
			run: limiter(parseKind(algo.KindToken)),
		},
		{
			name: "rl.gcra", arity: -4, flags: flagsLimiter, firstKey: 1, lastKey: 1, keyStep: 1,
			summary:    "Generic cell rate algorithm: limit requests per window with a burst, one number per key.",
			group:      groupRateLimit,
			complexity: "O(1)",
			args:       limiterArgs("limit", &arg{name: "burst", typ: "integer", token: "BURST", optional: true}),
			doc: "Spaces requests one emission interval T apart, T = round(window_ms·1000 / limit) µs " +
				"(half up, at least 1), and tolerates `burst` of them at once (default: `limit`). The key " +
				"stores only its theoretical arrival time, in integer µs; Redis 8.8's `GCRA` command " +
				"(below) reads and writes the same state. Field 2 is the burst. Equivalent to a token " +
				"bucket, with exact `retry_after_ms`. A schedule over 100 years is refused: " +
				"`ERR burst × window_ms / limit must be at most 100 years`.",
			examples: []example{
				{"RL.GCRA api:dave 10 1000", "1 10 9 0 100"},
				{"RL.GCRA api:dave 10 1000 COST 10", "0 10 9 100 100"},
			},
			run: limiter(parseKind(algo.KindGCRA)),
		},
		{
			name: "rl.leaky", arity: -4, flags: flagsLimiter, firstKey: 1, lastKey: 1, keyStep: 1,
			summary:    "Leaky bucket as a queue: requests leave evenly; up to queue of them wait their turn.",
			group:      groupRateLimit,
			complexity: "O(1)",
			args:       limiterArgs("limit", &arg{name: "queue", typ: "integer", token: "QUEUE", optional: true}),
			doc: "A shaper, like nginx `limit_req` without `nodelay`: requests leave one every " +
				"T = round(window_ms·1000 / limit) µs (half up, at least 1), and up to `queue` requests " +
				"(default 0) may wait for their turn. " +
				"**When allowed, field 4 is the delay in ms the caller must wait before going ahead** " +
				"(0 if none); when limited, it is the time until the queue has room. The schedule is kept " +
				"in integer µs, and one over 100 years is refused: a queue or a cost whose T·queue or " +
				"T·cost passes 100 years (`ERR queue × window_ms / limit must be at most 100 years`).",
			examples: []example{
				{"RL.LEAKY jobs:eve 2 1000 QUEUE 1", "1 2 1 0 500"},
				{"RL.LEAKY jobs:eve 2 1000 QUEUE 1", "1 2 0 500 1000"},
				{"RL.LEAKY jobs:eve 2 1000 QUEUE 1", "0 2 0 500 1000"},
			},
			run: limiter(parseKind(algo.KindLeaky)),
		},
		{
			name: "cl.throttle", arity: -5, flags: flagsLimiter, firstKey: 1, lastKey: 1, keyStep: 1,
			summary:    "redis-cell's throttle: GCRA with max_burst+1 requests and count_per_period per period_s seconds.",
			group:      groupRateLimit,
			complexity: "O(1)",
			args: []arg{
				{name: "key", typ: "key"},
				{name: "max_burst", typ: "integer"},
				{name: "count_per_period", typ: "integer"},
				{name: "period_s", typ: "integer"},
				{name: "quantity", typ: "integer", optional: true},
			},
			doc: "A drop-in for the redis-cell module (and Dragonfly's built-in): same arguments, same " +
				"GCRA, same reply. Field 1 is **limited** (0 = allowed, 1 = limited), times are in " +
				"seconds rounded up, and `retry_after` is -1 when allowed. The emission interval is " +
				"T = round(period_s·10^6 / count_per_period) µs (half up, at least 1), the state an " +
				"integer of µs, and a schedule over 100 years is refused: " +
				"`ERR (max_burst + 1) × period_s / count_per_period must be at most 100 years`.",
			examples: []example{
				{"CL.THROTTLE user123 15 30 60", "0 16 15 -1 2"},
			},
			run: limiter(parseKind(algo.KindThrottle)),
		},
		{
			// Redis 8.8's own command: its arity, and at most 7 words (ParseGCRA).
			name: "gcra", arity: -5, flags: flagsLimiter, firstKey: 1, lastKey: 1, keyStep: 1,
			summary:    "Redis 8.8's GCRA: max_burst+1 requests at once, tokens_per_period per period seconds; redis-cell's reply.",
			group:      groupRateLimit,
			complexity: "O(1)",
			args: []arg{
				{name: "key", typ: "key"},
				{name: "max_burst", typ: "integer"},
				{name: "tokens_per_period", typ: "integer"},
				{name: "period", typ: "double"},
				{name: "count", typ: "integer", token: "TOKENS", optional: true},
			},
			doc: "Redis 8.8's native command, with its arguments, checks, error texts and reply, so code " +
				"written for it (go-redis, lettuce, jedis, phpredis and predis ship a method) runs against " +
				"rlserver unchanged. `period` is a float number of seconds, 0 < period < 1e12 (`1.5`, " +
				"`3600.25`, `1e3`, `0x10` and `inf` read as Redis reads them); the emission interval is " +
				"T = max(1, (long long)(period·10^6 / tokens_per_period + 0.5)) µs, computed in doubles as " +
				"Redis does. `max_burst + 1` requests pass at once; `TOKENS n` (1 to 2^63-1, default 1) " +
				"is the request's cost. The reply is redis-cell's: **limited** (0 = allowed, 1 = " +
				"limited), `max_burst + 1`, remaining, `retry_after` in seconds rounded up (-1 when " +
				"allowed, and when n can never fit) and `reset_after` in seconds rounded up. The state is " +
				"RL.GCRA's, an integer theoretical arrival time in µs: GCRA and RL.GCRA on one key share " +
				"it, and `TYPE` answers `rl.gcra` (Redis: `gcra`). Errors are Redis's: " +
				"`ERR value is out of range, must be positive` (max_burst), " +
				"`ERR value is not an integer or out of range`, " +
				"`ERR value is out of range, value must between 1 and 9223372036854775807` " +
				"(tokens_per_period, TOKENS), `ERR value is not a valid float`, " +
				"`ERR period must be > 0 and < 1e12`, `ERR Missing TOKENS value`, `ERR syntax error`, " +
				"and the overflow errors of T·n and T·(max_burst+1); then rlserver's own bound, " +
				"`ERR (max_burst + 1) × period / tokens_per_period must be at most 100 years`. Nothing " +
				"changes on any error. GCRA is not a rule of RL.ALL, whose word GCRA means RL.GCRA.",
			examples: []example{
				{"GCRA api:grace 15 30 60", "0 16 15 -1 2"},
				{"GCRA api:grace 15 30 60 TOKENS 16", "1 16 15 2 2"},
				{"RL.GCRA api:grace 30 60000 BURST 16", "1 16 14 0 4000"}, // the same state, in ms
			},
			run: limiter(parseGCRA),
		},
		{
			// The keys sit among the rules' other arguments: movablekeys, as Redis marks
			// such commands; firstKey is where the first rule's key always is.
			name: "rl.all", arity: -5, flags: []string{"write", "fast", "movablekeys"}, firstKey: 2, lastKey: 2, keyStep: 1,
			summary:    "Several limits at once, all or nothing: every rule consumes if every rule admits, else none does.",
			group:      groupRateLimit,
			complexity: "O(n) in the rules, each as its own command",
			args:       allArgs,
			doc: "Each rule is an algorithm (FIXED, SLIDE, LOG, TOKEN, GCRA or LEAKY), then that command's " +
				"key, limit and window_ms, then its options (COST, RATE, BURST, QUEUE), in any order; the " +
				"next algorithm word starts the next rule. At most 64 rules, each on its own key. `PEEK` " +
				"may come among any rule's options and applies to the whole call. The reply is `allowed` " +
				"(1 if every rule admits), then each rule's five fields in order. If every rule admits, " +
				"all consume and each shows its own answer. If one refuses (or PEEK), nothing is written " +
				"anywhere and each rule shows what it alone would answer with PEEK: the refusing rule its " +
				"`retry_after_ms`, the others the remaining they would leave. So a request denied by the " +
				"third limit has not consumed from the first two. The store locks the rules' shards in " +
				"ascending order and decides them all under those locks. Errors are the single commands' " +
				"errors, plus `ERR RL.ALL names the same key in two rules`, `ERR RL.ALL takes at most 64 " +
				"rules` and `ERR unknown algorithm ...`; nothing changes on any of them.",
			examples: []example{
				{"RL.ALL FIXED user:frank 100 60000 TOKEN ip:10.0.0.1 2 1000", "1 [1 100 99 0 60000] [1 2 1 0 500]"},
				{"RL.ALL FIXED user:frank 100 60000 TOKEN ip:10.0.0.1 2 1000", "1 [1 100 98 0 60000] [1 2 0 0 1000]"},
				{"RL.ALL FIXED user:frank 100 60000 TOKEN ip:10.0.0.1 2 1000", "0 [1 100 97 0 60000] [0 2 0 500 1000]"},
			},
			keys: allKeys,
			run:  cmdAll,
		},
		{
			name: "rl.acquire", arity: -4, flags: flagsLimiter, firstKey: 1, lastKey: 1, keyStep: 1,
			summary:    "Take one of limit concurrent leases on the key for lease_ms; answers acquired, limit, remaining, retry_after_ms and the lease id.",
			group:      groupRateLimit,
			complexity: "O(n) in the key's live leases",
			args: []arg{
				{name: "key", typ: "key"},
				{name: "limit", typ: "integer"},
				{name: "lease_ms", typ: "integer"},
				{name: "id", typ: "string", token: "ID", optional: true},
			},
			doc: "A concurrency limit that survives crashes: at most `limit` leases live at once, and " +
				"each ends by itself `lease_ms` after it was taken or renewed, so a process that dies " +
				"holding one leaks nothing for longer than that. The reply is `[acquired, limit, " +
				"remaining, retry_after_ms, lease_id]`: `remaining` is the free places after the call, " +
				"`retry_after_ms` (when not acquired) the time until a place frees (the earliest lease's " +
				"end; a later one when the limit was lowered below the live leases), `lease_id` " +
				"the lease's id (a null when not acquired). Without `ID`, the server makes one of 16 hex " +
				"digits; with `ID id` (1 to 128 bytes) a retry of the same acquire finds its lease live and " +
				"extends it instead of taking a second place. `limit` is 1 to the server's " +
				"`-max-log-limit` (a lease costs memory as a log entry does), `lease_ms` 1 to 31536000000. " +
				"The key goes with its last lease; `TYPE` answers `rl.lease`, `PTTL` the time to the last " +
				"lease's end.",
			examples: []example{
				{"RL.ACQUIRE jobs:export 2 30000 ID w1", "1 2 1 0 w1"},
				{"RL.ACQUIRE jobs:export 2 30000 ID w2", "1 2 0 0 w2"},
				{"RL.ACQUIRE jobs:export 2 30000 ID w3", "0 2 0 30000 (nil)"},
			},
			run: cmdAcquire,
		},
		{
			name: "rl.release", arity: 3, flags: flagsLimiter, firstKey: 1, lastKey: 1, keyStep: 1,
			summary:    "End a lease taken by RL.ACQUIRE: 1 if it was live, else 0.",
			group:      groupRateLimit,
			complexity: "O(n) in the key's live leases",
			args:       []arg{{name: "key", typ: "key"}, {name: "lease_id", typ: "string"}},
			doc: "Frees the lease's place at once. An unknown id, a lease that already ended, or an " +
				"absent key answer 0; the key goes with its last lease.",
			examples: []example{
				{"RL.ACQUIRE lock:report 1 10000 ID a", "1 1 0 0 a"},
				{"RL.RELEASE lock:report a", "1"},
				{"RL.RELEASE lock:report a", "0"},
			},
			run: cmdRelease,
		},
		{
			name: "rl.renew", arity: 4, flags: flagsLimiter, firstKey: 1, lastKey: 1, keyStep: 1,
			summary:    "Extend a live lease to end lease_ms from now: 1 if it was live, else 0.",
			group:      groupRateLimit,
			complexity: "O(n) in the key's live leases",
			args: []arg{
				{name: "key", typ: "key"},
				{name: "lease_id", typ: "string"},
				{name: "lease_ms", typ: "integer"},
			},
			doc: "For work that runs longer than its lease: renew before the lease ends. A lease that " +
				"already ended is not revived (0): its place may have been taken meanwhile.",
			examples: []example{
				{"RL.ACQUIRE lock:sync 1 10000 ID b", "1 1 0 0 b"},
				{"RL.RENEW lock:sync b 60000", "1"},
				{"RL.RENEW lock:sync c 60000", "0"},
			},
			run: cmdRenew,
		},

		{
			name: "rl.reset", arity: 2, flags: []string{"write", "fast"}, firstKey: 1, lastKey: 1, keyStep: 1,
			summary: "Forget a key's limiter state, so its next request starts fresh. 1 if there was one, else 0.",
			group:   groupGeneric, complexity: "O(1)",
			args: []arg{{name: "key", typ: "key"}},
			run:  cmdDel,
		},
		{
			name: "del", arity: -2, flags: []string{"write"}, firstKey: 1, lastKey: -1, keyStep: 1,
			summary: "Delete keys; answers how many existed.",
			group:   groupGeneric, complexity: "O(n) in the keys",
			args: []arg{{name: "key", typ: "key", multiple: true}},
			run:  cmdDel,
		},
		{
			name: "unlink", arity: -2, flags: []string{"write", "fast"}, firstKey: 1, lastKey: -1, keyStep: 1,
			summary: "Delete keys, as DEL (states are small, nothing is left to free in the background).",
			group:   groupGeneric, complexity: "O(n) in the keys",
			args: []arg{{name: "key", typ: "key", multiple: true}},
			run:  cmdDel,
		},
		{
			name: "exists", arity: -2, flags: flagsReadKey, firstKey: 1, lastKey: -1, keyStep: 1,
			summary: "Count how many of the keys exist (a key named twice counts twice).",
			group:   groupGeneric, complexity: "O(n) in the keys",
			args: []arg{{name: "key", typ: "key", multiple: true}},
			run:  cmdExists,
		},
		{
			name: "type", arity: 2, flags: flagsReadKey, firstKey: 1, lastKey: 1, keyStep: 1,
			summary: "Name the algorithm whose state the key holds (rl.token, rl.log, ..., cl.throttle, rl.lease), or none.",
			group:   groupGeneric, complexity: "O(1)",
			args: []arg{{name: "key", typ: "key"}},
			run:  cmdType,
		},
		{
			name: "ttl", arity: 2, flags: flagsReadKey, firstKey: 1, lastKey: 1, keyStep: 1,
			summary: "Seconds until the key's state is fresh again and the key goes, rounded up; -2 if absent.",
			group:   groupGeneric, complexity: "O(1)",
			args: []arg{{name: "key", typ: "key"}},
			run:  cmdTTL(1_000_000),
		},
		{
			name: "pttl", arity: 2, flags: flagsReadKey, firstKey: 1, lastKey: 1, keyStep: 1,
			summary: "Milliseconds until the key's state is fresh again (its reset_after_ms); -2 if absent.",
			group:   groupGeneric, complexity: "O(1)",
			args: []arg{{name: "key", typ: "key"}},
			run:  cmdTTL(1_000),
		},
		{
			name: "scan", arity: -2, flags: []string{"readonly"},
			summary: "Iterate over the keys a batch at a time, optionally by glob pattern and algorithm.",
			group:   groupGeneric, complexity: "O(1) per call, O(n) for a full iteration",
			args: []arg{
				{name: "cursor", typ: "integer"},
				{name: "pattern", typ: "pattern", token: "MATCH", optional: true},
				{name: "count", typ: "integer", token: "COUNT", optional: true},
				{name: "type", typ: "string", token: "TYPE", optional: true},
			},
			run: cmdScan,
		},
		{
			name: "keys", arity: 2, flags: []string{"readonly"},
			summary: "List every key matching a glob pattern (walks the whole keyspace: prefer SCAN).",
			group:   groupGeneric, complexity: "O(n) in the keys",
			args: []arg{{name: "pattern", typ: "pattern"}},
			run:  cmdKeys,
		},
		{
			name: "dbsize", arity: 1, flags: flagsReadKey,
			summary: "Count the keys.",
			group:   groupGeneric, complexity: "O(1)",
			run: cmdDBSize,
		},
		{
			name: "flushall", arity: -1, flags: []string{"write"},
			summary: "Remove every key. ASYNC and SYNC are accepted; both finish before the reply.",
			group:   groupGeneric, complexity: "O(n) in the keys",
			args: flushArgs,
			run:  cmdFlush,
		},
		{
			name: "flushdb", arity: -1, flags: []string{"write"},
			summary: "Remove every key, as FLUSHALL (there is one database).",
			group:   groupGeneric, complexity: "O(n) in the keys",
			args: flushArgs,
			run:  cmdFlush,
		},
		{
			name: "memory", arity: -2,
			summary: "A container for memory commands.",
			group:   groupGeneric,
			subs: []*command{
				{
					name: "usage", arity: -3, flags: []string{"readonly"}, firstKey: 2, lastKey: 2, keyStep: 1,
					summary: "Bytes the key costs the server: key, state, index and expiry share; null if absent.",
					group:   groupGeneric, complexity: "O(1)",
					args: []arg{
						{name: "key", typ: "key"},
						{name: "count", typ: "integer", token: "SAMPLES", optional: true},
					},
					run: cmdMemoryUsage,
				},
				{
					name: "purge", arity: 2,
					summary: "Collect garbage and give free memory back to the OS, so INFO's used_memory counts live data only.",
					group:   groupGeneric, complexity: "O(n) in the heap",
					run: cmdMemoryPurge,
				},
			},
		},

		{
			name: "ping", arity: -1, flags: []string{"fast", "stale"},
			summary: "Answer PONG, or the message.",
			group:   groupConnection, complexity: "O(1)",
			args: []arg{{name: "message", typ: "string", optional: true}},
			run:  cmdPing,
		},
		{
			name: "echo", arity: 2, flags: []string{"fast", "loading", "stale"},
			summary: "Answer the message.",
			group:   groupConnection, complexity: "O(1)",
			args: []arg{{name: "message", typ: "string"}},
			run:  cmdEcho,
		},
		{
			name: "quit", arity: -1, flags: []string{"noscript", "loading", "stale", "fast", "no-auth"},
			summary: "Answer OK and close the connection.",
			group:   groupConnection, complexity: "O(1)",
			run: cmdQuit,
		},
		{
			name: "hello", arity: -1, flags: []string{"noscript", "loading", "stale", "fast", "no-auth"},
			summary: "Switch to RESP2 or RESP3, optionally authenticate and name the connection; answer the server's details.",
			group:   groupConnection, complexity: "O(1)",
			args: []arg{{name: "arguments", typ: "block", optional: true, args: []arg{
				{name: "protover", typ: "integer"},
				{name: "auth", typ: "block", token: "AUTH", optional: true, args: []arg{
					{name: "username", typ: "string"},
					{name: "password", typ: "string"},
				}},
				{name: "clientname", typ: "string", token: "SETNAME", optional: true},
			}}},
			run: cmdHello,
		},
		{
			name: "auth", arity: -2, flags: []string{"noscript", "loading", "stale", "fast", "no-auth"},
			summary: "Authenticate as the default user with the -requirepass password; without one, AUTH default with any password is accepted, as in Redis.",
			group:   groupConnection, complexity: "O(1)",
			args: []arg{
				{name: "username", typ: "string", optional: true},
				{name: "password", typ: "string"},
			},
			run: cmdAuth,
		},
		{
			name: "select", arity: 2, flags: []string{"loading", "stale", "fast"},
			summary: "Select database 0, the only one.",
			group:   groupConnection, complexity: "O(1)",
			args: []arg{{name: "index", typ: "integer"}},
			run:  cmdSelect,
		},
		{
			name: "client", arity: -2,
			summary: "A container for connection commands.",
			group:   groupConnection,
			subs: []*command{
				{
					name: "getname", arity: 2, flags: flagsConn,
					summary: "Answer the connection's name, null if none.",
					group:   groupConnection, complexity: "O(1)",
					run: cmdClientGetName,
				},
				{
					name: "id", arity: 2, flags: flagsConn,
					summary: "Answer the connection's id.",
					group:   groupConnection, complexity: "O(1)",
					run: cmdClientID,
				},
				{
					name: "info", arity: 2, flags: flagsConn,
					summary: "Describe this connection, in CLIENT LIST's format.",
					group:   groupConnection, complexity: "O(1)",
					run: cmdClientInfo,
				},
				{
					name: "list", arity: -2, flags: []string{"admin", "noscript", "loading", "stale"},
					summary: "Describe every connection, one line each.",
					group:   groupConnection, complexity: "O(n) in the connections",
					args: []arg{
						{name: "client-type", typ: "oneof", token: "TYPE", optional: true, args: []arg{
							{name: "normal", typ: "pure-token", token: "NORMAL"},
							{name: "master", typ: "pure-token", token: "MASTER"},
							{name: "replica", typ: "pure-token", token: "REPLICA"},
							{name: "pubsub", typ: "pure-token", token: "PUBSUB"},
						}},
						{name: "client-id", typ: "integer", token: "ID", optional: true, multiple: true},
					},
					run: cmdClientList,
				},
				{
					name: "setinfo", arity: 4, flags: flagsConn,
					summary: "Record the client library's name or version, shown by CLIENT LIST.",
					group:   groupConnection, complexity: "O(1)",
					args: []arg{{name: "attr", typ: "oneof", args: []arg{
						{name: "libname", typ: "string", token: "LIB-NAME"},
						{name: "libver", typ: "string", token: "LIB-VER"},
					}}},
					run: cmdClientSetInfo,
				},
				{
					name: "setname", arity: 3, flags: flagsConn,
					summary: "Name the connection (no spaces); an empty name clears it.",
					group:   groupConnection, complexity: "O(1)",
					args: []arg{{name: "connection-name", typ: "string"}},
					run:  cmdClientSetName,
				},
				{
					name: "kill", arity: -3, flags: []string{"admin", "noscript", "loading", "stale"},
					summary: "Close connections: by TYPE (normal, pubsub, replica, master), ID or ADDR, the caller's own unless SKIPME yes; answer how many.",
					group:   groupConnection, complexity: "O(n) in the connections",
					args: []arg{
						{name: "client-type", typ: "oneof", token: "TYPE", optional: true, args: []arg{
							{name: "normal", typ: "pure-token", token: "NORMAL"},
							{name: "master", typ: "pure-token", token: "MASTER"},
							{name: "replica", typ: "pure-token", token: "REPLICA"},
							{name: "pubsub", typ: "pure-token", token: "PUBSUB"},
						}},
						{name: "client-id", typ: "integer", token: "ID", optional: true},
						{name: "ip:port", typ: "string", token: "ADDR", optional: true},
						{name: "yes/no", typ: "string", token: "SKIPME", optional: true},
					},
					doc: "Sentinel sends `CLIENT KILL TYPE normal` and `CLIENT KILL TYPE pubsub` after it " +
						"reconfigures a server, so that clients reconnect and ask it where the primary is. " +
						"`TYPE master` on a replica drops its link to the primary (it reconnects and " +
						"continues from the backlog); `TYPE replica` on a primary drops its replicas' links.",
					run: cmdClientKill,
				},
			},
		},

		{
			name: "command", arity: -1, flags: []string{"loading", "stale"},
			summary: "Describe every command, as COMMAND INFO does.",
			group:   groupServer, complexity: "O(n) in the commands",
			run: cmdCommand,
			subs: []*command{
				{
					name: "count", arity: 2, flags: []string{"loading", "stale"},
					summary: "Count the commands.",
					group:   groupServer, complexity: "O(1)",
					run: cmdCommandCount,
				},
				{
					name: "docs", arity: -2, flags: []string{"loading", "stale"},
					summary: "Document commands: summary, group and arguments (redis-cli's hints come from here); all when none is named.",
					group:   groupServer, complexity: "O(n) in the commands",
					args: []arg{{name: "command-name", typ: "string", optional: true, multiple: true}},
					run:  cmdCommandDocs,
				},
				{
					name: "info", arity: -2, flags: []string{"loading", "stale"},
					summary: "Describe commands: arity, flags, key positions; all when none is named.",
					group:   groupServer, complexity: "O(n) in the commands",
					args: []arg{{name: "command-name", typ: "string", optional: true, multiple: true}},
					run:  cmdCommandInfo,
				},
				{
					name: "list", arity: -2, flags: []string{"loading", "stale"},
					summary: "List command names, optionally filtered.",
					group:   groupServer, complexity: "O(n) in the commands",
					args: []arg{{name: "filterby", typ: "oneof", token: "FILTERBY", optional: true, args: []arg{
						{name: "module-name", typ: "string", token: "MODULE"},
						{name: "category", typ: "string", token: "ACLCAT"},
						{name: "pattern", typ: "pattern", token: "PATTERN"},
					}}},
					run: cmdCommandList,
				},
			},
		},
		{
			name: "config", arity: -2,
			summary: "A container for server configuration commands.",
			group:   groupServer,
			subs: []*command{
				{
					name: "get", arity: -3, flags: []string{"admin", "noscript", "loading", "stale"},
					summary: "Answer the configuration parameters matching the glob patterns (save, appendonly, maxmemory, databases, ...).",
					group:   groupServer, complexity: "O(n) in the parameters",
					args: []arg{{name: "parameter", typ: "string", multiple: true}},
					run:  cmdConfigGet,
				},
				{
					name: "rewrite", arity: 2, flags: []string{"admin", "noscript", "loading", "stale"},
					summary: "Write the configuration to the config file: rlserver has none yet, so an error (not an unknown command: Sentinel sends it).",
					group:   groupServer, complexity: "O(1)",
					run: cmdConfigRewrite,
				},
			},
		},
		{
			name: "info", arity: -1, flags: []string{"loading", "stale"},
			summary: "Describe the server: server, clients, memory, stats (allowed and limited per command), keyspace.",
			group:   groupServer, complexity: "O(1)",
			args: []arg{{name: "section", typ: "string", optional: true, multiple: true}},
			run:  cmdInfo,
		},
		{
			name: "time", arity: 1, flags: []string{"loading", "stale", "fast"},
			summary: "Answer the server clock: Unix seconds and microseconds (the debug clock when frozen).",
			group:   groupServer, complexity: "O(1)",
			run: cmdTime,
		},
		{
			name: "save", arity: 1, flags: []string{"admin", "noscript"},
			summary: "Write the snapshot file now and answer when it is on disk (needs -snapshot PATH).",
			group:   groupServer, complexity: "O(n) in the keys",
			doc: "Written as the background saves are: shard by shard, each under its own lock for the " +
				"time it takes to encode it, so requests go on meanwhile; into a temporary file that is " +
				"synced and renamed over the snapshot. Without `-snapshot`, an error.",
			run: cmdSave,
		},
		{
			name: "lastsave", arity: 1, flags: []string{"loading", "stale", "fast"},
			summary: "Answer the Unix time of the last successful snapshot (of the start if none yet).",
			group:   groupServer, complexity: "O(1)",
			run: cmdLastSave,
		},
		{
			name: "shutdown", arity: -1, flags: flagsAdmin,
			summary: "Stop the server: close every connection and exit, saving the snapshot first unless NOSAVE.",
			group:   groupServer, complexity: "O(n) in the connections",
			doc: "With `-snapshot`, `SHUTDOWN` and `SHUTDOWN SAVE` write the snapshot and, if that fails, " +
				"answer an error and keep serving; `SHUTDOWN NOSAVE` stops without saving. `SHUTDOWN SAVE` " +
				"without `-snapshot` is an error. A successful SHUTDOWN answers nothing: the connection closes.",
			args: []arg{{name: "save-selector", typ: "oneof", optional: true, args: []arg{
				{name: "nosave", typ: "pure-token", token: "NOSAVE"},
				{name: "save", typ: "pure-token", token: "SAVE"},
			}}},
			run: cmdShutdown,
		},
		{
			name: "debug", arity: -2, flags: flagsAdmin,
			summary: "Set the server clock, for tests: only when started with -enable-debug-command.",
			group:   groupServer, complexity: "O(1)",
			doc: "`SET` freezes the clock at `unix_us` microseconds since the Unix epoch; `ADVANCE` " +
				"moves it `us` forward and leaves it frozen (from the real clock, at the real time plus " +
				"`us`); `REAL` follows the real time again. Every command reads this clock, so a test " +
				"and a reference implementation can share one. Without the flag, DEBUG answers an error, " +
				"as Redis does without `enable-debug-command`.",
			args: []arg{
				{name: "clock", typ: "pure-token", token: "CLOCK"},
				{name: "action", typ: "oneof", args: []arg{
					{name: "unix_us", typ: "integer", token: "SET"},
					{name: "us", typ: "integer", token: "ADVANCE"},
					{name: "real", typ: "pure-token", token: "REAL"},
				}},
			},
			run: cmdDebug,
		},

		{
			name: "cluster", arity: -2,
			summary: "A container for cluster commands: what Redis Cluster clients ask to find the node of a key.",
			group:   groupCluster,
			subs: []*command{
				{
					name: "info", arity: 2, flags: []string{"loading", "stale"},
					summary: "Describe the cluster in CLUSTER INFO's lines: state ok, every slot assigned, the node count and epochs.",
					group:   groupCluster, complexity: "O(1)",
					run: cmdClusterInfo,
				},
				{
					name: "keyslot", arity: 3, flags: []string{"loading", "stale"},
					summary: "Answer the key's hash slot: CRC16 of the key, or of its {hash tag}, modulo 16384.",
					group:   groupCluster, complexity: "O(n) in the key's length",
					args: []arg{{name: "key", typ: "string"}},
					run:  cmdClusterKeySlot,
				},
				{
					name: "myid", arity: 2, flags: []string{"loading", "stale"},
					summary: "Answer this node's id: the SHA-1 of its host:port in -cluster-nodes, in hex.",
					group:   groupCluster, complexity: "O(1)",
					run: cmdClusterMyID,
				},
				{
					name: "nodes", arity: 2, flags: []string{"loading", "stale"},
					summary: "Describe every node in Redis's CLUSTER NODES lines: id, address, flags, epoch, slots.",
					group:   groupCluster, complexity: "O(n) in the nodes",
					run: cmdClusterNodes,
				},
				{
					name: "shards", arity: 2, flags: []string{"loading", "stale"},
					summary: "Describe every shard, one node each: its slots and the node's id, address, role and health.",
					group:   groupCluster, complexity: "O(n) in the nodes",
					run: cmdClusterShards,
				},
				{
					name: "slots", arity: 2, flags: []string{"loading", "stale"},
					summary: "Map slot ranges to nodes: first slot, last slot, [host, port, id]; cluster clients route by it.",
					group:   groupCluster, complexity: "O(n) in the nodes",
					doc: "Cluster mode: start every node with the same `-cluster-nodes host:port,host:port,...` " +
						"and its own index in that list as `-cluster-self`. The 16384 slots are split evenly in " +
						"the order given, or as given (`host:port@first-last` for every node). A node runs a " +
						"command only when its keys hash to one of its own slots; it answers " +
						"`MOVED <slot> <host>:<port>` for another node's key and `CROSSSLOT Keys in request " +
						"don't hash to the same slot` for keys of several slots (DEL, EXISTS, RL.ALL: give related " +
						"keys one `{hash tag}`). Commands without keys (SCAN, DBSIZE, FLUSHALL, ...) work on the " +
						"node's own keys. The topology is static: the nodes never talk, and resharding is a " +
						"restart with a new one. Without cluster mode, every CLUSTER subcommand, READONLY and " +
						"READWRITE answer `ERR This instance has cluster support disabled`.",
					run: cmdClusterSlots,
				},
			},
		},
		{
			name: "readonly", arity: 1, flags: []string{"fast", "loading", "stale"},
			summary: "Allow reads from replicas, as cluster clients ask: there are none, so only OK (cluster mode).",
			group:   groupCluster, complexity: "O(1)",
			run: cmdReadWrite,
		},
		{
			name: "readwrite", arity: 1, flags: []string{"fast", "loading", "stale"},
			summary: "Stop reading from replicas, as cluster clients ask: there are none, so only OK (cluster mode).",
			group:   groupCluster, complexity: "O(1)",
			run: cmdReadWrite,
		},

		{
			name: "replicaof", arity: 3, flags: []string{"admin", "noscript", "stale"},
			summary: "Replicate host:port's rlserver (read-only, fed its writes' effects), or with NO ONE become a primary.",
			group:   groupServer, complexity: "O(1); a full sync is O(n) in the keys, in the background",
			args: []arg{{name: "args", typ: "oneof", args: []arg{
				{name: "host-port", typ: "block", args: []arg{
					{name: "host", typ: "string"},
					{name: "port", typ: "integer"},
				}},
				{name: "no-one", typ: "block", args: []arg{
					{name: "no", typ: "pure-token", token: "NO"},
					{name: "one", typ: "pure-token", token: "ONE"},
				}},
			}}},
			doc: "A replica answers reads (PEEK, TTL, EXISTS, TYPE, SCAN, INFO, ...) and refuses writes with " +
				"`READONLY You can't write against a read only replica.`. It connects to the primary (with " +
				"`-masterauth` if the primary has `-requirepass`) and sends `RLSYNC`; the primary streams " +
				"its snapshot, then the effect of every write: the key's resulting state and absolute " +
				"deadline, a deletion or a flush, never the command, so a replica's clock decides nothing. " +
				"After a disconnection the replica continues from the primary's backlog (`-repl-backlog-size`) " +
				"when it still holds its offset, else syncs in full again. An unreachable primary is retried " +
				"with backoff (100 ms to 5 s) while the replica keeps serving reads and INFO says " +
				"`master_link_status:down`. `REPLICAOF NO ONE` makes it a primary with a new replication id: " +
				"this is what Sentinel sends to promote it. The flag `-replicaof host:port` starts a server " +
				"as a replica. Not in cluster mode.",
			run: cmdReplicaOf,
		},
		{
			name: "slaveof", arity: 3, flags: []string{"admin", "noscript", "stale"},
			summary: "The old name of REPLICAOF, which Sentinel sends.",
			group:   groupServer, complexity: "O(1)",
			args: []arg{{name: "host", typ: "string"}, {name: "port", typ: "string"}},
			run:  cmdReplicaOf,
		},
		{
			name: "role", arity: 1, flags: []string{"noscript", "loading", "stale", "fast"},
			summary: "Answer the replication role: master, offset and replicas; or slave, primary host and port, link state and offset.",
			group:   groupServer, complexity: "O(1)",
			run: cmdRole,
		},
		{
			name: "replconf", arity: -1, flags: []string{"admin", "noscript", "loading", "stale"},
			summary: "Options a replica announces to its primary: accepted and ignored (a replica's REPLCONF ACK goes on its link).",
			group:   groupServer, complexity: "O(1)",
			args: []arg{{name: "option", typ: "string", optional: true, multiple: true}},
			run:  cmdReplConf,
		},
		{
			name: "rlsync", arity: 4, flags: []string{"admin", "noscript"},
			summary: "Internal: a replica asks for the stream from offset under replid (\"?\" -1: a full sync); the connection becomes its link.",
			group:   groupServer, complexity: "O(n) in the keys for a full sync",
			args: []arg{
				{name: "replid", typ: "string"},
				{name: "offset", typ: "integer"},
				{name: "listening-port", typ: "integer"},
			},
			noMulti: true,
			run:     cmdRLSync,
		},
		{
			name: "psync", arity: -3, flags: []string{"admin", "noscript"},
			summary: "Refused: a Redis replica cannot follow rlserver, whose stream is its own (RLSYNC).",
			group:   groupServer, complexity: "O(1)",
			args: []arg{{name: "replicationid", typ: "string"}, {name: "offset", typ: "integer"}},
			run:  cmdPSync,
		},
		{
			name: "sync", arity: 1, flags: []string{"admin", "noscript"},
			summary: "Refused: a Redis replica cannot follow rlserver, whose stream is its own (RLSYNC).",
			group:   groupServer, complexity: "O(1)",
			run: cmdPSync,
		},

		{
			name: "subscribe", arity: -2, flags: []string{"pubsub", "noscript", "loading", "stale"},
			summary: "Receive the messages published on the channels; Sentinels meet on __sentinel__:hello.",
			group:   groupPubSub, complexity: "O(n) in the channels",
			args:    []arg{{name: "channel", typ: "string", multiple: true}},
			noMulti: true,
			run:     subscribeCmd(false),
		},
		{
			name: "psubscribe", arity: -2, flags: []string{"pubsub", "noscript", "loading", "stale"},
			summary: "Receive the messages published on the channels matching the glob patterns.",
			group:   groupPubSub, complexity: "O(n) in the patterns",
			args:    []arg{{name: "pattern", typ: "pattern", multiple: true}},
			noMulti: true,
			run:     subscribeCmd(true),
		},
		{
			name: "unsubscribe", arity: -1, flags: []string{"pubsub", "noscript", "loading", "stale"},
			summary: "Stop receiving the channels' messages; all channels when none is named.",
			group:   groupPubSub, complexity: "O(n) in the channels",
			args: []arg{{name: "channel", typ: "string", optional: true, multiple: true}},
			run:  unsubscribeCmd(false),
		},
		{
			name: "punsubscribe", arity: -1, flags: []string{"pubsub", "noscript", "loading", "stale"},
			summary: "Stop receiving the patterns' messages; all patterns when none is named.",
			group:   groupPubSub, complexity: "O(n) in the patterns",
			args: []arg{{name: "pattern", typ: "pattern", optional: true, multiple: true}},
			run:  unsubscribeCmd(true),
		},
		{
			name: "publish", arity: 3, flags: []string{"pubsub", "loading", "stale", "fast"},
			summary: "Send a message to the channel's subscribers on this server; answer how many received it.",
			group:   groupPubSub, complexity: "O(n+m) in the subscribers and the patterns",
			args: []arg{{name: "channel", typ: "string"}, {name: "message", typ: "string"}},
			doc: "Messages stay on the server they are published on (replicas do not pass them on): " +
				"Sentinel publishes on every server it watches. In RESP3 messages and (un)subscribe " +
				"confirmations are push replies and a subscribed connection may send any command; in " +
				"RESP2 it may only (un)subscribe, PING, QUIT and RESET, as in Redis.",
			run: cmdPublish,
		},

		{
			name: "multi", arity: 1, flags: []string{"noscript", "loading", "stale", "fast"},
			summary: "Start a transaction: the commands that follow are queued until EXEC.",
			group:   groupTransactions, complexity: "O(1)",
			tx:  true,
			run: cmdMulti,
		},
		{
			name: "exec", arity: 1, flags: []string{"noscript", "loading", "stale"},
			summary: "Run the queued commands, one after the other, and answer their replies in one array.",
			group:   groupTransactions, complexity: "O(n) in the commands queued",
			doc: "A command refused when queued (unknown, wrong number of arguments) discards the whole " +
				"transaction: EXEC answers `EXECABORT`. One that fails when run answers its error in its " +
				"place, and the others run. Sentinel relies on this to send `SLAVEOF`, `CONFIG REWRITE`, " +
				"`CLIENT KILL TYPE normal` and `CLIENT KILL TYPE pubsub` in one transaction. Each command " +
				"is atomic by itself; there is no WATCH.",
			tx:  true,
			run: cmdExec,
		},
		{
			name: "discard", arity: 1, flags: []string{"noscript", "loading", "stale", "fast"},
			summary: "Drop the queued commands and leave the transaction.",
			group:   groupTransactions, complexity: "O(n) in the commands queued",
			tx:  true,
			run: cmdDiscard,
		},
	}
	commandIndex = make(map[string]*command, len(commands))
	for _, c := range commands {
		c.full = c.name
		c.noAuth = slices.Contains(c.flags, "no-auth")
		c.write = slices.Contains(c.flags, "write")
		c.peekable = takesPeek(c.args)
		c.loadingOK = slices.Contains(c.flags, "loading")
		c.id, allCommands = len(allCommands), append(allCommands, c)
		commandIndex[c.name] = c
		if c.subs == nil {
			continue
		}
		// Every container answers HELP, which Redis's unknown-subcommand error points to.
		c.subs = append(c.subs, &command{
			name: "help", arity: 2, flags: []string{"loading", "stale"},
			summary: "Show helpful text about the different subcommands.",
			group:   c.group, complexity: "O(1)",
			run: cmdHelp,
		})
		c.subIndex = make(map[string]*command, len(c.subs))
		for _, sub := range c.subs {
			sub.parent = c
			sub.full = c.name + "|" + sub.name
			sub.write = slices.Contains(sub.flags, "write")
			sub.loadingOK = slices.Contains(sub.flags, "loading")
			sub.id, allCommands = len(allCommands), append(allCommands, sub)
			c.subIndex[sub.name] = sub
		}
	}
}

// takesPeek reports whether one of args, or of their parts, is the PEEK token.
func takesPeek(args []arg) bool {
	return slices.ContainsFunc(args, func(a arg) bool { return a.token == "PEEK" || takesPeek(a.args) })
}

// lookup finds a command by name, case-insensitively, without allocating: names
// are lowered into a stack buffer, and Go does not copy for map lookups by string(b).
func lookup(index map[string]*command, name []byte) *command {
	var buf [16]byte
	if len(name) > len(buf) {
		return nil
	}
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return index[string(buf[:len(name)])]
}

// lookupFull finds a command or subcommand by its full name ("client|setname"), as
// COMMAND INFO and COMMAND DOCS take them.
func lookupFull(name string) *command {
	name = strings.ToLower(name)
	top, sub, isSub := strings.Cut(name, "|")
	c := commandIndex[top]
	if c == nil || !isSub {
		return c
	}
	return c.subIndex[sub]
}

// upper is Redis's spelling of a command in help texts: upper case, "|" as a space.
func upper(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "|", " "))
}

// syntax is the command's usage line, built from its arguments as redis-cli builds
// its hints: "RL.TOKEN key capacity window_ms [RATE rate] [COST cost] [PEEK]".
func (c *command) syntax() string {
	var b strings.Builder
	b.WriteString(upper(c.full))
	for _, a := range c.args {
		b.WriteByte(' ')
		a.appendSyntax(&b)
	}
	return b.String()
}

func (a arg) appendSyntax(b *strings.Builder) {
	if a.optional {
		b.WriteByte('[')
	}
	if a.token != "" {
		b.WriteString(a.token)
		if a.typ != "pure-token" {
			b.WriteByte(' ')
		}
	}
	a.appendValue(b)
	if a.multiple {
		b.WriteString(" [")
		a.appendValue(b)
		b.WriteString(" ...]")
	}
	if a.optional {
		b.WriteByte(']')
	}
}

// appendValue writes what follows the token: the name, or the alternatives of a
// oneof ("ASYNC|SYNC"), or the parts of a block.
func (a arg) appendValue(b *strings.Builder) {
	switch a.typ {
	case "pure-token":
	case "oneof", "block":
		sep := " "
		if a.typ == "oneof" {
			sep = "|"
		}
		for i, sub := range a.args {
			if i > 0 {
				b.WriteString(sep)
			}
			sub.appendSyntax(b)
		}
	default:
		b.WriteString(a.name)
	}
}
