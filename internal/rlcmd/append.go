package rlcmd

import (
	"strings"

	"github.com/rlserver/rlserver/algo"
)

// names are the commands by kind, upper case as people type them (MONITOR and slow
// logs show them so).
var names = func() (n [algo.LastKind + 1]string) {
	for k := algo.KindFixed; k <= algo.LastKind; k++ {
		n[k] = strings.ToUpper(k.Command())
	}
	return n
}()

// Name is kind's command, upper case: "RL.TOKEN", "CL.THROTTLE", "GCRA".
func Name(kind algo.Kind) string { return names[kind] }

// RLAllWord is kind's algorithm word in RL.ALL ("TOKEN"), or "" for a kind RL.ALL does
// not take (CL.THROTTLE, Redis's GCRA).
func RLAllWord(kind algo.Kind) string {
	for _, a := range rlAllKinds {
		if a.kind == kind {
			return a.word
		}
	}
	return ""
}

// AppendRequest appends to dst r's words after the key, which ParseRequest reads
// back as r: the positional arguments, then COST (unless r refunds), PEEK, REFUND,
// RESERVE and the algorithm's own option (RATE, BURST or QUEUE) when it is not 0, the default.
// CL.THROTTLE's are max_burst count_per_period period_s and the quantity, or REFUND n.
// Numbers are appended as int64. r is a request as ParseRequest gives them: a refund
// spends nothing (Cost 0) and CL.THROTTLE takes no PEEK, so neither is written.
func AppendRequest(dst []any, r algo.Request) []any {
	if r.Kind == algo.KindThrottle {
		dst = append(dst, r.Limit, r.Rate, r.Window/1_000_000)
		if r.Refund != 0 {
			return append(dst, "REFUND", r.Refund)
		}
		return append(dst, r.Cost)
	}
	dst = append(dst, r.Limit, r.Window/1000)
	if r.Refund != 0 {
		dst = append(dst, "REFUND", r.Refund)
	} else {
		dst = append(dst, "COST", r.Cost)
	}
	if r.Peek {
		dst = append(dst, "PEEK")
	}
	if r.Reserve != 0 {
		dst = append(dst, "RESERVE", r.Reserve)
	}
	switch {
	case r.Kind == algo.KindToken && r.Rate != 0:
		dst = append(dst, "RATE", r.Rate)
	case r.Kind == algo.KindGCRA && r.Burst != 0:
		dst = append(dst, "BURST", r.Burst)
	case r.Kind == algo.KindLeaky && r.Queue != 0:
		dst = append(dst, "QUEUE", r.Queue)
	}
	return dst
}

// AppendRLAll appends to dst RL.ALL's words after the command name: each rule's
// algorithm word, key and AppendRequest's words. ParseRLAll reads them back as rules,
// but that PEEK in one rule is PEEK in all.
func AppendRLAll(dst []any, rules []algo.Rule) []any {
	for _, r := range rules {
		dst = AppendRequest(append(dst, RLAllWord(r.Req.Kind), string(r.Key)), r.Req)
	}
	return dst
}

// AppendAcquire appends to dst RL.ACQUIRE's words after the key: limit lease_ms, ID id
// when r names one and RESERVE n when it is not 0. ParseAcquire reads them back as r.
func AppendAcquire(dst []any, r algo.LeaseRequest) []any {
	dst = append(dst, r.Limit, r.Duration/1000)
	if r.ID != nil {
		dst = append(dst, "ID", string(r.ID))
	}
	if r.Reserve != 0 {
		dst = append(dst, "RESERVE", r.Reserve)
	}
	return dst
}
