package resp

// flagsAdmin are the flags of an administrative command.
var flagsAdmin = []string{"admin", "noscript", "loading", "stale"}

// serverCommands are the commands of the server: introspection, configuration, persistence, shutdown, in docs/commands.md's order.
var serverCommands = []*command{
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
}
