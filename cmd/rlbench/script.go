package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/rlserver/rlserver/lua"
)

// runScript prints the reference script of the one command args names, exactly its
// lua.Named's Source, so that a shell can load it into any Redis:
//
//	rlbench script rl.all | redis-cli -x SCRIPT LOAD
//
// -x sends the Source whole, so SCRIPT LOAD answers lua.Named's SHA1. The form
// redis-cli SCRIPT LOAD "$(rlbench script rl.all)" works too, but $(...) drops the
// Source's last newline, and with it that SHA1: EVALSHA then needs the one it answers.
func runScript(args []string, w io.Writer) error {
	known := strings.Join(lua.Commands(), ", ")
	if len(args) != 1 {
		return fmt.Errorf("usage: rlbench script <command>, one of %s", known)
	}
	s := lua.Named(strings.ToLower(args[0]))
	if s.Source == "" {
		return fmt.Errorf("no reference script for %q: want one of %s", args[0], known)
	}
	_, err := io.WriteString(w, s.Source)
	return err
}
