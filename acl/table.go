// Package acl is Redis 7's access control lists without the protocol: users,
// their rules as ACL SETUSER takes them, the checks a front makes before running a
// command (may this user run it, touch these keys, these channels), the aclfile
// and the ACL LOG. The front describes its commands once in a Table.
package acl

import (
	"slices"
	"strings"
)

// Categories are Redis 7.0's ACL categories in its order (ACL CAT lists them so),
// then the limiter's own.
var Categories = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
	"dangerous", "connection", "transaction", "scripting", "ratelimit",
}

// category is the bit of a category name (case-insensitive), 0 if unknown.
func category(name string) uint64 {
	for i, c := range Categories {
		if strings.EqualFold(c, name) {
			return 1 << i
		}
	}
	return 0
}

// Command is how a front describes one of its commands to the table.
type Command struct {
	Name       string   // lower case; a subcommand's full name: "config|get"
	Categories []string // without '@', from Categories
	NoAuth     bool     // runs before AUTH (AUTH, HELLO): never refused by an ACL
}

// Table is a front's commands, numbered: a user's allowed commands are a bitmap
// over these numbers.
type Table struct {
	cmds   []tableCmd
	byName map[string]int
}

type tableCmd struct {
	name   string
	cats   uint64
	parent int   // -1 for a top-level command
	subs   []int // its subcommands' numbers
	noAuth bool
}

// NewTable numbers cmds in their order. A subcommand must follow its container.
// It panics on an unknown category or an orphan subcommand: a table is code.
func NewTable(cmds []Command) *Table {
	t := &Table{byName: make(map[string]int, len(cmds))}
	for _, c := range cmds {
		tc := tableCmd{name: c.Name, parent: -1, noAuth: c.NoAuth}
		for _, cat := range c.Categories {
			bit := category(cat)
			if bit == 0 {
				panic("acl: unknown category " + cat + " of " + c.Name)
			}
			tc.cats |= bit
		}
		id := len(t.cmds)
		if top, _, ok := strings.Cut(c.Name, "|"); ok {
			p, found := t.byName[top]
			if !found {
				panic("acl: subcommand before its command: " + c.Name)
			}
			tc.parent = p
			t.cmds[p].subs = append(t.cmds[p].subs, id)
		}
		t.cmds = append(t.cmds, tc)
		t.byName[c.Name] = id
	}
	return t
}

// ID is the number of a command by its full name ("config|get"), case-insensitively;
// -1 if there is none.
func (t *Table) ID(name string) int {
	if id, ok := t.byName[strings.ToLower(name)]; ok {
		return id
	}
	return -1
}

// InCategory lists the commands and subcommands of a category (ACL CAT category);
// false if the category is unknown.
func (t *Table) InCategory(name string) ([]string, bool) {
	bit := category(name)
	if bit == 0 {
		return nil, false
	}
	var names []string
	for _, c := range t.cmds {
		if c.cats&bit != 0 {
			names = append(names, c.name)
		}
	}
	return names, true
}

// CategoriesOf lists a command's categories with '@', in Categories' order, as
// COMMAND INFO shows them.
func CategoriesOf(cats []string) []string {
	out := make([]string, 0, len(cats))
	for _, c := range Categories {
		if slices.Contains(cats, c) {
			out = append(out, "@"+c)
		}
	}
	return out
}
