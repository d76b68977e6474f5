package resp

import "github.com/rlserver/rlserver/algo"

// flagsLimiter are every limiter's flags.
var flagsLimiter = []string{"write", "fast"}

// limiterArgs are the arguments of an RL.* command: key, the two positional
// numbers, its own option (if any), then COST, PEEK, REFUND and RESERVE.
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
		arg{name: "refund", typ: "integer", token: "REFUND", optional: true},
		arg{name: "reserve", typ: "integer", token: "RESERVE", optional: true},
	)
}

// rlAllArgs are RL.ALL's arguments: one or more rules, each an algorithm word, its
// command's positional arguments and its options; PEEK may come among any rule's.
var rlAllArgs = []arg{{name: "rule", typ: "block", multiple: true, args: []arg{
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
		{name: "refund", typ: "integer", token: "REFUND"},
		{name: "reserve", typ: "integer", token: "RESERVE"},
	}},
}}}

// sliceArgs are RL.SLICE's arguments: an algorithm that takes slices, the key, the
// limiter's positional arguments, the count, and the limiter's options but COST and
// REFUND.
var sliceArgs = []arg{
	{name: "algorithm", typ: "oneof", args: []arg{
		{name: "fixed", typ: "pure-token", token: "FIXED"},
		{name: "slide", typ: "pure-token", token: "SLIDE"},
		{name: "token", typ: "pure-token", token: "TOKEN"},
		{name: "gcra", typ: "pure-token", token: "GCRA"},
	}},
	{name: "key", typ: "key"},
	{name: "limit", typ: "integer"},
	{name: "window_ms", typ: "integer"},
	{name: "count", typ: "integer"},
	{name: "rate", typ: "integer", token: "RATE", optional: true},
	{name: "burst", typ: "integer", token: "BURST", optional: true},
	{name: "reserve", typ: "integer", token: "RESERVE", optional: true},
	{name: "peek", typ: "pure-token", token: "PEEK", optional: true},
}

// limitCommands are the commands of the rate limiters, RL.* and their Redis-compatible peers, in docs/commands.md's order.
var limitCommands = []*command{
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
			{"RL.FIXED api:alice 3 60000 REFUND 2", "1 3 2 0 60000"},
			// RESERVE 2 keeps the last 2 of 10 for the calls without it.
			{"RL.FIXED fleet:api 10 60000 COST 7 RESERVE 2", "1 10 1 0 60000"},
			{"RL.FIXED fleet:api 10 60000 RESERVE 2", "1 10 0 0 60000"},
			{"RL.FIXED fleet:api 10 60000 RESERVE 2", "0 10 0 60000 60000"},
			{"RL.FIXED fleet:api 10 60000", "1 10 1 0 60000"},
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
			"stores only its theoretical arrival time, in integer µs, decided on the µs clock; Redis " +
			"8.8's `GCRA` command (below) keeps a state of its own, on Redis's ms clock (each answers " +
			"WRONGTYPE on the other's keys). Field 2 is the burst. Equivalent to a token " +
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
			{name: "amount", typ: "oneof", optional: true, args: []arg{
				{name: "quantity", typ: "integer"},
				{name: "refund", typ: "integer", token: "REFUND"},
			}},
		},
		doc: "A drop-in for the redis-cell module (and Dragonfly's built-in): same arguments, same " +
			"GCRA, same reply. Field 1 is **limited** (0 = allowed, 1 = limited), times are in " +
			"seconds rounded up, and `retry_after` is -1 when allowed. The emission interval is " +
			"T = round(period_s·10^6 / count_per_period) µs (half up, at least 1), the state an " +
			"integer of µs, and a schedule over 100 years is refused: " +
			"`ERR (max_burst + 1) × period_s / count_per_period must be at most 100 years`. " +
			"`REFUND n` (1 to 1000000000) in place of the quantity gives back n (see the rules above).",
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
		doc: "Redis 8.8's native command, with its arguments, checks, error texts, reply, clock and " +
			"type, so code written for it (go-redis, lettuce, jedis, phpredis and predis ship a method) " +
			"runs against rlserver unchanged. `period` is a float number of seconds, 0 < period < 1e12, " +
			"read as Redis 8 reads one (fast_float: `1.5`, `3600.25`, `1e3`, `+2`, `inf`; not hexadecimal, " +
			"so `0x10` is not a valid float; `1e400` reads as inf and `1e-400` as 0, out of the period's " +
			"range); the emission interval is T = max(1, (long long)(period·10^6 / tokens_per_period + " +
			"0.5)) µs, computed in doubles as Redis does. `max_burst + 1` requests pass at once; " +
			"`TOKENS n` (1 to 2^63-1, default 1) is the request's cost. As Redis, GCRA decides on the " +
			"command's time in whole milliseconds (so at most one call a ms passes once T is below a " +
			"ms and the burst is spent), stores the theoretical arrival time in µs, and expires the key " +
			"at that time rounded up to the ms (the key goes as that ms begins; Redis drops it as the ms " +
			"ends). The reply is redis-cell's: **limited** (0 = allowed, 1 = limited), `max_burst + 1`, " +
			"remaining, `retry_after` in seconds rounded up (-1 when allowed, and when n can never fit) " +
			"and `reset_after` in seconds rounded up. `TYPE` answers `gcra`; the state is its own, not " +
			"RL.GCRA's (each answers WRONGTYPE on the other's key), and `DUMP`/`RESTORE` and " +
			"`GCRASETVALUE` carry it. Errors are Redis's: " +
			"`ERR value is out of range, must be positive` (max_burst), " +
			"`ERR value is not an integer or out of range`, " +
			"`ERR value is out of range, value must between 1 and 9223372036854775807` " +
			"(tokens_per_period, TOKENS), `ERR value is not a valid float`, " +
			"`ERR period must be > 0 and < 1e12`, `ERR Missing TOKENS value`, `ERR syntax error`, " +
			"and Redis's overflow checks of int64 µs: T·n, T·(max_burst+1) and the new arrival time " +
			"(`ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and " +
			"TOKENS would cause an overflow`, and the same naming max_burst). No other bound: " +
			"`GCRA k 4000000000 1 1` holds its key 126 years. Nothing changes on any error. GCRA is not " +
			"a rule of RL.ALL, whose word GCRA means RL.GCRA.",
		examples: []example{
			{"GCRA api:grace 15 30 60", "0 16 15 -1 2"},
			{"GCRA api:grace 15 30 60 TOKENS 16", "1 16 15 2 2"},
			{"TYPE api:grace", "gcra"},
		},
		run: limiter(parseGCRA),
	},
	{
		name: "gcrasetvalue", arity: 3, flags: []string{"write", "denyoom", "fast"}, firstKey: 1, lastKey: 1, keyStep: 1,
		summary:    "Set a GCRA key's theoretical arrival time (µs since the epoch), as Redis 8.8 replicates GCRA.",
		group:      groupRateLimit,
		complexity: "O(1)",
		args:       []arg{{name: "key", typ: "key"}, {name: "tat", typ: "integer"}},
		doc: "Redis's command for replication and AOF rewrite, here so that a stream of Redis's GCRA " +
			"effects replays: the key holds GCRA's state `tat` and goes at `tat` rounded up to the ms " +
			"(at once if that is past). `OK`; WRONGTYPE on a key of another type (checked first), " +
			"`ERR Invalid TaT value` for a tat that is not an integer, " +
			"`ERR Invalid negative TaT value`.",
		run: cmdGCRASetValue,
	},
	{
		// The keys sit among the rules' other arguments: movablekeys, as Redis marks
		// such commands; firstKey is where the first rule's key always is.
		name: "rl.all", arity: -5, flags: []string{"write", "fast", "movablekeys"}, firstKey: 2, lastKey: 2, keyStep: 1,
		summary:    "Several limits at once, all or nothing: every rule consumes if every rule admits, else none does.",
		group:      groupRateLimit,
		complexity: "O(n) in the rules, each as its own command",
		args:       rlAllArgs,
		doc: "Each rule is an algorithm (FIXED, SLIDE, LOG, TOKEN, GCRA or LEAKY), then that command's " +
			"key, limit and window_ms, then its options (COST, RATE, BURST, QUEUE, REFUND, RESERVE), in any order; the " +
			"next algorithm word starts the next rule. At most 64 rules, each on its own key. `PEEK` " +
			"may come among any rule's options and applies to the whole call. The reply is `allowed` " +
			"(1 if every rule admits), then each rule's five fields in order. If every rule admits, " +
			"all consume and each shows its own answer. If one refuses (or PEEK), nothing is written " +
			"anywhere and each rule shows what it alone would answer with PEEK: the refusing rule its " +
			"`retry_after_ms`, the others the remaining they would leave. So a request denied by the " +
			"third limit has not consumed from the first two. The store locks the rules' shards in " +
			"ascending order and decides them all under those locks. Errors are the single commands' " +
			"errors, plus `ERR RL.ALL names the same key in two rules`, `ERR RL.ALL takes at most 64 " +
			"rules` and `ERR unknown algorithm ...`; nothing changes on any of them. A rule may give back " +
			"with `REFUND n` instead of spending: a refund always admits, so a call of refunds alone gives " +
			"back on every key at once.",
		examples: []example{
			{"RL.ALL FIXED user:frank 100 60000 TOKEN ip:10.0.0.1 2 1000", "1 [1 100 99 0 60000] [1 2 1 0 500]"},
			{"RL.ALL FIXED user:frank 100 60000 TOKEN ip:10.0.0.1 2 1000", "1 [1 100 98 0 60000] [1 2 0 0 1000]"},
			{"RL.ALL FIXED user:frank 100 60000 TOKEN ip:10.0.0.1 2 1000", "0 [1 100 97 0 60000] [0 2 0 500 1000]"},
		},
		keys: rlAllKeys,
		run:  cmdRLAll,
	},
	{
		// Its key follows the algorithm word, as an RL.ALL rule's.
		name: "rl.slice", arity: -6, flags: flagsLimiter, firstKey: 2, lastKey: 2, keyStep: 1,
		summary:    "Take up to count units of a key's limit now, spent as count requests would be, for a client to admit from in-process; answers granted, limit, remaining, retry_after_ms, reset_after_ms and valid_ms.",
		group:      groupRateLimit,
		complexity: "O(1)",
		args:       sliceArgs,
		doc: "A quota slice, for a client that decides its requests in-process instead of calling " +
			"the server for each (not a lease: RL.ACQUIRE counts concurrent holders, a slice is " +
			"rate spent early). The server takes what fits of `count` (1 to limit) now: the largest " +
			"c ≤ count that a call of `COST c` would pass, with its `RESERVE` if any, and spends it as " +
			"that call would, so replicas, the snapshot and the append-only log carry it as any spend. " +
			"The reply is `[granted, limit, remaining, retry_after_ms, reset_after_ms, valid_ms]`: " +
			"`granted` is 0 to count (partial when fewer remain; 0 writes nothing, and " +
			"`retry_after_ms` is then the time until one unit fits), the next four are the " +
			"limiter's own after the slice, and `valid_ms` (rounded down, 0 when nothing is granted) " +
			"is how long the client may admit requests from the slice, counted from when it sent " +
			"RL.SLICE: RL.FIXED and RL.SLIDE to the end of the window the slice was counted in, so " +
			"a key never admits more than its limit in a window, slices and calls together; RL.TOKEN " +
			"the time the bucket refills from empty (capacity · window_ms / rate) and RL.GCRA τ " +
			"(burst · emission interval): the long-run rate is exact, and over any span t at most " +
			"what the bucket admits over t + valid_ms is used, so a burst can pass the capacity by " +
			"the units still held, at most one capacity. What the client did not use goes back with " +
			"the limiter's own `REFUND` (`RL.FIXED key limit window_ms REFUND n`), within the window " +
			"for RL.FIXED and RL.SLIDE: a refund never leaves more room than a fresh key has. `PEEK` " +
			"answers what would be granted and spends nothing. The algorithm word is RL.ALL's; its " +
			"options are the limiter's (`RATE`, `BURST`, `RESERVE`, `PEEK`). RL.LOG and RL.LEAKY " +
			"take none (`ERR RL.SLICE takes no LOG: a log entry's time is its request's, and a slice " +
			"is spent before its requests come`; `ERR RL.SLICE takes no LEAKY: its queue's order is " +
			"the point, and a slice's requests would jump it`); `ERR count must be an integer between " +
			"1 and <limit>`; `ERR RL.SLICE takes neither COST nor REFUND: count is what it takes; give " +
			"back with the limiter's REFUND`. Nothing changes on any error.",
		examples: []example{
			{"RL.SLICE FIXED api:acme 100 60000 40", "40 100 60 0 60000 60000"},
			{"RL.SLICE FIXED api:acme 100 60000 40", "40 100 20 0 60000 60000"},
			{"RL.SLICE FIXED api:acme 100 60000 40", "20 100 0 0 60000 60000"},
			{"RL.SLICE FIXED api:acme 100 60000 40", "0 100 0 60000 60000 0"},
			// The client used 5 of its last 20: it gives back 15.
			{"RL.FIXED api:acme 100 60000 REFUND 15", "1 100 15 0 60000"},
			{"RL.SLICE TOKEN user:7 10 1000 4", "4 10 6 0 400 1000"},
			{"RL.SLICE GCRA user:8 10 1000 8 RESERVE 4", "6 10 0 0 600 1000"},
		},
		run: cmdSlice,
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
			{name: "reserve", typ: "integer", token: "RESERVE", optional: true},
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
			"lease's end. `RESERVE n` (0 to limit) keeps n places for calls without it: a new lease is " +
			"taken only while fewer than limit − n are live (an ID's retry still extends its lease), " +
			"`remaining` counts limit − n, and `retry_after_ms` is -1 when n = limit.",
		examples: []example{
			{"RL.ACQUIRE jobs:export 2 30000 ID w1", "1 2 1 0 w1"},
			{"RL.ACQUIRE jobs:export 2 30000 ID w2", "1 2 0 0 w2"},
			{"RL.ACQUIRE jobs:export 2 30000 ID w3", "0 2 0 30000 (nil)"},
			{"RL.ACQUIRE jobs:batch 3 30000 ID b1 RESERVE 1", "1 3 1 0 b1"},
			{"RL.ACQUIRE jobs:batch 3 30000 ID b2 RESERVE 1", "1 3 0 0 b2"},
			{"RL.ACQUIRE jobs:batch 3 30000 ID b3 RESERVE 1", "0 3 0 30000 (nil)"},
			{"RL.ACQUIRE jobs:batch 3 30000 ID c1", "1 3 0 0 c1"},
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
}
