package resp

// flagsReadKey are the flags of a read of one key's state.
var flagsReadKey = []string{"readonly", "fast"}

// flushArgs are FLUSHALL's and FLUSHDB's: Redis's modes, both accepted.
var flushArgs = []arg{{name: "flush-type", typ: "oneof", optional: true, args: []arg{
	{name: "async", typ: "pure-token", token: "ASYNC"},
	{name: "sync", typ: "pure-token", token: "SYNC"},
}}}

// keyCommands are the commands of the keyspace: deletion, inspection, iteration, memory, in docs/commands.md's order.
var keyCommands = []*command{
	{
		name: "rl.reset", arity: 2, flags: []string{"write", "fast"}, firstKey: 1, lastKey: 1, keyStep: 1,
		summary: "Forget a key's limiter state, so its next request starts fresh. 1 if there was one, else 0.",
		group:   groupGeneric, complexity: "O(1)",
		args: []arg{{name: "key", typ: "key"}},
		run:  cmdDel,
	},
	{
		name: "del", arity: -2, flags: []string{"write"}, firstKey: 1, lastKey: -1, keyStep: 1,
		keyFlags: []string{"RM", "delete"},
		summary:  "Delete keys; answers how many existed.",
		group:    groupGeneric, complexity: "O(n) in the keys",
		args: []arg{{name: "key", typ: "key", multiple: true}},
		run:  cmdDel,
	},
	{
		name: "unlink", arity: -2, flags: []string{"write", "fast"}, firstKey: 1, lastKey: -1, keyStep: 1,
		keyFlags: []string{"RM", "delete"},
		summary:  "Delete keys, as DEL (states are small, nothing is left to free in the background).",
		group:    groupGeneric, complexity: "O(n) in the keys",
		args: []arg{{name: "key", typ: "key", multiple: true}},
		run:  cmdDel,
	},
	{
		name: "exists", arity: -2, flags: flagsReadKey, firstKey: 1, lastKey: -1, keyStep: 1,
		keyFlags: []string{"RO"},
		summary:  "Count how many of the keys exist (a key named twice counts twice).",
		group:    groupGeneric, complexity: "O(n) in the keys",
		args: []arg{{name: "key", typ: "key", multiple: true}},
		run:  cmdExists,
	},
	{
		name: "type", arity: 2, flags: flagsReadKey, firstKey: 1, lastKey: 1, keyStep: 1,
		keyFlags: []string{"RO"},
		summary:  "Name the algorithm whose state the key holds (rl.token, rl.log, ..., cl.throttle, rl.lease), or none.",
		group:    groupGeneric, complexity: "O(1)",
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
		name: "pexpiretime", arity: 2, flags: flagsReadKey, firstKey: 1, lastKey: 1, keyStep: 1,
		summary: "The Unix time in ms the key goes at (rounded up, as PTTL); -2 if absent.",
		group:   groupGeneric, complexity: "O(1)",
		args: []arg{{name: "key", typ: "key"}},
		run:  cmdExpireTime(true),
	},
	{
		name: "expiretime", arity: 2, flags: flagsReadKey, firstKey: 1, lastKey: 1, keyStep: 1,
		summary: "The Unix time in seconds the key goes at (PEXPIRETIME's ms, rounded to the nearest s); -2 if absent.",
		group:   groupGeneric, complexity: "O(1)",
		args: []arg{{name: "key", typ: "key"}},
		run:  cmdExpireTime(false),
	},
	{
		name: "dump", arity: 2, flags: []string{"readonly"}, firstKey: 1, lastKey: 1, keyStep: 1,
		summary: "Serialize the key's state for RESTORE (rlserver's own payload, versioned and checksummed); null if absent.",
		group:   groupGeneric, complexity: "O(1), O(n) in an RL.LOG log or a lease set",
		doc: "The payload is the key's snapshot record without its name, then a 2-byte version and " +
			"an 8-byte checksum, laid out as Redis's DUMP payload is, so that either server refuses " +
			"the other's with `ERR DUMP payload version or checksum are wrong`. Its times are " +
			"absolute: restored later, a state has aged by the time between.",
		args: []arg{{name: "key", typ: "key"}},
		run:  cmdDump,
	},
	{
		name: "restore", arity: -4, flags: []string{"write", "denyoom"}, firstKey: 1, lastKey: 1, keyStep: 1,
		summary: "Create a key from a DUMP payload; REPLACE, ABSTTL, IDLETIME and FREQ as Redis.",
		group:   groupGeneric, complexity: "O(1), O(n) in an RL.LOG log or a lease set",
		doc: "Checked in Redis's order: the options (`IDLETIME` and `FREQ` are validated and have no " +
			"effect), `BUSYKEY Target key name already exists.` without `REPLACE`, the TTL " +
			"(`ERR Invalid TTL value, must be >= 0`), then the payload (`ERR DUMP payload version or " +
			"checksum are wrong` for one not written by rlserver's DUMP, Redis's included; " +
			"`ERR Bad data format`). `ttl` 0 keeps the state's own expiry, the moment it would have " +
			"gone; any other `ttl` is the key's expire time in ms, from now or, with `ABSTTL`, since " +
			"the epoch, and a time already past creates nothing (REPLACE still deletes the old key), " +
			"as in Redis.",
		args: []arg{
			{name: "key", typ: "key"},
			{name: "ttl", typ: "integer"},
			{name: "serialized-value", typ: "string"},
			{name: "replace", typ: "pure-token", token: "REPLACE", optional: true},
			{name: "absttl", typ: "pure-token", token: "ABSTTL", optional: true},
			{name: "seconds", typ: "integer", token: "IDLETIME", optional: true},
			{name: "frequency", typ: "integer", token: "FREQ", optional: true},
		},
		run: cmdRestore,
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
				keyFlags: []string{"RO"},
				summary:  "Bytes the key costs the server: key, state, index and expiry share; null if absent.",
				group:    groupGeneric, complexity: "O(1)",
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
		name: "object", arity: -2,
		summary: "A container for key introspection, as Redis's for a module's keys.",
		group:   groupGeneric,
		doc: "rlserver keeps no access times nor frequencies for its keys: IDLETIME and FREQ answer 0 " +
			"for a key that exists (so `redis-cli --hotkeys` runs, and finds none hot), null for one " +
			"that does not. ENCODING answers `raw`, as Redis does for a module's key, and REFCOUNT 1.",
		subs: []*command{
			objectSub("encoding", "The key's encoding: raw; null if absent."),
			objectSub("freq", "The key's access frequency: 0, not tracked; null if absent."),
			objectSub("idletime", "Seconds since the key was accessed: 0, not tracked; null if absent."),
			objectSub("refcount", "The key's reference count: 1; null if absent."),
		},
	},
}

// objectSub is one OBJECT subcommand of a key.
func objectSub(name, summary string) *command {
	return &command{
		name: name, arity: 3, flags: []string{"readonly"}, firstKey: 2, lastKey: 2, keyStep: 1,
		keyFlags: []string{"RO"},
		summary:  summary,
		group:    groupGeneric, complexity: "O(1)",
		args: []arg{{name: "key", typ: "key"}},
		run:  cmdObject,
	}
}
