package resp

// multiCommands are the commands of transactions, in docs/commands.md's order.
var multiCommands = []*command{
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
		doc: "A command refused when queued (unknown, wrong number of arguments, a key of another " +
			"cluster node: `MOVED`, keys in several slots: `CROSSSLOT`, a write on a replica: " +
			"`READONLY`) discards the whole transaction: EXEC answers `EXECABORT` and nothing is " +
			"applied. In cluster mode, as in Redis Cluster, EXEC also refuses (`CROSSSLOT`) a " +
			"transaction whose commands use keys of several slots. One that fails when run answers its error in its " +
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
