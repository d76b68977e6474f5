package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/rlserver/rlserver/lua"
)

// runScript prints the reference script of the one command args names, exactly its
// lua.Scripts Source, so that a shell can load it into any Redis:
//
//	rlbench script rl.all | redis-cli -x SCRIPT LOAD
//
// -x sends the Source whole, so SCRIPT LOAD answers lua.Scripts' SHA1. The form
// redis-cli SCRIPT LOAD "$(rlbench script rl.all)" works too, but $(...) drops the
// Source's last newline, and with it that SHA1: EVALSHA then needs the one it answers.
func runScript(args []string, w io.Writer) error {
	known := strings.Join(slices.Sorted(maps.Keys(lua.Scripts)), ", ")
	if len(args) != 1 {
		return fmt.Errorf("usage: rlbench script <command>, one of %s", known)
	}
	s, ok := lua.Scripts[strings.ToLower(args[0])]
	if !ok {
		return fmt.Errorf("no reference script for %q: want one of %s", args[0], known)
	}
	_, err := io.WriteString(w, s.Source)
	return err
}
