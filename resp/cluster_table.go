package resp

// flagsClusterAdmin are the flags of the CLUSTER subcommands that change the table.
var flagsClusterAdmin = []string{"admin", "stale"}

// clusterCommands are the commands of cluster mode: what Redis Cluster clients ask, in docs/commands.md's order.
var clusterCommands = []*command{
	{
		name: "cluster", arity: -2,
		summary: "A container for cluster commands: what Redis Cluster clients ask to find the node of a key.",
		group:   groupCluster,
		subs: []*command{
			{
				name: "addslots", arity: -3, flags: flagsClusterAdmin,
				summary: "Make the slots this node's (-cluster-enabled): none changes unless every one was unassigned.",
				group:   groupCluster, complexity: "O(n) in the slots",
				args: []arg{{name: "slot", typ: "integer", multiple: true}},
				run:  cmdClusterAddSlots(false),
			},
			{
				name: "addslotsrange", arity: -4, flags: flagsClusterAdmin,
				summary: "Make the slots of the ranges this node's (-cluster-enabled), as ADDSLOTS.",
				group:   groupCluster, complexity: "O(n) in the slots",
				args: []arg{{name: "range", typ: "block", multiple: true, args: []arg{
					{name: "start-slot", typ: "integer"}, {name: "end-slot", typ: "integer"}}}},
				run: cmdClusterAddSlotsRange(false),
			},
			{
				name: "bumpepoch", arity: 2, flags: flagsClusterAdmin,
				summary: "Give this node a new, highest config epoch unless it has it: BUMPED n or STILL n.",
				group:   groupCluster, complexity: "O(1)",
				run: cmdClusterBumpEpoch,
			},
			{
				name: "countkeysinslot", arity: 3, flags: []string{"stale"},
				summary: "Count this node's keys of the slot that hold a state.",
				group:   groupCluster, complexity: "O(n) in the slot's keys",
				args: []arg{{name: "slot", typ: "integer"}},
				run:  cmdClusterCountKeysInSlot,
			},
			{
				name: "delslots", arity: -3, flags: flagsClusterAdmin,
				summary: "Make the slots nobody's, in this node's table (-cluster-enabled).",
				group:   groupCluster, complexity: "O(n) in the slots",
				args: []arg{{name: "slot", typ: "integer", multiple: true}},
				run:  cmdClusterAddSlots(true),
			},
			{
				name: "delslotsrange", arity: -4, flags: flagsClusterAdmin,
				summary: "Make the slots of the ranges nobody's, as DELSLOTS.",
				group:   groupCluster, complexity: "O(n) in the slots",
				args: []arg{{name: "range", typ: "block", multiple: true, args: []arg{
					{name: "start-slot", typ: "integer"}, {name: "end-slot", typ: "integer"}}}},
				run: cmdClusterAddSlotsRange(true),
			},
			{
				name: "forget", arity: 3, flags: flagsClusterAdmin,
				summary: "Remove the node from this node's table; the others' tables do not bring it back for 60 s.",
				group:   groupCluster, complexity: "O(1)",
				args: []arg{{name: "node-id", typ: "string"}},
				run:  cmdClusterForget,
			},
			{
				name: "getkeysinslot", arity: 4, flags: []string{"stale"},
				summary: "List up to count of this node's keys of the slot, never one whose state is fresh.",
				group:   groupCluster, complexity: "O(n) in the keys listed",
				args: []arg{{name: "slot", typ: "integer"}, {name: "count", typ: "integer"}},
				run:  cmdClusterGetKeysInSlot,
			},
			{
				name: "info", arity: 2, flags: []string{"loading", "stale"},
				summary: "Describe the cluster in CLUSTER INFO's lines: state ok once every slot is assigned, the node count and epochs.",
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
				summary: "Answer this node's id: the SHA-1 of its host:port in -cluster-nodes, or its own random one (-cluster-enabled).",
				group:   groupCluster, complexity: "O(1)",
				run: cmdClusterMyID,
			},
			{
				name: "meet", arity: -4, flags: flagsClusterAdmin,
				summary: "Exchange tables with the node at ip:port (-cluster-enabled), which then joins every node's table.",
				group:   groupCluster, complexity: "O(1)",
				doc: "The nodes have no bus: the two exchange their tables over the client port at once " +
					"(CLUSTER RLTABLE), and each then sends its table to every node it knows whenever it " +
					"changes, and every second. A node that does not answer as an rlserver cluster node " +
					"is not added; the reply is OK all the same, as Redis's, whose handshake fails later. " +
					"The bus port is checked and unused.",
				args: []arg{{name: "ip", typ: "string"}, {name: "port", typ: "integer"},
					{name: "cluster-bus-port", typ: "integer", optional: true}},
				run: cmdClusterMeet,
			},
			{
				name: "nodes", arity: 2, flags: []string{"loading", "stale"},
				summary: "Describe every node in Redis's CLUSTER NODES lines: id, address, flags, epoch, slots.",
				group:   groupCluster, complexity: "O(n) in the nodes",
				run: cmdClusterNodes,
			},
			{
				name: "replicas", arity: 3, flags: []string{"admin", "stale"},
				summary: "List the replicas of the master node-id, each as its CLUSTER NODES line.",
				group:   groupCluster, complexity: "O(n) in the nodes",
				args: []arg{{name: "node-id", typ: "string"}},
				run:  cmdClusterReplicas,
			},
			{
				name: "replicate", arity: 3, flags: flagsClusterAdmin,
				summary: "Become a replica of the master node-id: own no slot, replicate it, answer MOVED to it.",
				group:   groupCluster, complexity: "O(1); the sync is O(n) in the keys, in the background",
				doc: "With Redis's preconditions and errors: a known node, not this one, a master; a master " +
					"becoming a replica must hold no key and no slot. The table exchange tells every node, " +
					"and `REPLICAOF NO ONE` (Sentinel's promotion) makes it the master of its old master's " +
					"slots with a new, highest config epoch.",
				args: []arg{{name: "node-id", typ: "string"}},
				run:  cmdClusterReplicate,
			},
			{
				name: "reset", arity: -2, flags: []string{"admin", "noscript", "stale"},
				summary: "Forget every other node, unassign every slot, a replica becomes an empty master (HARD: epochs 0, a new id); refused on a master with keys.",
				group:   groupCluster, complexity: "O(n) in the nodes",
				args: []arg{{name: "mode", typ: "oneof", optional: true, args: []arg{
					{name: "hard", typ: "pure-token", token: "HARD"}, {name: "soft", typ: "pure-token", token: "SOFT"}}}},
				run: cmdClusterReset,
			},
			{
				name: "rltable", arity: 3, flags: flagsClusterAdmin,
				summary: "rlserver's own: merge a peer's table (CLUSTER NODES lines) and answer this node's.",
				group:   groupCluster, complexity: "O(n) in the slots",
				args: []arg{{name: "table", typ: "string"}},
				run:  cmdClusterTable,
			},
			{
				name: "set-config-epoch", arity: 3, flags: flagsClusterAdmin,
				summary: "Set this node's config epoch, only while it knows no other node and its epoch is 0.",
				group:   groupCluster, complexity: "O(1)",
				args: []arg{{name: "config-epoch", typ: "integer"}},
				run:  cmdClusterSetConfigEpoch,
			},
			{
				name: "setslot", arity: -4, flags: flagsClusterAdmin,
				summary: "Move a slot: IMPORTING from or MIGRATING to a node, STABLE, or NODE: give it to a node.",
				group:   groupCluster, complexity: "O(1), NODE O(n) in the slot's keys",
				doc: "With Redis's preconditions and errors: MIGRATING only of a slot of this node's, " +
					"IMPORTING only of another's, NODE to another node only once this node holds no key " +
					"of the slot. NODE of a slot this node was importing gives it a new, highest config " +
					"epoch, so that its claim wins in every table.",
				args: []arg{{name: "slot", typ: "integer"}, {name: "subcommand", typ: "oneof", args: []arg{
					{name: "importing", typ: "string", token: "IMPORTING"},
					{name: "migrating", typ: "string", token: "MIGRATING"},
					{name: "node", typ: "string", token: "NODE"},
					{name: "stable", typ: "pure-token", token: "STABLE"}}}},
				run: cmdClusterSetSlot,
			},
			{
				name: "shards", arity: 2, flags: []string{"loading", "stale"},
				summary: "Describe every shard, one node each: its slots and the node's id, address, role and health.",
				group:   groupCluster, complexity: "O(n) in the nodes",
				run: cmdClusterShards,
			},
			{
				name: "slaves", arity: 3, flags: []string{"admin", "stale"},
				summary: "The old name of CLUSTER REPLICAS.",
				group:   groupCluster, complexity: "O(n) in the nodes",
				args: []arg{{name: "node-id", typ: "string"}},
				run:  cmdClusterReplicas,
			},
			{
				name: "slots", arity: 2, flags: []string{"loading", "stale"},
				summary: "Map slot ranges to nodes: first slot, last slot, [host, port, id]; cluster clients route by it.",
				group:   groupCluster, complexity: "O(n) in the nodes",
				doc: "Cluster mode: start every node with `-cluster-enabled` and build the cluster with " +
					"`redis-cli --cluster create`, `add-node`, `reshard` and `rebalance`, as a Redis Cluster " +
					"(docs/scaling.md); or start every node with the same `-cluster-nodes host:port,...` and its " +
					"own index in that list as `-cluster-self`, a fixed topology: the 16384 slots split evenly " +
					"in the order given, or as given (`host:port@first-last` for every node). A node runs a " +
					"command only when its keys hash to one of its own slots; it answers " +
					"`MOVED <slot> <host>:<port>` for another node's key and `CROSSSLOT Keys in request " +
					"don't hash to the same slot` for keys of several slots (DEL, EXISTS, RL.ALL: give related " +
					"keys one `{hash tag}`). Commands without keys (SCAN, DBSIZE, FLUSHALL, ...) work on the " +
					"node's own keys. A slot being moved answers `ASK <slot> <host>:<port>` for the keys " +
					"already gone, and `TRYAGAIN` for a multi-key call with some keys gone. A -cluster-nodes " +
					"topology never changes: resharding it is a restart with a new one. Without cluster mode, " +
					"every CLUSTER subcommand, READONLY and " +
					"READWRITE answer `ERR This instance has cluster support disabled`.",
				run: cmdClusterSlots,
			},
		},
	},
	{
		name: "asking", arity: 1, flags: []string{"fast"},
		summary: "Let the next command use a slot being moved to this node, as a client told ASK does.",
		group:   groupCluster, complexity: "O(1)",
		run: cmdAsking,
	},
	{
		name: "migrate", arity: -6, flags: []string{"write"},
		summary: "Move keys to another rlserver node: each whole, its state and deadline unchanged, locked meanwhile.",
		group:   groupGeneric, complexity: "O(n) in the keys",
		doc: "`MIGRATE host port key|\"\" db timeout [COPY] [REPLACE] [AUTH password | AUTH2 user password] " +
			"[KEYS key ...]`, as redis-cli --cluster reshard sends it. Each key's DUMP payload goes to the " +
			"target by RESTORE-ASKING and the key leaves this node once the target answered OK; the keys' " +
			"slots are locked meanwhile, so that no call decides on a key half moved. The payload is " +
			"rlserver's own: a real Redis refuses it (`ERR Target instance replied with error: DUMP " +
			"payload version or checksum are wrong`) and nothing moves. Unreachable target: `IOERR error or " +
			"timeout connecting to the client`; no key here: `NOKEY`.",
		args: []arg{{name: "host", typ: "string"}, {name: "port", typ: "integer"},
			{name: "key", typ: "string"}, {name: "destination-db", typ: "integer"}, {name: "timeout", typ: "integer"},
			{name: "copy", typ: "pure-token", token: "COPY", optional: true},
			{name: "replace", typ: "pure-token", token: "REPLACE", optional: true},
			{name: "keys", typ: "key", token: "KEYS", optional: true, multiple: true}},
		keys:       migrateKeys,
		locksSlots: true,
		run:        cmdMigrate,
	},
	{
		name: "restore-asking", arity: -4, flags: []string{"write", "denyoom"}, firstKey: 1, lastKey: 1, keyStep: 1,
		summary: "RESTORE as MIGRATE sends it: it runs in a slot being moved to this node without ASKING.",
		group:   groupGeneric, complexity: "O(1), O(n) in an RL.LOG log or a lease set",
		args: []arg{{name: "key", typ: "key"}, {name: "ttl", typ: "integer"}, {name: "serialized-value", typ: "string"},
			{name: "replace", typ: "pure-token", token: "REPLACE", optional: true},
			{name: "absttl", typ: "pure-token", token: "ABSTTL", optional: true}},
		asking: true,
		run:    cmdRestore,
	},
	{
		name: "readonly", arity: 1, flags: []string{"fast", "loading", "stale"},
		summary: "Allow reads from replicas, as cluster clients ask: only OK, every RL.* call writes, so a replica answers MOVED (cluster mode).",
		group:   groupCluster, complexity: "O(1)",
		run: cmdReadWrite,
	},
	{
		name: "readwrite", arity: 1, flags: []string{"fast", "loading", "stale"},
		summary: "Stop reading from replicas, as cluster clients ask: only OK, a replica answers MOVED anyway (cluster mode).",
		group:   groupCluster, complexity: "O(1)",
		run: cmdReadWrite,
	},
}
