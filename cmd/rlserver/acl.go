package main

import (
	"strings"

	"github.com/rlserver/rlserver/internal/conffile"
	"github.com/rlserver/rlserver/resp"
)

// usersFlag is -user, Redis's `user` directive: one user a flag or a line, its
// name then its ACL rules, given as many times as there are users.
type usersFlag []resp.UserDirective

func (u *usersFlag) String() string {
	if u == nil {
		return ""
	}
	lines := make([]string, len(*u))
	for i, d := range *u {
		lines[i] = strings.Join(d.Args, " ")
	}
	return strings.Join(lines, "; ")
}

// Set takes one user from the command line, its words split as a config line's.
func (u *usersFlag) Set(s string) error {
	args, err := conffile.Split(s)
	if err != nil {
		return err
	}
	*u = append(*u, resp.UserDirective{Args: args, Where: "-user " + s})
	return nil
}

// add takes a `user` line of the config file.
func (u *usersFlag) add(d conffile.Directive, where string) {
	*u = append(*u, resp.UserDirective{Args: d.Args, Where: where})
}
