package resp

// clusterCommands are the commands of cluster mode: what Redis Cluster clients ask, in docs/commands.md's order.
var clusterCommands = []*command{
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
}
