package resp

// flagsConn are the flags of a CLIENT subcommand about the caller's own connection.
var flagsConn = []string{"noscript", "loading", "stale", "fast"}

// connCommands are the commands of the connection: PING, HELLO, AUTH, CLIENT, in docs/commands.md's order.
var connCommands = []*command{
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
		tx:  true, // inside MULTI too it quits at once, as in Redis
		run: cmdQuit,
	},
	{
		name: "reset", arity: 1, flags: []string{"noscript", "loading", "stale", "fast", "no-auth"},
		summary: "Make the connection as new (no MULTI, subscription, MONITOR, tracking, CLIENT REPLY OFF or name; RESP2; the default user) and answer RESET.",
		group:   groupConnection, complexity: "O(1)",
		tx:  true, // inside MULTI it runs at once, discarding the transaction, as in Redis
		run: cmdReset,
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
					clientTypeArg,
					{name: "client-id", typ: "integer", token: "ID", optional: true, multiple: true},
				},
				run: cmdClientList,
			},
			{
				name: "reply", arity: 3, flags: flagsConn,
				summary: "Drop the replies: OFF those of the commands that follow until ON, SKIP the next one's; only ON is answered.",
				group:   groupConnection, complexity: "O(1)",
				args: []arg{{name: "action", typ: "oneof", args: []arg{
					{name: "on", typ: "pure-token", token: "ON"},
					{name: "off", typ: "pure-token", token: "OFF"},
					{name: "skip", typ: "pure-token", token: "SKIP"},
				}}},
				run: cmdClientReply,
			},
			{
				name: "pause", arity: -3, flags: []string{"admin", "noscript", "loading", "stale"},
				summary: "Hold up the client connections' commands for timeout ms: all of them (ALL, the default) or those that write or publish (WRITE).",
				group:   groupConnection, complexity: "O(1)",
				args: []arg{
					{name: "timeout", typ: "integer"},
					{name: "mode", typ: "oneof", optional: true, args: []arg{
						{name: "write", typ: "pure-token", token: "WRITE"},
						{name: "all", typ: "pure-token", token: "ALL"},
					}},
				},
				doc: "As Redis's: the commands wait before they run or are queued, CLIENT UNPAUSE among " +
					"them under ALL; a second PAUSE keeps the later end and the stricter mode. A replica's " +
					"link is not held up.",
				run: cmdClientPause,
			},
			{
				name: "unpause", arity: 2, flags: []string{"admin", "noscript", "loading", "stale"},
				summary: "End CLIENT PAUSE now.",
				group:   groupConnection, complexity: "O(n) in the connections held up",
				run: cmdClientUnpause,
			},
			{
				name: "no-evict", arity: 3, flags: []string{"admin", "noscript", "loading", "stale"},
				summary: "Mark the connection as one client eviction spares (flag e): rlserver evicts no client, so only the flag changes.",
				group:   groupConnection, complexity: "O(1)",
				args: []arg{{name: "enabled", typ: "oneof", args: []arg{
					{name: "on", typ: "pure-token", token: "ON"},
					{name: "off", typ: "pure-token", token: "OFF"},
				}}},
				run: cmdClientNoEvict,
			},
			{
				name: "tracking", arity: -3, flags: flagsConn,
				summary: "Client-side caching, Redis's default mode in RESP3: the keys read are invalidated by a push when written (NOLOOP: not by one's own writes).",
				group:   groupConnection, complexity: "O(1)",
				args: []arg{
					{name: "status", typ: "oneof", args: []arg{
						{name: "on", typ: "pure-token", token: "ON"},
						{name: "off", typ: "pure-token", token: "OFF"},
					}},
					{name: "optin", typ: "pure-token", token: "OPTIN", optional: true},
					{name: "optout", typ: "pure-token", token: "OPTOUT", optional: true},
					{name: "noloop", typ: "pure-token", token: "NOLOOP", optional: true},
				},
				doc: "As Redis's default tracking mode: after a read of a key (EXISTS, TYPE, PTTL...) the " +
					"connection gets `invalidate [key]` as a RESP3 push when a command next writes that key, " +
					"and `invalidate null` on FLUSHALL. OPTIN tracks only the reads of the command (or " +
					"transaction) after `CLIENT CACHING yes`, OPTOUT all but those after `CLIENT CACHING no`. " +
					"REDIRECT, BCAST and PREFIX are refused. " +
					"A key that disappears by itself (its state fresh again) sends no invalidation.",
				detaches: true,
				run:      cmdClientTracking,
			},
			{
				name: "caching", arity: 3, flags: []string{"noscript", "loading", "stale"},
				summary: "Under CLIENT TRACKING OPTIN (yes) or OPTOUT (no): track, or not, the keys the next command or transaction reads.",
				group:   groupConnection, complexity: "O(1)",
				args: []arg{{name: "mode", typ: "oneof", args: []arg{
					{name: "yes", typ: "pure-token", token: "YES"},
					{name: "no", typ: "pure-token", token: "NO"},
				}}},
				run: cmdClientCaching,
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
				summary: "Close connections: by TYPE (normal, pubsub, replica, master), ID, ADDR, LADDR or USER, the caller's own unless SKIPME yes (after its reply); answer how many.",
				group:   groupConnection, complexity: "O(n) in the connections",
				args: []arg{
					clientTypeArg,
					{name: "client-id", typ: "integer", token: "ID", optional: true},
					{name: "ip:port", typ: "string", token: "ADDR", optional: true},
					{name: "ip:port", typ: "string", token: "LADDR", optional: true},
					{name: "username", typ: "string", token: "USER", optional: true},
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
}

// clientTypeArg is the TYPE filter CLIENT LIST and CLIENT KILL share.
var clientTypeArg = arg{name: "client-type", typ: "oneof", token: "TYPE", optional: true, args: []arg{
	{name: "normal", typ: "pure-token", token: "NORMAL"},
	{name: "master", typ: "pure-token", token: "MASTER"},
	{name: "replica", typ: "pure-token", token: "REPLICA"},
	{name: "pubsub", typ: "pure-token", token: "PUBSUB"},
}}
