package resp

// replicationCommands are the commands of replication: roles, the link, what Sentinel sends, in docs/commands.md's order.
var replicationCommands = []*command{
	{
		name: "wait", arity: 3, flags: []string{"noscript"},
		summary: "Wait until numreplicas replicas acknowledged every write made before, or timeout ms (0: no bound); answer how many did.",
		group:   groupServer, complexity: "O(1)",
		doc: "As Redis's: the count of replicas whose acknowledged offset reached the primary's " +
			"offset at the call. Replicas acknowledge every 100 ms, so a WAIT that is satisfied " +
			"takes up to that long. On a replica, an error.",
		args: []arg{{name: "numreplicas", typ: "integer"}, {name: "timeout", typ: "integer"}},
		run:  cmdWait,
	},
	{
		name: "waitaof", arity: 4, flags: []string{"noscript"},
		summary: "Wait until this server's log (numlocal 0 or 1) and numreplicas replicas' logs synced every write made before, or timeout ms (0: no bound); answer [local, replicas].",
		group:   groupServer, complexity: "O(1)",
		doc: "As Redis 7.2's. Local is 1 once the append-only log's sync covers every write " +
			"made before the call: at once under appendfsync always, within a second under " +
			"everysec, never under no (the call times out with 0). numlocal 1 without " +
			"appendonly is an error, as in Redis. Replicas counts the replicas whose own " +
			"append-only log synced every write made before the call: each reports the " +
			"offset its log synced with its acks (REPLCONF ACK offset FACK synced, Redis's), " +
			"every 100 ms when it moved; a replica without appendonly reports none and never " +
			"counts, as in Redis. On a replica, an error.",
		args: []arg{{name: "numlocal", typ: "integer"}, {name: "numreplicas", typ: "integer"}, {name: "timeout", typ: "integer"}},
		run:  cmdWaitAOF,
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
			"as a replica. In cluster mode (`-cluster-enabled`, not `-cluster-nodes`), host:port must be a " +
			"node of the cluster: the node becomes its replica as with `CLUSTER REPLICATE`, and `NO ONE` " +
			"takes its old master's slots with a new, highest config epoch.",
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
		noMulti:  true,
		detaches: true,
		run:      cmdRLSync,
	},
	{
		name: "psync", arity: -3, flags: []string{"admin", "noscript"},
		summary: "Refused: a Redis replica cannot follow rlserver, whose stream is its own (RLSYNC).",
		group:   groupServer, complexity: "O(1)",
		args:    []arg{{name: "replicationid", typ: "string"}, {name: "offset", typ: "integer"}},
		noMulti: true,
		run:     cmdPSync,
	},
	{
		name: "sync", arity: 1, flags: []string{"admin", "noscript"},
		summary: "Refused: a Redis replica cannot follow rlserver, whose stream is its own (RLSYNC).",
		group:   groupServer, complexity: "O(1)",
		noMulti: true,
		run:     cmdPSync,
	},
}
