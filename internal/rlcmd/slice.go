package rlcmd

import (
	"bytes"

	"github.com/rlserver/rlserver/algo"
)

// ParseSlice reads RL.SLICE's arguments, those after the command name:
//
//	FIXED|SLIDE|TOKEN|GCRA key limit window_ms count [RATE r|BURST b] [RESERVE n] [PEEK]
//
// into the key and a request of Slice count (1 to the limit) and Cost 0. The
// algorithm word is RL.ALL's, in any case; LOG and LEAKY are refused with why, and
// COST and REFUND with how to give back. The rest is ParseRequest's, with its
// errors. The key aliases args. Errors are Redis error replies, whole.
func ParseSlice(args [][]byte) ([]byte, algo.Request, error) {
	if len(args) < 5 {
		return nil, algo.Request{}, errSliceArity
	}
	kind := rlAllKind(args[0])
	switch {
	case kind == algo.KindLog:
		return nil, algo.Request{}, errSliceLog
	case kind == algo.KindLeaky:
		return nil, algo.Request{}, errSliceLeaky
	case !kind.Sliceable():
		return nil, algo.Request{}, errSliceUnknown
	}
	for i := 5; i < len(args); i++ {
		if bytes.EqualFold(args[i], []byte("COST")) || bytes.EqualFold(args[i], []byte("REFUND")) {
			return nil, algo.Request{}, errSliceOption
		}
		if takesValue(kind, args[i]) {
			i++ // its value, whatever it spells
		}
	}
	rest := make([][]byte, 0, len(args)-3)
	rest = append(append(rest, args[2], args[3]), args[5:]...)
	r, err := ParseRequest(kind, rest, 0)
	if err != nil {
		return nil, algo.Request{}, err
	}
	lo, hi := r.Range(algo.ArgSlice)
	n, ok := ParseIntIn(args[4], lo, hi)
	if !ok {
		return nil, algo.Request{}, countError(hi)
	}
	r.Cost, r.Slice = 0, n
	return args[1], r, nil
}

// AppendSlice appends to dst RL.SLICE's words after the command name, which
// ParseSlice reads back as key and r: the algorithm word, key, limit, window_ms, the
// count, then PEEK, RESERVE and RATE or BURST as AppendRequest writes them.
func AppendSlice(dst []any, key []byte, r algo.Request) []any {
	dst = append(dst, RLAllWord(r.Kind), string(key), r.Limit, r.Window/1000, r.Slice)
	plain := r
	plain.Slice, plain.Cost = 0, 0
	opts := AppendRequest(nil, plain)[4:] // past limit, window_ms and COST 0
	return append(dst, opts...)
}
