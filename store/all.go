package store

import (
	"bytes"
	"slices"

	"github.com/rlserver/rlserver/algo"
	"github.com/zeebo/xxh3"
)

// ruleAt is where one rule's key lives.
type ruleAt struct {
	hash    uint64 // the key's xxh3: the shard index in the low bits, the index tag the upper half
	shard   *shard
	existed bool // the key held a state at the first pass
}

// DoAll decides rules, RL.ALL's, as one atomic call and reports whether every rule
// admitted; ds, which must hold len(rules) decisions, gets each rule's answer.
//
// It locks the shards of all the keys in ascending shard index, so two calls that
// share shards take them in the same order and cannot deadlock, and decides every rule
// as PEEK at one now (under MonotonicTime, the latest of the shards'). Only if all
// admit, and no rule asked for PEEK, does it decide them again for real under the same
// locks: nothing changed in between and the keys are distinct, so the second pass
// admits all, and ds holds the consuming answers. Otherwise nothing is written and ds
// holds the PEEK answers, each rule's own would-be answer.
//
// Errors change nothing: a key too long, a log limit too high, two rules on one key
// (ErrSameKey), a key of another kind (ErrWrongType), and under PolicyNoEviction a new
// key refused for memory (ErrOOM): the second pass creates the new keys first, and
// removes those it created if one is refused, before any existing key is written.
// (Under PolicyVolatileTTL a new key evicts others as a single command's does, keys of
// this call too: an evicted key is fresh, which admits whatever its state admitted.)
// Each rule's answer counts once in its kind's Stats counters.
func (s *Store) DoAll(rules []algo.Rule, ds []algo.Decision, now int64) (bool, error) {
	ds = ds[:len(rules)]
	var buf [algo.MaxRules]ruleAt
	at := buf[:0]
	var shardBuf [algo.MaxRules]int
	order := shardBuf[:0]
	for i, rule := range rules {
		if err := s.check(rule.Key, rule.Req); err != nil {
			return false, err
		}
		h := xxh3.Hash(rule.Key)
		for j := range at {
			if at[j].hash == h && bytes.Equal(rules[j].Key, rules[i].Key) {
				return false, ErrSameKey
			}
		}
		at = append(at, ruleAt{hash: h, shard: &s.shards[h&s.mask]})
		order = append(order, int(h&s.mask))
	}
	slices.Sort(order)
	order = slices.Compact(order)
	for _, i := range order {
		s.shards[i].mu.Lock()
	}
	defer func() {
		for _, i := range order {
			s.shards[i].mu.Unlock()
		}
	}()
	for _, i := range order {
		sh := &s.shards[i]
		sh.advance(now)
		if s.monotonic {
			now = max(now, sh.latest)
		}
	}
	for _, i := range order {
		s.decideAt(&s.shards[i], now)
	}

	all, peek := true, false
	for i, rule := range rules {
		r := rule.Req
		peek = peek || r.Peek
		r.Peek = true
		d, existed, err := at[i].shard.do(rule.Key, uint32(at[i].hash>>32), r, now)
		if err != nil {
			return false, err
		}
		ds[i], at[i].existed = d, existed
		all = all && d.Allowed
	}
	if all && !peek {
		if err := s.commitAll(rules, at, ds, now); err != nil {
			return false, err
		}
	}
	for i, rule := range rules {
		at[i].shard.count(rule.Req.Kind, ds[i].Allowed)
	}
	return all, nil
}

// commitAll is DoAll's second pass, all rules admitted as PEEK: the rules whose key is
// new first, then the others. Only creating a key can fail (ErrOOM), so a failure
// comes before any existing key is written, and removing the keys created so far
// leaves every key as it was.
func (s *Store) commitAll(rules []algo.Rule, at []ruleAt, ds []algo.Decision, now int64) error {
	for _, newKeys := range [2]bool{true, false} {
		for i, rule := range rules {
			if at[i].existed == newKeys {
				continue
			}
			d, _, err := at[i].shard.do(rule.Key, uint32(at[i].hash>>32), rule.Req, now)
			if err != nil {
				for j := range rules { // a new key not created yet is simply not found
					if !at[j].existed {
						at[j].shard.drop(rules[j].Key, uint32(at[j].hash>>32), now)
						s.emit(at[j].shard, rules[j].Key, uint32(at[j].hash>>32), now)
					}
				}
				return err
			}
			if d.Write {
				s.emit(at[i].shard, rule.Key, uint32(at[i].hash>>32), now)
			}
			ds[i] = d
		}
	}
	return nil
}

// drop removes key if it is there, without counting it as expired.
func (sh *shard) drop(key []byte, tag uint32, now int64) {
	if pos, slot := sh.get(key, tag, now); pos >= 0 {
		sh.remove(pos, slot)
	}
}
