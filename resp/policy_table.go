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
