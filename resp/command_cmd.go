package resp

import (
	"bytes"
	"slices"
	"strings"

	"github.com/rlserver/rlserver/acl"
	"github.com/rlserver/rlserver/store"
)

// cmdHelp serves HELP of every container command, listed from the table.
func cmdHelp(_ *Server, c *client, args [][]byte, _ int64) {
	cm := lookup(commandIndex, args[0])
	c.w.WriteArray(1 + 2*len(cm.subs))
	c.w.WriteString(upper(cm.name) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, sub := range cm.subs {
		c.w.WriteString(strings.TrimPrefix(sub.syntax(), upper(cm.name)+" "))
		c.w.WriteString("    " + sub.summary)
	}
}

// cmdCommand serves COMMAND: every command's info.
func cmdCommand(_ *Server, c *client, _ [][]byte, _ int64) {
	c.w.WriteArray(len(commands))
	for _, cm := range commands {
		writeCommandInfo(c, cm)
	}
}

func cmdCommandCount(_ *Server, c *client, _ [][]byte, _ int64) {
	c.w.WriteInt64(int64(len(commands)))
}

// cmdCommandInfo serves COMMAND INFO [name ...]: null for unknown names.
func cmdCommandInfo(_ *Server, c *client, args [][]byte, _ int64) {
	if len(args) == 2 {
		cmdCommand(nil, c, nil, 0)
		return
	}
	c.w.WriteArray(len(args) - 2)
	for _, name := range args[2:] {
		if cm := lookupFull(string(name)); cm != nil {
			writeCommandInfo(c, cm)
		} else {
			c.writeNull()
		}
	}
}

// cmdCommandDocs serves COMMAND DOCS [name ...]: a map from name to docs, unknown
// names left out. redis-cli reads it at start for its help and argument hints.
func cmdCommandDocs(_ *Server, c *client, args [][]byte, _ int64) {
	list := commands
	if len(args) > 2 {
		list = nil
		for _, name := range args[2:] {
			if cm := lookupFull(string(name)); cm != nil {
				list = append(list, cm)
			}
		}
	}
	c.writeMap(len(list))
	for _, cm := range list {
		c.w.WriteBulkString(cm.full)
		writeCommandDocs(c, cm)
	}
}

// cmdCommandList serves COMMAND LIST [FILTERBY MODULE name|ACLCAT category|PATTERN
// pattern]: command and subcommand names.
func cmdCommandList(_ *Server, c *client, args [][]byte, _ int64) {
	keep := func(*command) bool { return true }
	switch {
	case len(args) == 2:
	case len(args) == 5 && bytes.EqualFold(args[2], []byte("filterby")):
		val := string(args[4])
		switch strings.ToLower(string(args[3])) {
		case "module":
			keep = func(*command) bool { return false } // no modules
		case "aclcat":
			keep = func(cm *command) bool { return slices.Contains(cm.cats, strings.ToLower(val)) }
		case "pattern":
			keep = func(cm *command) bool { return store.Match([]byte(val), []byte(cm.full), true) }
		default:
			c.writeError(errSyntax)
			return
		}
	default:
		c.writeError(errSyntax)
		return
	}
	var names []string
	for _, cm := range commands {
		if keep(cm) {
			names = append(names, cm.full)
		}
		for _, sub := range cm.subs {
			if keep(sub) {
				names = append(names, sub.full)
			}
		}
	}
	c.w.WriteArray(len(names))
	for _, n := range names {
		c.w.WriteBulkString(n)
	}
}

// wireFlags are cm's flags as COMMAND INFO spells them, as Redis 7: no_auth, and
// no_multi for a command refused inside MULTI.
func wireFlags(cm *command) []string {
	if !cm.noAuth && !cm.noMulti {
		return cm.flags
	}
	flags := make([]string, 0, len(cm.flags)+1)
	for _, f := range cm.flags {
		if f == "no-auth" {
			f = "no_auth"
		}
		flags = append(flags, f)
	}
	if cm.noMulti {
		flags = append(flags, "no_multi")
	}
	return flags
}

// writeCommandInfo writes the 10-element reply of COMMAND INFO for one command, as
// Redis 7 does: name, arity, flags, first key, last key, step, ACL categories,
// tips, key specs, subcommands.
func writeCommandInfo(c *client, cm *command) {
	c.w.WriteArray(10)
	c.w.WriteBulkString(cm.full)
	c.w.WriteInt64(int64(cm.arity))
	c.writeStatuses(wireFlags(cm))
	c.w.WriteInt64(int64(cm.firstKey))
	c.w.WriteInt64(int64(cm.lastKey))
	c.w.WriteInt64(int64(cm.keyStep))
	c.writeStatuses(acl.CategoriesOf(cm.cats))
	c.writeSet(0) // tips
	switch {
	case cm.firstKey == 0:
		c.w.WriteArray(0)
	case cm.keys != nil:
		// movablekeys (RL.ALL): the first key's place is known, the others' are not,
		// which Redis says with a spec of unknown search (COMMAND GETKEYS finds them).
		c.w.WriteArray(2)
		writeKeySpec(c, cm)
		writeUnknownKeySpec(c, cm)
	default:
		c.w.WriteArray(1)
		writeKeySpec(c, cm)
	}
	c.w.WriteArray(len(cm.subs))
	for _, sub := range cm.subs {
		writeCommandInfo(c, sub)
	}
}

// writeKeySpec writes the one key spec of a command from its key positions.
func writeKeySpec(c *client, cm *command) {
	flags := keySpecFlags(cm)
	lastKey := cm.lastKey // relative to the first key, or -1 for "to the end"
	if lastKey > 0 {
		lastKey -= cm.firstKey
	}
	c.writeMap(3)
	c.w.WriteBulkString("flags")
	c.writeStatuses(flags)
	c.w.WriteBulkString("begin_search")
	c.writeMap(2)
	c.w.WriteBulkString("type")
	c.w.WriteBulkString("index")
	c.w.WriteBulkString("spec")
	c.writeMap(1)
	c.w.WriteBulkString("index")
	c.w.WriteInt64(int64(cm.firstKey))
	c.w.WriteBulkString("find_keys")
	c.writeMap(2)
	c.w.WriteBulkString("type")
	c.w.WriteBulkString("range")
	c.w.WriteBulkString("spec")
	c.writeMap(3)
	c.w.WriteBulkString("lastkey")
	c.w.WriteInt64(int64(lastKey))
	c.w.WriteBulkString("keystep")
	c.w.WriteInt64(int64(cm.keyStep))
	c.w.WriteBulkString("limit")
	c.w.WriteInt64(0)
}

// writeUnknownKeySpec writes a key spec whose keys only the command knows, as Redis
// writes SORT's BY and GET patterns.
func writeUnknownKeySpec(c *client, cm *command) {
	c.writeMap(3)
	c.w.WriteBulkString("flags")
	c.writeStatuses(keySpecFlags(cm))
	for _, part := range []string{"begin_search", "find_keys"} {
		c.w.WriteBulkString(part)
		c.writeMap(2)
		c.w.WriteBulkString("type")
		c.w.WriteBulkString("unknown")
		c.w.WriteBulkString("spec")
		c.writeMap(0)
	}
}

// writeCommandDocs writes one command's COMMAND DOCS map. redis-cli asserts on the
// types: strings for summary, since and group, an array of argument maps.
func writeCommandDocs(c *client, cm *command) {
	n := 3
	if cm.complexity != "" {
		n++
	}
	if cm.args != nil {
		n++
	}
	if cm.subs != nil {
		n++
	}
	c.writeMap(n)
	c.w.WriteBulkString("summary")
	c.w.WriteBulkString(cm.summary)
	c.w.WriteBulkString("since")
	c.w.WriteBulkString(since)
	c.w.WriteBulkString("group")
	c.w.WriteBulkString(cm.group)
	if cm.complexity != "" {
		c.w.WriteBulkString("complexity")
		c.w.WriteBulkString(cm.complexity)
	}
	if cm.args != nil {
		c.w.WriteBulkString("arguments")
		writeArgDocs(c, cm.args)
	}
	if cm.subs != nil {
		c.w.WriteBulkString("subcommands")
		c.writeMap(len(cm.subs))
		for _, sub := range cm.subs {
			c.w.WriteBulkString(sub.full)
			writeCommandDocs(c, sub)
		}
	}
}

func writeArgDocs(c *client, args []arg) {
	c.w.WriteArray(len(args))
	for _, a := range args {
		var flags []string
		if a.optional {
			flags = append(flags, "optional")
		}
		if a.multiple {
			flags = append(flags, "multiple")
		}
		n := 2
		if a.typ == "key" {
			n++
		}
		if a.token != "" {
			n++
		}
		if flags != nil {
			n++
		}
		if a.args != nil {
			n++
		}
		c.writeMap(n)
		c.w.WriteBulkString("name")
		c.w.WriteBulkString(a.name)
		c.w.WriteBulkString("type")
		c.w.WriteBulkString(a.typ)
		if a.typ == "key" {
			c.w.WriteBulkString("key_spec_index")
			c.w.WriteInt64(0) // every command has at most one key spec
		}
		if a.token != "" {
			c.w.WriteBulkString("token")
			c.w.WriteBulkString(a.token)
		}
		if flags != nil {
			c.w.WriteBulkString("flags")
			c.writeStatuses(flags)
		}
		if a.args != nil {
			c.w.WriteBulkString("arguments")
			writeArgDocs(c, a.args)
		}
	}
}

// Errors of COMMAND GETKEYS, in Redis's words.
const (
	errGetKeysCommand = "ERR Invalid command specified"
	errGetKeysNoKeys  = "ERR The command has no key arguments"
	errGetKeysArity   = "ERR Invalid number of arguments specified for command"
	errGetKeysArgs    = "ERR Invalid arguments specified for command"
)

// getKeys serves COMMAND GETKEYS and, withFlags, COMMAND GETKEYSANDFLAGS: the keys
// of the command given, found as cluster mode finds them (RL.ALL's among its rules),
// which is how redis-py's RedisCluster routes a movablekeys command.
func getKeys(withFlags bool) func(s *Server, c *client, args [][]byte, _ int64) {
	return func(_ *Server, c *client, args [][]byte, _ int64) {
		call := args[2:]
		cm := lookup(commandIndex, call[0])
		if cm != nil && cm.subs != nil && len(call) > 1 {
			cm = lookup(cm.subIndex, call[1])
		}
		switch {
		case cm == nil:
			c.writeError(errGetKeysCommand)
			return
		case cm.firstKey == 0 && cm.keys == nil:
			c.writeError(errGetKeysNoKeys)
			return
		case cm.arity > 0 && len(call) != cm.arity || len(call) < -cm.arity:
			c.writeError(errGetKeysArity)
			return
		}
		keys := commandKeys(cm, call)
		if len(keys) == 0 {
			c.writeError(errGetKeysArgs)
			return
		}
		c.w.WriteArray(len(keys))
		for _, k := range keys {
			if withFlags {
				c.w.WriteArray(2)
				c.w.WriteBulk(k)
				c.writeStatuses(keySpecFlags(cm))
			} else {
				c.w.WriteBulk(k)
			}
		}
	}
}

// commandKeys lists the keys of a call of cm, which has keys, as cluster mode finds them.
func commandKeys(cm *command, call [][]byte) [][]byte {
	if cm.keys != nil {
		return cm.keys(call)
	}
	last := cm.lastKey
	if last < 0 {
		last += len(call)
	}
	var keys [][]byte
	for i := cm.firstKey; i <= last; i += cm.keyStep {
		keys = append(keys, call[i])
	}
	return keys
}

// keySpecFlags are the flags of a command's keys, in its key specs and GETKEYSANDFLAGS.
func keySpecFlags(cm *command) []string {
	if cm.keyFlags != nil {
		return cm.keyFlags
	}
	if slices.Contains(cm.flags, "write") {
		return []string{"RW", "update"}
	}
	return []string{"RO", "access"}
}
