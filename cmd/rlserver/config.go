package main

import (
	"cmp"
	"flag"
	"fmt"
	"strings"

	"github.com/rlserver/rlserver/internal/conffile"
	"github.com/rlserver/rlserver/resp"
)

// redisArgs rewrites redis-server's style of command line, --name value..., into
// flags: each --name takes the words after it up to the next --word, joined by
// spaces (--bind 127.0.0.1 ::1), and yes/no for a boolean, as a config file's line
// would. Other arguments, -name value and --name=value among them, stay as they are.
func redisArgs(fs *flag.FlagSet, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok || name == "" || strings.Contains(name, "=") || notDirectives[name] || name == "help" || name == "h" {
			out = append(out, args[i])
			continue
		}
		j := i + 1
		for j < len(args) && !strings.HasPrefix(args[j], "--") {
			j++
		}
		value := strings.Join(args[i+1:j], " ")
		if f := fs.Lookup(name); f != nil {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				value = cmp.Or(map[string]string{"yes": "true", "no": "false", "": "true"}[strings.ToLower(value)], value)
			}
		}
		out = append(out, "-"+name+"="+value)
		i = j - 1
	}
	return out
}

// notDirectives are the flags a config file may not give.
var notDirectives = map[string]bool{"version": true, "v": true}

// readConfig sets fs's flags from the directives of the file at path, except those
// set on the command line. An unknown directive, a bad value or a directive given
// twice is an error naming the file and the line.
func readConfig(fs *flag.FlagSet, path string, users *[]resp.UserDirective) error {
	directives, err := conffile.ReadFile(path)
	if err != nil {
		return err
	}
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	first := map[string]int{}
	for _, d := range directives {
		where := fmt.Sprintf("%s:%d", d.File, d.Line)
		f := fs.Lookup(d.Name)
		if f == nil || notDirectives[d.Name] {
			return fmt.Errorf("%s: unknown directive '%s'", where, d.Name)
		}
		if d.Name == "save" { // rules add up over the lines, as Redis's
			if !onCommandLine["save"] {
				if err := fs.Set("save", strings.Join(d.Args, " ")); err != nil {
					return fmt.Errorf("%s: bad value for 'save' %q: %v", where, strings.Join(d.Args, " "), err)
				}
			}
			continue
		}
		if d.Name == "user" { // one directive per user, as Redis's
			if !onCommandLine["user"] {
				(*usersFlag)(users).add(d, where)
			}
			continue
		}
		if line, ok := first[d.Name]; ok {
			return fmt.Errorf("%s: '%s' repeated (first on line %d)", where, d.Name, line)
		}
		first[d.Name] = d.Line
		// replicaof takes Redis's two words, host and port, bind one or more; every
		// other one word.
		if len(d.Args) != 1 && (d.Name != "replicaof" || len(d.Args) != 2) && (d.Name != "bind" || len(d.Args) == 0) {
			return fmt.Errorf("%s: '%s' takes one argument, got %d", where, d.Name, len(d.Args))
		}
		if onCommandLine[d.Name] {
			continue
		}
		value := strings.Join(d.Args, " ")
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			value = cmp.Or(map[string]string{"yes": "true", "no": "false"}[strings.ToLower(value)], value)
		}
		if err := fs.Set(d.Name, value); err != nil {
			return fmt.Errorf("%s: bad value for '%s' %q: %v", where, d.Name, strings.Join(d.Args, " "), err)
		}
	}
	return nil
}
