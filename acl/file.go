package acl

import (
	"errors"
	"fmt"
	"strings"
)

// ParseFile reads an aclfile as Redis 7.0's ACLLoadFromFile does: every non-blank
// line "user NAME RULES...", words split at single spaces (no quoting; an empty
// word is no rule). Every bad line is reported, each with the file's name and the
// line's number, in one error ending as Redis's; nothing is returned then.
func ParseFile(t *Table, filename string, data []byte) (map[string]*Perms, error) {
	users := map[string]*Perms{}
	var errs strings.Builder
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		argv := strings.Split(line, " ")
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", filename, n)
			continue
		}
		name := argv[1]
		if hasSpaces(name) {
			// The stray quote is Redis's.
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", filename, n, name)
			continue
		}
		if users[name] != nil {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", name, n)
			continue
		}
		p := newPerms(t)
		users[name] = p
		reported := false
		for _, op := range argv[2:] {
			op = strings.Trim(op, "\t\r\n")
			err := p.apply(op)
			if op != "" && op[0] == '(' {
				err = errSyntax
			}
			switch {
			case err == nil:
			case errors.Is(err, errUnknown):
				fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", filename, n, op, err)
			case !reported:
				fmt.Fprintf(&errs, "%s:%d: %s. ", filename, n, err)
				reported = true
			}
		}
		p.finish()
	}
	if errs.Len() > 0 {
		errs.WriteString("WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
		return nil, errors.New(errs.String())
	}
	return users, nil
}

// Config is the users of `user` directives in a config file, checked as they
// are read (Redis's ACLAppendUserForLoading) and applied at start.
type Config struct {
	t     *Table
	order []string
	users map[string]*Perms
}

// NewConfig collects `user` directives for the commands of t.
func NewConfig(t *Table) *Config { return &Config{t: t, users: map[string]*Perms{}} }

// Add takes one directive's words after "user": the name, then rules. Its error
// is Redis's "Error in user declaration 'WORD': REASON", or for an unknown command,
// which Redis finds once the file is read, its "Error loading ACL rule ..."; the
// front adds where.
func (c *Config) Add(args []string) error {
	if len(args) < 1 {
		return errors.New("Error in user declaration 'user': Wrong format")
	}
	name := args[0]
	if c.users[name] != nil {
		return fmt.Errorf("Error in user declaration '%s': Duplicate user found. A user can only be "+
			"defined once in config files", name)
	}
	if hasSpaces(name) {
		return fmt.Errorf("Error in user declaration '%s': %w", name, errNameSpaces)
	}
	p := newPerms(c.t)
	if name == "default" {
		_ = p.apply("reset")
	}
	var unknown string // the first rule naming an unknown command, reported last
	for _, op := range args[1:] {
		err := p.apply(op)
		if op != "" && op[0] == '(' {
			err = errSyntax
		}
		switch {
		case errors.Is(err, errUnknown):
			if unknown == "" {
				unknown = op
			}
		case err != nil:
			return fmt.Errorf("Error in user declaration '%s': %w", op, err)
		}
	}
	if unknown != "" {
		// Redis checks these when it loads the users, after the file is read.
		return fmt.Errorf("Error loading ACL rule '%s' for the user named '%s': %w", unknown, name, errUnknown)
	}
	c.order = append(c.order, name)
	c.users[name] = p.finish()
	return nil
}

// Empty reports whether no directive was read.
func (c *Config) Empty() bool { return len(c.order) == 0 }

// Users are the users declared, for Registry.Replace. A default user declared
// starts from "reset", as Redis's; one not declared keeps its rules (add the
// default user's before Replace).
func (c *Config) Users() map[string]*Perms {
	out := make(map[string]*Perms, len(c.users))
	for n, p := range c.users {
		out[n] = p
	}
	return out
}
