package resp

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/commands.md from the command table")

const docsPath = "../docs/commands.md"

// TestCommandsDoc fails when docs/commands.md is not what the command table
// generates; `go test ./resp -run TestCommandsDoc -update` rewrites it.
func TestCommandsDoc(t *testing.T) {
	got := commandsMarkdown()
	if *update {
		if err := os.WriteFile(docsPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatalf("%v (run: go test ./resp -run TestCommandsDoc -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s is stale: run go test ./resp -run TestCommandsDoc -update", docsPath)
	}
}

// TestSyntax checks the usage lines built from the argument descriptions, which
// are what redis-cli shows as hints.
func TestSyntax(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"rl.token", "RL.TOKEN key capacity window_ms [RATE rate] [COST cost] [PEEK] [REFUND refund] [RESERVE reserve]"},
		{"rl.leaky", "RL.LEAKY key limit window_ms [QUEUE queue] [COST cost] [PEEK] [REFUND refund] [RESERVE reserve]"},
		{"cl.throttle", "CL.THROTTLE key max_burst count_per_period period_s [quantity|REFUND refund]"},
		{"del", "DEL key [key ...]"},
		{"scan", "SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]"},
		{"flushall", "FLUSHALL [ASYNC|SYNC]"},
		{"hello", "HELLO [protover [AUTH username password] [SETNAME clientname]]"},
		{"memory|usage", "MEMORY USAGE key [SAMPLES count]"},
		{"debug", "DEBUG CLOCK SET unix_us|ADVANCE us|REAL|DIGEST|DIGEST-VALUE key [key ...]|SLEEP seconds"},
		{"time", "TIME"},
	} {
		if got := lookupFull(tc.name).syntax(); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// groupTitles orders and names the sections of docs/commands.md.
var groupTitles = []struct{ group, title, intro string }{
	{groupRateLimit, "Rate limiting", rateLimitIntro},
	{groupGeneric, "Keys", "A key holds the state of one algorithm. It disappears by itself at the moment " +
		"its state is fresh again (full remaining): no request needs to touch it, and memory returns.\n"},
	{groupConnection, "Connection", "Enough of Redis's connection commands that clients work unchanged: " +
		"go-redis v9 connects with `HELLO 3` and sends `CLIENT SETINFO`; RESP2 clients are served too. " +
		"With `-requirepass`, a connection authenticates with `AUTH` or `HELLO ... AUTH` before anything else, as in Redis.\n"},
	{groupServer, "Server", "What redis-cli, redis-benchmark and client libraries ask of a server. " +
		"There is one database (0); `-snapshot` keeps the state across restarts.\n"},
	{groupCluster, "Cluster", "Started with `-cluster-nodes` and `-cluster-self`, nodes share the 16384 hash slots " +
		"and answer as Redis Cluster nodes do, so cluster clients and `redis-cli -c` work unchanged. " +
		"Standalone, these answer Redis's \"cluster support disabled\" errors.\n"},
	{groupPubSub, "Pub/Sub", "Redis's Pub/Sub on one server, what Sentinels use to find each other " +
		"(`__sentinel__:hello`); see [ha.md](ha.md).\n"},
	{groupTransactions, "Transactions", "MULTI/EXEC as Redis runs them, for Sentinel's reconfiguration of a " +
		"server in one transaction; see [ha.md](ha.md).\n"},
}

const rateLimitIntro = "Every `RL.*` limiter (RL.FIXED to RL.LEAKY) answers an array of five integers, in RESP2 " +
	"and RESP3 alike (RL.ALL, RL.SLICE and the leases answer their own shapes, built on it):\n\n" +
	"| # | field | meaning |\n" +
	"|---|-------|---------|\n" +
	"| 1 | allowed | 1 if the request is allowed (and consumed), 0 if it is limited |\n" +
	"| 2 | limit | the configured limit: requests per window, or the bucket's capacity |\n" +
	"| 3 | remaining | how many more cost-1 requests would be allowed right now (never negative) |\n" +
	"| 4 | retry_after_ms | 0 when allowed; when limited, ms until the same request would be allowed; -1 if it never can (cost > limit) |\n" +
	"| 5 | reset_after_ms | ms until the key is back to its fresh state; 0 if it already is |\n\n" +
	"Rules shared by all of them:\n\n" +
	"- A key is **fresh** when its state is back at its initial state, as if it had never been called " +
	"(remaining full, nothing to wait for): it then answers as an absent key does, and it goes by itself " +
	"at that moment. `reset_after_ms`, `PTTL` and `TTL` are the time until then.\n" +
	"- The server's clock decides; a client never sends the time. Arguments and replies are in " +
	"milliseconds; state keeps microseconds, so rates above 1000/s work.\n" +
	"- Durations in replies are rounded **up**: a client that waits the time it was told and retries " +
	"is never too early.\n" +
	"- `limit` is 1 to 1000000000 (RL.LOG: up to the server's `-max-log-limit`, default 100000); " +
	"`window_ms` is 1 to 31536000000 (a year).\n" +
	"- `COST n` (0 to limit·1000, default 1) weighs a request; COST 0 is always allowed and changes nothing.\n" +
	"- `PEEK` decides and answers as usual but writes nothing: no state is created, changed or extended.\n" +
	"- `REFUND n` (1 to limit·1000) gives back n of what earlier calls on the key spent, instead of " +
	"spending: the way an LLM gateway reserves `max_tokens` with COST and returns what the answer did " +
	"not use. It never leaves more room than a fresh key has, and gives back only what still counts: " +
	"RL.FIXED this window's count; RL.SLIDE this window's, then the previous one's; RL.LOG the newest " +
	"entries in the window; RL.TOKEN tokens, up to the capacity; RL.GCRA, RL.LEAKY and CL.THROTTLE the " +
	"schedule, n emission intervals back, never before now. The reply is what `PEEK` with `COST 0` " +
	"answers right after it. On an absent key there is nothing to give back: nothing is created, and " +
	"the reply is a fresh key's. REFUND takes neither COST nor PEEK (`ERR REFUND takes neither COST nor PEEK`); " +
	"it is a write (refused on a replica, replicated from a primary). Leases end with RL.RELEASE; Redis's " +
	"`GCRA` keeps Redis's grammar (refund its key with RL.GCRA). What a client did not use of a slice " +
	"(RL.SLICE) goes back the same way.\n" +
	"- `RESERVE n` (0 to limit; on RL.ACQUIRE and on each RL.ALL rule too) keeps the last n units of the " +
	"key for calls without it: the call is admitted only if at least n units would remain after it (a " +
	"call of cost n would still pass right after it; RL.LEAKY: n places left in the queue; RL.ACQUIRE: " +
	"n places left among the leases). Otherwise it is refused, spends nothing, and `retry_after_ms` is " +
	"the time until it would fit with its reserve, never early, or -1 when cost + n can never fit. A " +
	"call without RESERVE may use everything. So \"20% of the fleet is kept for critical traffic\" is " +
	"critical calls without RESERVE and the others with `RESERVE 20` on a limit of 100. `remaining` is " +
	"then what the caller may still take: the key's remaining less n, at least 0. RESERVE decides who is " +
	"admitted, never what an admitted call writes, so replicas and snapshots carry its calls as any " +
	"other. `ERR reserve must be an integer between 0 and <limit>`; a refund takes none " +
	"(`ERR REFUND takes no RESERVE`); CL.THROTTLE and Redis's `GCRA` keep their own grammar.\n" +
	"- Options come in any order after the positional arguments, in any case.\n" +
	"- A limited request consumes nothing, in every algorithm.\n" +
	"- Bad input gets an error that names the argument and its range, and changes nothing: " +
	"`ERR limit must be an integer between 1 and 1000000000`, `ERR syntax error` for an unknown option.\n" +
	"- A key holding another algorithm's state answers " +
	"`WRONGTYPE Operation against a key holding the wrong kind of value`.\n" +
	"- Calling a key with other parameters (limit, window) is not an error: the stored state is read " +
	"under the new ones.\n\n" +
	"The examples below run on fresh keys at the start of a window (a server clock at midnight UTC); a test " +
	"replays them.\n"

// commandsMarkdown generates docs/commands.md from the command table.
func commandsMarkdown() string {
	var b strings.Builder
	b.WriteString("# rlserver commands\n\n" +
		"<!-- Generated from the command table (resp/command_table.go) by " +
		"`go test ./resp -run TestCommandsDoc -update`. Do not edit by hand. -->\n\n" +
		"rlserver speaks the Redis protocol (RESP2 and RESP3): redis-cli, redis-benchmark and Redis " +
		"clients work unchanged. `COMMAND DOCS` serves this same table, so redis-cli shows these " +
		"arguments as hints and `HELP <command>` prints them.\n\n")
	for _, g := range groupTitles {
		b.WriteString("| " + g.title + " | |\n|---|---|\n")
		for _, cm := range documented(g.group) {
			b.WriteString("| [`" + strings.ReplaceAll(cm.syntax(), "|", `\|`) + "`](#" + anchor(cm) + ") | " +
				strings.ReplaceAll(cm.summary, "|", `\|`) + " |\n")
		}
		b.WriteString("\n")
	}
	for _, g := range groupTitles {
		b.WriteString("## " + g.title + "\n\n" + g.intro + "\n")
		for _, cm := range documented(g.group) {
			b.WriteString("### " + upper(cm.full) + "\n\n")
			b.WriteString("```\n" + cm.syntax() + "\n```\n\n")
			b.WriteString(cm.summary + "\n\n")
			if cm.doc != "" {
				b.WriteString(cm.doc + "\n\n")
			}
			if cm.complexity != "" {
				b.WriteString("Time complexity: " + cm.complexity + ".\n\n")
			}
			if cm.examples != nil {
				b.WriteString("Example:\n\n```\n")
				for _, ex := range cm.examples {
					b.WriteString("> " + ex.command + "\n" + ex.reply + "\n")
				}
				b.WriteString("```\n\n")
			}
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// documented lists a group's commands as the docs show them: subcommands in place
// of their container.
func documented(group string) []*command {
	var list []*command
	for _, cm := range commands {
		if cm.group != group {
			continue
		}
		if cm.run != nil {
			list = append(list, cm)
		}
		list = append(list, cm.subs...)
	}
	return list
}

// anchor is the id GitHub gives a "### NAME" heading.
func anchor(cm *command) string {
	var b strings.Builder
	for _, r := range strings.ToLower(upper(cm.full)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}
