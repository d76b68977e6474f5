package resp

// policyArgs are RL.POLICY's arguments.
var policyArgs = []arg{
	{name: "domain", typ: "string"},
	{name: "hits", typ: "integer", token: "HITS", optional: true},
	{name: "descriptor", typ: "block", multiple: true, args: []arg{
		{name: "descriptor", typ: "pure-token", token: "DESCRIPTOR"},
		{name: "amount", typ: "oneof", optional: true, args: []arg{
			{name: "hits", typ: "integer", token: "HITS"},
			{name: "refund", typ: "integer", token: "REFUND"},
		}},
		{name: "limit", typ: "block", token: "LIMIT", optional: true, args: []arg{
			{name: "requests_per_unit", typ: "integer"},
			{name: "unit", typ: "string"},
		}},
		{name: "entry", typ: "block", multiple: true, args: []arg{
			{name: "key", typ: "string"},
			{name: "value", typ: "string"},
		}},
	}},
}

// resolveArgs are RL.RESOLVE's arguments: RL.POLICY's, less what spends.
var resolveArgs = []arg{
	{name: "domain", typ: "string"},
	{name: "descriptor", typ: "block", multiple: true, args: []arg{
		{name: "descriptor", typ: "pure-token", token: "DESCRIPTOR"},
		{name: "limit", typ: "block", token: "LIMIT", optional: true, args: []arg{
			{name: "requests_per_unit", typ: "integer"},
			{name: "unit", typ: "string"},
		}},
		{name: "entry", typ: "block", multiple: true, args: []arg{
			{name: "key", typ: "string"},
			{name: "value", typ: "string"},
		}},
	}},
}

// policyCommands are the commands of the policies (-limits): decide a request, show
// the policy, and who is refused most. They follow the limiters in docs/commands.md.
var policyCommands = []*command{
	{
		name: "rl.policy", arity: -4, flags: []string{"write"},
		summary: "Decide a request of a domain against the policy in force (-limits), as Envoy's rate limit service: " +
			"overall code, then each descriptor's code, limit, remaining, reset_after_ms, retry_after_ms, window_ms and rule name.",
		group:      groupRateLimit,
		complexity: "O(n) in the descriptors and their entries",
		args:       policyArgs,
		doc: "The RESP side of the policies Envoy's gateways ask over gRPC (docs/policies.md): the same " +
			"matching, the same decision, the same store keys, so RL.POLICY and ShouldRateLimit on one " +
			"server share their counts. Each `DESCRIPTOR` is RLS's descriptor, its entries `key value` " +
			"pairs in order (`DESCRIPTOR remote_address 10.0.0.1 path /api`). `HITS n` after the domain " +
			"is the request's hits_addend (1 to 1099511627776, default 1); after a DESCRIPTOR, that " +
			"descriptor's own (0 to 1099511627776; 0 checks without spending), or `REFUND n` gives n " +
			"back (RLS's is_negative_hits: never above the limit). `LIMIT requests_per_unit unit` " +
			"(second, minute, hour, day, week, month, year) is RLS's descriptor limit, overriding the " +
			"rule's. A descriptor's options come right after its DESCRIPTOR, its entries after them, " +
			"up to the next DESCRIPTOR. The reply is the overall code (RLS's numbers: 1 OK, " +
			"2 OVER_LIMIT), then per descriptor in request order `[code, limit, remaining, " +
			"reset_after_ms, retry_after_ms, window_ms, name]`: limit is the rule's requests_per_unit " +
			"and window_ms its window, both 0, and name a null, where no rule matched or the rule is " +
			"unlimited (remaining 4294967295 then, as envoyproxy/ratelimit); name is the rule's `name` " +
			"(empty when it has none). An unknown domain answers OK with no limits, as theirs. Bad " +
			"input changes nothing: `ERR RL.POLICY needs at least one DESCRIPTOR`, `ERR a DESCRIPTOR " +
			"needs at least one key value pair`, `ERR a descriptor's entries are key value pairs`, " +
			"`ERR hits must be an integer between ...`, `ERR unit must be second, minute, hour, day, " +
			"week, month or year`, `ERR syntax error`, and the engine's `ERR invalid request: ...` " +
			"(an empty domain or key, more than 64 descriptors, a value over 4096 bytes). Without " +
			"-limits: `ERR no policy in force: start rlserver with -limits`. A write: a replica " +
			"answers READONLY. An example, with a policy loaded, is in docs/policies.md " +
			"(\"Deciding\"), replayed by docs' tests.",
		run: cmdPolicy,
	},
	{
		name: "rl.resolve", arity: -4, flags: []string{"readonly", "loading", "stale"},
		summary: "Resolve a request's descriptors to the rules and state keys RL.POLICY would charge, spending nothing: " +
			"the domain's mode, then each descriptor's mode, key, algorithm, limit, window_us, option, reserve, " +
			"requests_per_unit and rule name.",
		group:      groupRateLimit,
		complexity: "O(n) in the descriptors and their entries",
		args:       resolveArgs,
		doc: "What a client deciding a policy's requests in-process from slices (RL.SLICE) asks once per " +
			"descriptor set: RL.POLICY's matching (replaces, unlimited, a descriptor's `LIMIT`, priority " +
			"classes) without the decision, so that the slices it takes are of exactly the state RL.POLICY " +
			"and ShouldRateLimit charge. The arguments are RL.POLICY's without HITS or REFUND. The reply is " +
			"the domain's mode (`each`; `all_or_nothing`, whose enforcing descriptors are charged all or none " +
			"and shadow and quota ones only if they were; `unknown`, a domain the policy lacks: RL.POLICY " +
			"answers it OK), then per descriptor in request order `[mode, key, algorithm, limit, window_us, " +
			"option, reserve, requests_per_unit, name]`. mode is `enforce`, `shadow` (charged, never " +
			"refuses), `quota` (charged, never refuses, no reset shown), `unlimited` or `none` (no rule " +
			"matched, the domain is unknown, or another descriptor's rule replaces it); the other fields are " +
			"then null or 0. key is the state key RL.POLICY charges; algorithm one of fixed, slide, log, " +
			"token, gcra, leaky; limit, window_us (the window in microseconds: a policy's window may be finer " +
			"than the RL.* commands' milliseconds) and option (RL.TOKEN's RATE, RL.GCRA's BURST, RL.LEAKY's " +
			"QUEUE, else 0) are the numbers the RL.* command on key takes, reserve the RESERVE of the " +
			"descriptor's priority class; requests_per_unit and name are RL.POLICY's limit and name. " +
			"Deciding from slices of the keys charges them as RL.POLICY would, except that a fixed window's " +
			"refused request counts nothing (RL.POLICY's counts refused hits too, as envoyproxy/ratelimit), " +
			"and the engine's per-rule metrics do not see it (RL.SLICE's statistics do). It spends and " +
			"writes nothing. Bad input answers as RL.POLICY's, with `ERR RL.RESOLVE needs at least one " +
			"DESCRIPTOR` and `ERR RL.RESOLVE spends nothing: it takes no HITS or REFUND`. Without -limits: " +
			"`ERR no policy in force: start rlserver with -limits`.",
		run: cmdResolve,
	},
	{
		name: "rl.limits", arity: 1, flags: []string{"readonly", "loading", "stale"},
		summary:    "Show the policy in force (-limits): each domain's file, and a line per rate limit.",
		group:      groupRateLimit,
		complexity: "O(n) in the policy's rate limits",
		doc: "What an operator checks after a reload: the domains, the file each came from, and per " +
			"rate limit its composite key, limit, algorithm and options, as the HTTP front's `/rlconfig` " +
			"shows them. Without -limits: `ERR no policy in force: start rlserver with -limits`.",
		run: cmdLimits,
	},
	{
		name: "rl.top", arity: -1, flags: []string{"readonly", "loading", "stale"},
		summary:    "List the keys and policy descriptors refused most over the last minute, most first.",
		group:      groupRateLimit,
		complexity: "O(n) in the keys tracked (at most a few thousand)",
		args:       []arg{{name: "count", typ: "integer", token: "COUNT", optional: true}},
		doc: "The first question in an incident: who is being throttled? Each item is `[type, scope, " +
			"name, refused]`: type `key` for an RL.* command's key (scope the command, such as " +
			"`rl.token`; PEEK and REFUND do not count, nor RL.ALL's rules), `descriptor` for a policy " +
			"descriptor (scope its domain, name its entries as `key=value,key2=value2`), and refused " +
			"the calls (descriptors: hits) refused in the last minute. The counts come from bounded " +
			"heavy-hitter sketches (Space-Saving, 256 keys per 10 s): exact for the keys that stand " +
			"out, an overestimate by at most the share of the rest; a key is kept to its first 256 bytes. " +
			"`COUNT n` is 1 to 1000, default 10.",
		examples: []example{
			{"RL.FIXED login:mallory 1 60000", "1 1 0 0 60000"},
			{"RL.FIXED login:mallory 1 60000", "0 1 0 60000 60000"},
			{"RL.FIXED login:mallory 1 60000", "0 1 0 60000 60000"},
			{"RL.TOP COUNT 1", "[key rl.fixed login:mallory 2]"},
		},
		run: cmdTop,
	},
}
