package rlcmd

import (
	"bytes"

	"github.com/rlserver/rlserver/algo"
)

// maxShownAlgo is the longest unknown ALGO word echoed in the error.
const maxShownAlgo = 32

// rlAllKinds maps RL.ALL's ALGO words to kinds; CL.THROTTLE has none.
var rlAllKinds = [...]struct {
	word string
	kind algo.Kind
}{{"FIXED", algo.KindFixed}, {"SLIDE", algo.KindSlide}, {"LOG", algo.KindLog}, {"TOKEN", algo.KindToken}, {"GCRA", algo.KindGCRA}, {"LEAKY", algo.KindLeaky}}

// rlAllKind returns the kind an ALGO word names, in any case, or 0.
func rlAllKind(word []byte) algo.Kind {
	for _, a := range rlAllKinds {
		if bytes.EqualFold(word, []byte(a.word)) {
			return a.kind
		}
	}
	return 0
}

// ParseRLAll parses RL.ALL's arguments, those after the command name:
//
//	<ALGO> key limit window_ms [option ...] [<ALGO> key limit window_ms [option ...] ...]
//
// Each rule's arguments after the key are parsed by ParseRequest, so their errors are the
// single command's. An ALGO word where an option could start (not where an option's
// value is expected) starts the next rule. PEEK in any rule applies to the whole call:
// it is set on every rule's Req. That two rules name the same key is the store's check
// (it compares keys anyway); ParseRLAll does not look. The rules' keys alias args.
// Errors are Redis error replies, whole.
func ParseRLAll(args [][]byte, maxLogLimit int64) ([]algo.Rule, error) {
	if len(args) == 0 {
		return nil, errRLAllArity
	}
	kind := rlAllKind(args[0])
	if kind == 0 {
		w := args[0]
		if len(w) > maxShownAlgo || bytes.ContainsAny(w, "\r\n") {
			return nil, errRLAllUnknown
		}
		return nil, unknownAlgorithmError(w)
	}
	var rules []algo.Rule
	peek := false
	for i := 0; i < len(args); {
		if len(rules) == algo.MaxRules {
			return nil, errRLAllTooMany
		}
		if len(args)-i < 4 {
			return nil, errRLAllArity
		}
		key := args[i+1]
		end := i + 4
		for end < len(args) && rlAllKind(args[end]) == 0 {
			if takesValue(kind, args[end]) {
				end++ // its value, whatever it spells
			}
			end++
		}
		end = min(end, len(args))
		r, err := ParseRequest(kind, args[i+2:end], maxLogLimit)
		if err != nil {
			return nil, err
		}
		peek = peek || r.Peek
		rules = append(rules, algo.Rule{Key: key, Req: r})
		if i = end; i < len(args) {
			kind = rlAllKind(args[i])
		}
	}
	for i := range rules {
		rules[i].Req.Peek = peek
	}
	return rules, nil
}

// takesValue reports whether opt is an option of kind's command that is followed by a
// value: COST, REFUND, RESERVE, and RATE, BURST or QUEUE for the algorithm that takes it. Another word
// is PEEK or a syntax error that ParseRequest reports.
func takesValue(kind algo.Kind, opt []byte) bool {
	switch {
	case bytes.EqualFold(opt, []byte("COST")), bytes.EqualFold(opt, []byte("REFUND")), bytes.EqualFold(opt, []byte("RESERVE")):
		return true
	case kind == algo.KindToken:
		return bytes.EqualFold(opt, []byte("RATE"))
	case kind == algo.KindGCRA:
		return bytes.EqualFold(opt, []byte("BURST"))
	case kind == algo.KindLeaky:
		return bytes.EqualFold(opt, []byte("QUEUE"))
	}
	return false
}
