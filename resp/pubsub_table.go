package resp

// pubsubCommands are the commands of Pub/Sub, on this server only, in docs/commands.md's order.
var pubsubCommands = []*command{
	{
		name: "subscribe", arity: -2, flags: []string{"pubsub", "noscript", "loading", "stale"},
		summary: "Receive the messages published on the channels; Sentinels meet on __sentinel__:hello.",
		group:   groupPubSub, complexity: "O(n) in the channels",
		args:     []arg{{name: "channel", typ: "string", multiple: true}},
		detaches: true,
		run:      subscribeCmd(false),
	},
	{
		name: "psubscribe", arity: -2, flags: []string{"pubsub", "noscript", "loading", "stale"},
		summary: "Receive the messages published on the channels matching the glob patterns.",
		group:   groupPubSub, complexity: "O(n) in the patterns",
		args:     []arg{{name: "pattern", typ: "pattern", multiple: true}},
		detaches: true,
		run:      subscribeCmd(true),
	},
	{
		name: "unsubscribe", arity: -1, flags: []string{"pubsub", "noscript", "loading", "stale"},
		summary: "Stop receiving the channels' messages; all channels when none is named.",
		group:   groupPubSub, complexity: "O(n) in the channels",
		args: []arg{{name: "channel", typ: "string", optional: true, multiple: true}},
		run:  unsubscribeCmd(false),
	},
	{
		name: "punsubscribe", arity: -1, flags: []string{"pubsub", "noscript", "loading", "stale"},
		summary: "Stop receiving the patterns' messages; all patterns when none is named.",
		group:   groupPubSub, complexity: "O(n) in the patterns",
		args: []arg{{name: "pattern", typ: "pattern", optional: true, multiple: true}},
		run:  unsubscribeCmd(true),
	},
	{
		name: "publish", arity: 3, flags: []string{"pubsub", "loading", "stale", "fast"},
		summary: "Send a message to the channel's subscribers on this server; answer how many received it.",
		group:   groupPubSub, complexity: "O(n+m) in the subscribers and the patterns",
		args: []arg{{name: "channel", typ: "string"}, {name: "message", typ: "string"}},
		doc: "Messages stay on the server they are published on (replicas do not pass them on): " +
			"Sentinel publishes on every server it watches. In RESP3 messages and (un)subscribe " +
			"confirmations are push replies and a subscribed connection may send any command; in " +
			"RESP2 it may only (un)subscribe, PING, QUIT and RESET, as in Redis.",
		run: cmdPublish,
	},
	{
		name: "pubsub", arity: -2,
		summary: "A container for Pub/Sub introspection, of this server's subscriptions.",
		group:   groupPubSub,
		subs: []*command{
			{
				name: "channels", arity: -2, flags: []string{"pubsub", "loading", "stale"},
				summary: "The channels with subscribers, those matching the glob pattern if one is given.",
				group:   groupPubSub, complexity: "O(n) in the channels",
				args: []arg{{name: "pattern", typ: "pattern", optional: true}},
				run:  cmdPubsubChannels(false),
			},
			{
				name: "numsub", arity: -2, flags: []string{"pubsub", "loading", "stale"},
				summary: "Each channel named and its number of subscribers (patterns not counted).",
				group:   groupPubSub, complexity: "O(n) in the channels named",
				args: []arg{{name: "channel", typ: "string", optional: true, multiple: true}},
				run:  cmdPubsubNumsub(false),
			},
			{
				name: "numpat", arity: 2, flags: []string{"pubsub", "loading", "stale"},
				summary: "The number of patterns subscribed to.",
				group:   groupPubSub, complexity: "O(1)",
				run: cmdPubsubNumpat,
			},
			{
				name: "shardchannels", arity: -2, flags: []string{"pubsub", "loading", "stale"},
				summary: "The shard channels with subscribers: none, rlserver has no sharded Pub/Sub.",
				group:   groupPubSub, complexity: "O(1)",
				args: []arg{{name: "pattern", typ: "pattern", optional: true}},
				run:  cmdPubsubChannels(true),
			},
			{
				name: "shardnumsub", arity: -2, flags: []string{"pubsub", "loading", "stale"},
				summary: "Each shard channel named and its number of subscribers: 0.",
				group:   groupPubSub, complexity: "O(n) in the channels named",
				args: []arg{{name: "shardchannel", typ: "string", optional: true, multiple: true}},
				run:  cmdPubsubNumsub(true),
			},
		},
	},
}
