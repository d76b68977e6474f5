package resp

import (
	"slices"
	"strings"

	"github.com/rlserver/rlserver/acl"
)

// command is one entry of the command table. The table is the one description of
// every command: dispatch and arity checks, COMMAND / COMMAND INFO / COMMAND DOCS
// (redis-cli's argument hints come from there) and docs/commands.md are all read
// from it, so they cannot disagree.
type command struct {
	name  string // lower case, as Redis spells it in errors; a subcommand's own word ("setname")
	arity int    // Redis's convention: n means exactly n words, -n at least n; the name counts
	flags []string
	// Key positions as COMMAND INFO reports them: first and last key index (last -1:
	// up to the end) and the step between keys; 0, 0, 0 for commands without keys.
	firstKey, lastKey, keyStep int
	summary                    string
	group                      string
	complexity                 string
	args                       []arg
	subs                       []*command // subcommands of a container (CLIENT, COMMAND, ...)
	doc                        string     // longer text for docs/commands.md (markdown)
	examples                   []example  // for docs/commands.md; a test replays them
	run                        func(s *Server, c *client, args [][]byte, now int64)
	// keys finds the keys of a command whose keys move ("movablekeys": RL.ALL), for
	// cluster mode's slot check; nil: firstKey, lastKey and keyStep say where they are.
	keys func(args [][]byte) [][]byte
	// keyFlags are its keys' flags in its key spec and COMMAND GETKEYSANDFLAGS, as
	// Redis's for its own commands; nil: RW update for a write, else RO access.
	keyFlags []string

	stats cmdStats // INFO commandstats (server_info_stats.go)

	// Filled in by init.
	full      string              // the name in errors and COMMAND INFO: "client|setname" for a subcommand
	id        int                 // the command's index in allCommands, for per-command metrics
	noAuth    bool                // "no-auth" in flags: served before the connection authenticates
	parent    *command            // the container of a subcommand
	subIndex  map[string]*command // subs by name
	write     bool                // "write" in flags: refused on a replica (READONLY)
	peekable  bool                // takes PEEK: its run refuses a write on a replica itself
	loadingOK bool                // "loading" in flags: runs while a replica loads a full sync
	cats      []string            // ACL categories, without '@' (aclCategories)
	aclID     int                 // the command's number in aclTable
	// keyRead and keyWrite are the access its keys need in ACL key patterns
	// (%R~, %W~), from its key flags as Redis's.
	keyRead, keyWrite bool

	// Set in the table.
	tx bool // MULTI, EXEC, DISCARD, QUIT, RESET: run at once inside MULTI, never queued
	// noMulti: refused inside MULTI, flagging the transaction, as Redis's no-multi
	// commands (SAVE, SHUTDOWN, SYNC, PSYNC) and RLSYNC, which takes the connection over.
	noMulti bool
	// locksSlots takes its keys' slot locks itself, and runs in a slot being moved
	// from or to this node whatever its keys (MIGRATE, as Redis's getNodeByQuery).
	locksSlots bool
	// asking runs in a slot being moved here without ASKING before it, as Redis's
	// CMD_ASKING (RESTORE-ASKING).
	asking bool
	// detaches may hand the connection to a goroutine of its own (SUBSCRIBE, MONITOR)
	// or to replication (RLSYNC): outside EXEC, c is no longer this goroutine's once
	// it ran; inside, once EXEC ends.
	detaches bool
}

// arg describes one argument for COMMAND DOCS and the syntax line, in Redis's terms.
type arg struct {
	name     string
	typ      string // key, string, integer, pattern, pure-token, oneof, block
	token    string // the keyword before the value, such as COST
	optional bool
	multiple bool
	args     []arg // the alternatives of a oneof, the parts of a block
}

// example is one call shown in docs/commands.md with its reply on a fresh server
// whose clock stands at the start of a day (so windows start now).
type example struct {
	command string // as typed in redis-cli
	reply   string // the reply: an array's elements space-separated (a nested array in brackets), or one integer
}

// Command groups, as COMMAND DOCS reports them.
const (
	groupRateLimit    = "ratelimit"
	groupGeneric      = "generic"
	groupConnection   = "connection"
	groupServer       = "server"
	groupCluster      = "cluster"
	groupPubSub       = "pubsub"
	groupTransactions = "transactions"
)

// since is the version every command first appeared in: rlserver's first.
const since = "1.0.0"

var (
	commands     []*command          // top-level commands, in the order of docs/commands.md
	commandIndex map[string]*command // top-level commands by lower-case name
	allCommands  []*command          // commands and subcommands, each once
	aclTable     *acl.Table          // allCommands as ACL rules name them
)

// init indexes the table: the groups' declarations (table_*.go) in order, each
// command's derived fields, and a HELP subcommand for every container.
func init() {
	commands = slices.Concat(limitCommands, policyCommands, keyCommands, connCommands, serverCommands, aclCommands,
		clusterCommands, replicationCommands, pubsubCommands, multiCommands)
	commandIndex = make(map[string]*command, len(commands))
	for _, c := range commands {
		c.full = c.name
		c.noAuth = slices.Contains(c.flags, "no-auth")
		c.write = slices.Contains(c.flags, "write")
		c.peekable = takesPeek(c.args)
		c.loadingOK = slices.Contains(c.flags, "loading")
		c.id, allCommands = len(allCommands), append(allCommands, c)
		commandIndex[c.name] = c
		if c.subs == nil {
			continue
		}
		// Every container answers HELP, which Redis's unknown-subcommand error points to.
		c.subs = append(c.subs, &command{
			name: "help", arity: 2, flags: []string{"loading", "stale"},
			summary: "Show helpful text about the different subcommands.",
			group:   c.group, complexity: "O(1)",
			run: cmdHelp,
		})
		c.subIndex = make(map[string]*command, len(c.subs))
		for _, sub := range c.subs {
			sub.parent = c
			sub.full = c.name + "|" + sub.name
			sub.write = slices.Contains(sub.flags, "write")
			sub.loadingOK = slices.Contains(sub.flags, "loading")
			sub.id, allCommands = len(allCommands), append(allCommands, sub)
			c.subIndex[sub.name] = sub
		}
	}
	described := make([]acl.Command, len(allCommands))
	for i, c := range allCommands {
		c.cats = aclCategories(c)
		for _, f := range keySpecFlags(c) {
			switch strings.ToLower(f) {
			case "access":
				c.keyRead = true
			case "insert", "delete", "update":
				c.keyWrite = true
			}
		}
		described[i] = acl.Command{Name: c.full, Categories: c.cats, NoAuth: slices.Contains(c.flags, "no-auth")}
	}
	aclTable = acl.NewTable(described)
	for _, c := range allCommands {
		c.aclID = aclTable.ID(c.full)
	}
}

// takesPeek reports whether one of args, or of their parts, is the PEEK token.
func takesPeek(args []arg) bool {
	return slices.ContainsFunc(args, func(a arg) bool { return a.token == "PEEK" || takesPeek(a.args) })
}

// lookup finds a command by name, case-insensitively, without allocating: names
// are lowered into a stack buffer, and Go does not copy for map lookups by string(b).
func lookup(index map[string]*command, name []byte) *command {
	var buf [16]byte
	if len(name) > len(buf) {
		return nil
	}
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return index[string(buf[:len(name)])]
}

// lookupFull finds a command or subcommand by its full name ("client|setname"), as
// COMMAND INFO and COMMAND DOCS take them.
func lookupFull(name string) *command {
	name = strings.ToLower(name)
	top, sub, isSub := strings.Cut(name, "|")
	c := commandIndex[top]
	if c == nil || !isSub {
		return c
	}
	return c.subIndex[sub]
}

// arityOK reports whether n words (the name counted) are as many as c takes.
func (c *command) arityOK(n int) bool {
	return !(c.arity > 0 && n != c.arity || c.arity < 0 && n < -c.arity)
}

// upper is Redis's spelling of a command in help texts: upper case, "|" as a space.
func upper(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "|", " "))
}

// syntax is the command's usage line, built from its arguments as redis-cli builds
// its hints: "RL.TOKEN key capacity window_ms [RATE rate] [COST cost] [PEEK]".
func (c *command) syntax() string {
	var b strings.Builder
	b.WriteString(upper(c.full))
	for _, a := range c.args {
		b.WriteByte(' ')
		a.appendSyntax(&b)
	}
	return b.String()
}

func (a arg) appendSyntax(b *strings.Builder) {
	if a.optional {
		b.WriteByte('[')
	}
	if a.token != "" {
		b.WriteString(a.token)
		if a.typ != "pure-token" {
			b.WriteByte(' ')
		}
	}
	a.appendValue(b)
	if a.multiple {
		b.WriteString(" [")
		a.appendValue(b)
		b.WriteString(" ...]")
	}
	if a.optional {
		b.WriteByte(']')
	}
}

// appendValue writes what follows the token: the name, or the alternatives of a
// oneof ("ASYNC|SYNC"), or the parts of a block.
func (a arg) appendValue(b *strings.Builder) {
	switch a.typ {
	case "pure-token":
	case "oneof", "block":
		sep := " "
		if a.typ == "oneof" {
			sep = "|"
		}
		for i, sub := range a.args {
			if i > 0 {
				b.WriteString(sep)
			}
			sub.appendSyntax(b)
		}
	default:
		b.WriteString(a.name)
	}
}
