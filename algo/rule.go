package algo

// Rule is one rule of RL.ALL: a key and the request to decide on it.
type Rule struct {
	Key []byte  // the rule's key, distinct from the other rules' keys
	Req Request // the rule's algorithm and arguments; Peek on every rule if the call has PEEK
}

// MaxRules is the most rules one RL.ALL call may name: a call locks the shards of all
// its keys at once, and the bound keeps one call from holding them for long.
const MaxRules = 64
