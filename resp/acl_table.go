package resp

// flagsACL are the flags of Redis's ACL subcommands that change or reveal users.
var flagsACL = []string{"admin", "noscript", "loading", "stale"}

// aclCommands is Redis's ACL command (docs/acl.md).
var aclCommands = []*command{
	{
		name: "acl", arity: -2,
		summary: "A container for Access List Control commands.",
		group:   groupServer,
		subs: []*command{
			{
				name: "cat", arity: -2, flags: []string{"noscript", "loading", "stale"},
				summary: "List the ACL categories, or the commands of one.",
				group:   groupServer, complexity: "O(1)",
				args: []arg{{name: "category", typ: "string", optional: true}},
				run:  cmdACLCat,
			},
			{
				name: "deluser", arity: -3, flags: flagsACL,
				summary: "Delete users and close their connections; answers how many existed.",
				group:   groupServer, complexity: "O(1) amortized time considering the typical user.",
				args: []arg{{name: "username", typ: "string", multiple: true}},
				run:  cmdACLDelUser,
			},
			{
				name: "dryrun", arity: -4, flags: flagsACL,
				summary: "Answer whether a user may run a command with these arguments, without running it.",
				group:   groupServer, complexity: "O(1).",
				args: []arg{{name: "username", typ: "string"}, {name: "command", typ: "string"},
					{name: "arg", typ: "string", optional: true, multiple: true}},
				run: cmdACLDryRun,
			},
			{
				name: "genpass", arity: -2, flags: []string{"noscript", "loading", "stale"},
				summary: "Answer a random password of 256 bits (or bits), in hex.",
				group:   groupServer, complexity: "O(1)",
				args: []arg{{name: "bits", typ: "integer", optional: true}},
				run:  cmdACLGenPass,
			},
			{
				name: "getuser", arity: 3, flags: flagsACL,
				summary: "Describe a user's rules: flags, password hashes, commands, keys, channels.",
				group:   groupServer, complexity: "O(N). Where N is the number of password, command and pattern rules that the user has.",
				args: []arg{{name: "username", typ: "string"}},
				run:  cmdACLGetUser,
			},
			{
				name: "list", arity: 2, flags: flagsACL,
				summary: "List the users as aclfile lines.",
				group:   groupServer, complexity: "O(N). Where N is the number of configured users.",
				run: cmdACLList,
			},
			{
				name: "load", arity: 2, flags: flagsACL,
				summary: "Replace the users with the aclfile's, all or none; the connections of the users replaced close.",
				group:   groupServer, complexity: "O(N). Where N is the number of configured users.",
				run: cmdACLLoad,
			},
			{
				name: "log", arity: -2, flags: flagsACL,
				summary: "List the latest refusals (10, or count), or RESET the log.",
				group:   groupServer, complexity: "O(N) with N being the number of entries shown.",
				args: []arg{{name: "operation", typ: "oneof", optional: true, args: []arg{
					{name: "count", typ: "integer"},
					{name: "reset", typ: "pure-token", token: "RESET"},
				}}},
				run: cmdACLLog,
			},
			{
				name: "save", arity: 2, flags: flagsACL,
				summary: "Write the users to the aclfile.",
				group:   groupServer, complexity: "O(N). Where N is the number of configured users.",
				run: cmdACLSave,
			},
			{
				name: "setuser", arity: -3, flags: flagsACL,
				summary: "Create a user or change its rules: all of them, or none when one is bad.",
				group:   groupServer, complexity: "O(N). Where N is the number of rules provided.",
				args: []arg{{name: "username", typ: "string"}, {name: "rule", typ: "string", optional: true, multiple: true}},
				run:  cmdACLSetUser,
			},
			{
				name: "users", arity: 2, flags: flagsACL,
				summary: "List the users' names.",
				group:   groupServer, complexity: "O(N). Where N is the number of configured users.",
				run: cmdACLUsers,
			},
			{
				name: "whoami", arity: 2, flags: []string{"noscript", "loading", "stale"},
				summary: "Answer the connection's user.",
				group:   groupServer, complexity: "O(1)",
				run: cmdACLWhoAmI,
			},
		},
	},
}
