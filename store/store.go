// Package store keeps rlserver's limiter states: millions of keys, each with one
// algorithm's state (one algo.Kind: the six RL.* limiters, CL.THROTTLE, or a lease set
// of RL.ACQUIRE), in memory the garbage collector never has to scan.
//
// Keys are spread over a power-of-two number of shards by their hash. Each shard has
// one mutex, and a command's whole read-decide-write happens under it, so every command
// is atomic. RL.ALL (DoAll) takes the mutexes of all its keys' shards in ascending
// shard index, so that calls sharing shards cannot deadlock, and writes only if every
// rule admits.
//
// Within a shard nothing holds a pointer per key: a key is one fixed-size record in a
// slab (slab.go), longer keys, logs and lease sets are in chunks of pages (chunks.go),
// an open-addressing index maps a key's hash to its record (index.go), and each slab
// has a timing wheel (package ttl). The arrays live off the Go heap where the platform
// allows (internal/offheap).
//
// A key is removed when its state is fresh, that is back at its initial state, so that
// it answers as an absent key would: lookups treat a key whose deadline has passed as
// absent right away, and the wheels remove it at the next Expire (the server calls it
// every 10 ms), or within reclaimEvery (16 ms) of activity on its shard.
//
// Expiry is amortised over what comes due between two advances of the wheels. A
// wheel id stands for a group of 16 records, so its firing costs a walk of the group.
// Advanced every millisecond, as before issue 41, a group under churn was walked once
// a key that went: in BenchmarkChurn (RL.TOKEN on a 1M keyspace at 600k calls/s, every
// key fresh 10 ms after its call) 7 records read a key removed, and expiry was 35-42%
// of the store's CPU, 170-200 ns a call; 27-33% of the server's in a profile of
// bench-server's RL.TOKEN. Advanced at most every 10-16 ms, a walk removes all that
// came due meanwhile: 2 records read a key removed, 17-21% of the store's CPU, 50-90 ns
// a call, most of it the removals themselves (the index's entry, found again from the
// key's hash). The lateness is memory's only: what decides, answers or is written
// (get, TTL, Scan, the snapshot, replication, which never sends expiries) compares a
// record's deadline with now, Len calls Expire, which is exact, and eviction takes a
// due key before any live one. Memory per live key is unchanged (BenchmarkBytesPerKey);
// under the churn above the store holds up to ~12k keys for ~6.5k live (15k with no
// Expire).
//
// All times are µs since the Unix epoch, passed in by the caller. docs/design.md has
// the design at length and the figures, each with the test that reproduces it.
package store

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync/atomic"

	"github.com/rlserver/rlserver/algo"
	"github.com/rlserver/rlserver/ttl"
	"github.com/zeebo/xxh3"
)

// Errors returned by Store.Do, DoAll and the lease methods; package resp words them
// for the wire.
var (
	// ErrWrongType is returned when a key holds another algorithm's state.
	ErrWrongType = errors.New("store: key holds another algorithm's state")
	// ErrKeyTooLong is returned for a key longer than 256 MiB - 1 byte.
	ErrKeyTooLong = errors.New("store: key longer than 268435455 bytes")
	// ErrLogLimit is returned for an RL.LOG request or a lease set whose limit is above
	// the store's MaxLogLimit, which bounds a log's memory.
	ErrLogLimit = errors.New("store: log limit above MaxLogLimit")
	// ErrOOM is returned under PolicyNoEviction for a request that would create a key
	// past the memory budget.
	ErrOOM = errors.New("store: new key past MaxMemory")
	// ErrShardFull is returned for a request that would create a key in a shard whose
	// slab of the key's record size holds as many records as a slot numbers, 2^26:
	// 64M keys of one size in a shard, which only a store of few shards reaches.
	ErrShardFull = errors.New("store: shard full for keys of this size")
	// ErrSliceKind is returned for a slice (algo.Request.Slice) on a kind that takes
	// none (algo.Kind.Sliceable).
	ErrSliceKind = errors.New("store: a slice on a kind that takes none")
	// ErrSameKey is returned by DoAll for two rules on one key: the rules would see
	// each other's writes, and the reply could not say which rule consumed what.
	ErrSameKey = errors.New("store: two rules on one key")
)

const (
	// DefaultShards is the number of shards when Config.Shards is 0: BenchmarkShards
	// pits 16 to 1024 on 1M random keys; fewer contend on the locks, more cost memory
	// (each shard's fixed part) and gain nothing. Each shard's index, slabs and wheels
	// grow by copying under its lock, so more shards also mean shorter stalls.
	DefaultShards = 64
	// DefaultMaxLogLimit is the largest RL.LOG limit when Config.MaxLogLimit is 0.
	DefaultMaxLogLimit = 100_000

	maxShards   = 1 << 16
	maxLogLimit = 10_000_000 // a full log of this many entries is ~30 MB
	maxKeyLen   = 1<<28 - 1  // the key length field of an entry
	kindCount   = int(algo.LastKind) + 1
)

// Config configures a Store.
type Config struct {
	Shards      int   // a power of two; 0 means DefaultShards
	MaxLogLimit int64 // largest RL.LOG limit; 0 means DefaultMaxLogLimit
	// MaxMemory bounds Stats.Bytes; 0 means no bound. Each shard gets an equal share,
	// checked under its own lock when a key is created, so no lock is global.
	MaxMemory int64
	Policy    Policy // what a full shard does with a new key
	// MonotonicTime makes Do decide at no earlier time than its shard last decided
	// at, for a caller that reads a shared clock before Do takes the shard's lock: a
	// call can then arrive after a later one, and a fixed window's state would flip
	// back to the old window and forward again, each time with a new count: the soak
	// test (2,000 connections) saw hot RL.FIXED keys allow more than their limit
	// without it, and stays within it with it.
	// Callers that replay times of their own, going back, leave it off.
	MonotonicTime bool
	// Partition, if set, groups the keys by its value (cluster mode's hash slot), so
	// that CountPartition and KeysInPartition find a group's keys without a scan.
	Partition func(key []byte) uint16
}

// Stats is a snapshot of the store's counters.
type Stats struct {
	Keys    int
	Bytes   int64             // bytes held by slabs, indexes, chunks, wheels and RL.LOG's scratch
	Expired uint64            // keys removed because their state became fresh
	Evicted uint64            // keys removed to stay within MaxMemory
	Changed uint64            // lease releases and renewals that changed a lease set
	Allowed [kindCount]uint64 // per algo.Kind: calls answered allowed (leases: acquired), PEEK included
	Limited [kindCount]uint64 // per algo.Kind: calls answered limited (leases: not acquired), PEEK included
}

// Store is a sharded in-memory store of limiter states. It is safe for concurrent use.
type Store struct {
	shards      []shard
	mask        uint64
	maxLogLimit int64
	monotonic   bool
	// leaseID draws the number behind a generated lease id: rand.Uint64, which tests
	// replace with a sequence.
	leaseID  func() uint64
	backlog  atomic.Pointer[Backlog] // replica.go: where a primary's writes go, nil if none
	journal  atomic.Pointer[Journal] // journal.go: where every write goes for the log on disk, nil if none
	prefixes prefixes                // prefix.go
}

// New returns an empty Store, or an error saying which setting is out of range.
func New(cfg Config) (*Store, error) {
	if cfg.Shards == 0 {
		cfg.Shards = DefaultShards
	}
	if cfg.MaxLogLimit == 0 {
		cfg.MaxLogLimit = DefaultMaxLogLimit
	}
	if cfg.Shards < 1 || cfg.Shards > maxShards || bits.OnesCount(uint(cfg.Shards)) != 1 {
		return nil, fmt.Errorf("store: Shards must be a power of two between 1 and %d, got %d", maxShards, cfg.Shards)
	}
	if cfg.MaxLogLimit < 1 || cfg.MaxLogLimit > maxLogLimit {
		return nil, fmt.Errorf("store: MaxLogLimit must be between 1 and %d, got %d", maxLogLimit, cfg.MaxLogLimit)
	}
	if err := checkMemory(cfg.MaxMemory, cfg.Policy, cfg.Shards); err != nil {
		return nil, err
	}
	s := &Store{shards: make([]shard, cfg.Shards), mask: uint64(cfg.Shards - 1), maxLogLimit: cfg.MaxLogLimit,
		monotonic: cfg.MonotonicTime, leaseID: rand.Uint64}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.init()
		sh.prefixes = &s.prefixes
		sh.budget = cfg.MaxMemory / int64(cfg.Shards)
		sh.noEvict = cfg.Policy == PolicyNoEviction
		sh.partOf = cfg.Partition
	}
	// The shards' memory is mapped off the Go heap, which the collector does not free:
	// a Store dropped without Flush gives it back when it is collected.
	runtime.AddCleanup(s, func(shards []shard) {
		for i := range shards {
			shards[i].release()
		}
	}, s.shards)
	return s, nil
}

// checkMemory validates a memory bound and policy for a store of shards shards.
func checkMemory(maxMemory int64, p Policy, shards int) error {
	if maxMemory < 0 || maxMemory != 0 && maxMemory < int64(shards)*minShardBudget {
		return fmt.Errorf("store: MaxMemory must be 0 (no limit) or at least %d bytes (16 KiB per shard), got %d",
			int64(shards)*minShardBudget, maxMemory)
	}
	if int(p) >= len(policyNames) {
		return fmt.Errorf("store: Policy must be PolicyVolatileTTL or PolicyNoEviction, got %d", p)
	}
	return nil
}

// SetMaxMemory changes the memory bound and the policy of a running store, as
// Config's MaxMemory and Policy, or changes nothing and says which is out of range.
// Keys already over a lowered bound stay: the next new keys evict, or are refused.
func (s *Store) SetMaxMemory(maxMemory int64, p Policy) error {
	if err := checkMemory(maxMemory, p, len(s.shards)); err != nil {
		return err
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.budget = maxMemory / int64(len(s.shards))
		sh.noEvict = p == PolicyNoEviction
		sh.mu.Unlock()
	}
	return nil
}

// locate returns key's shard, locked, and its hash tag. The shard's wheel has been
// advanced if a millisecond has passed since it last was.
func (s *Store) locate(key []byte, now int64) (*shard, uint32) {
	h := xxh3.Hash(key)
	sh := &s.shards[h&s.mask]
	sh.mu.Lock()
	sh.advance(now)
	return sh, uint32(h >> 32)
}

// Do decides one request on key and stores the new state: the whole call is atomic.
// A key whose state is fresh again after the call is removed. r.Kind is not KindLease.
// A request with Refund gives back what earlier calls spent (algo's refund.go), a
// write replicated as any other; it is not counted in Stats' Allowed and Limited, and
// on an absent key it changes nothing. A request with Slice takes what fits of it
// (algo's slice.go), a write as any spend.
func (s *Store) Do(key []byte, r algo.Request, now int64) (algo.Decision, error) {
	if err := s.check(key, r); err != nil {
		return algo.Decision{}, err
	}
	sh, tag := s.locate(key, now)
	defer sh.mu.Unlock()
	now = s.decideAt(sh, now)
	d, _, err := sh.do(key, tag, r, now)
	if err != nil {
		return algo.Decision{}, err
	}
	if d.Write {
		s.emit(sh, key, tag, now)
	}
	if r.Refund == 0 {
		sh.count(r.Kind, d.Allowed)
	}
	return d, nil
}

// check validates what the store bounds in a request on key.
func (s *Store) check(key []byte, r algo.Request) error {
	if len(key) > maxKeyLen {
		return ErrKeyTooLong
	}
	if r.Kind == algo.KindLog && r.Limit > s.maxLogLimit {
		return ErrLogLimit
	}
	if r.Slice > 0 && !r.Kind.Sliceable() {
		return ErrSliceKind
	}
	return nil
}

// decideAt returns the time to decide at on the locked shard sh: now, or under
// MonotonicTime no earlier than the shard last decided at.
func (s *Store) decideAt(sh *shard, now int64) int64 {
	if s.monotonic {
		now = max(now, sh.latest)
		sh.latest = now
	}
	return now
}

// count counts one answer of kind.
func (sh *shard) count(kind algo.Kind, allowed bool) {
	if allowed {
		sh.allowed[kind]++
	} else {
		sh.limited[kind]++
	}
}

// Delete removes key and reports whether it held a state.
func (s *Store) Delete(key []byte, now int64) bool {
	sh, tag := s.locate(key, now)
	defer sh.mu.Unlock()
	pos, slot := sh.get(key, tag, now)
	if pos < 0 {
		return false
	}
	sh.remove(pos, slot)
	s.emit(sh, key, tag, now)
	return true
}

// Exists reports whether key holds a state.
func (s *Store) Exists(key []byte, now int64) bool {
	sh, tag := s.locate(key, now)
	defer sh.mu.Unlock()
	pos, _ := sh.get(key, tag, now)
	return pos >= 0
}

// Type returns the kind of state key holds, and false if none.
func (s *Store) Type(key []byte, now int64) (algo.Kind, bool) {
	sh, tag := s.locate(key, now)
	defer sh.mu.Unlock()
	pos, slot := sh.get(key, tag, now)
	if pos < 0 {
		return 0, false
	}
	return sh.at(slot).kind(), true
}

// TTL returns the µs until key's state is fresh again and the key goes, and false if
// key holds no state.
func (s *Store) TTL(key []byte, now int64) (int64, bool) {
	sh, tag := s.locate(key, now)
	defer sh.mu.Unlock()
	pos, slot := sh.get(key, tag, now)
	if pos < 0 {
		return 0, false
	}
	return sh.at(slot).deadline() - now, true
}

// MemoryUsage returns the bytes key costs: its record, its chunk if it has one (a
// long key, and an RL.LOG key's log or a lease key's set, rounded up to the chunk's
// size class), its share of the index (the table's bytes over its keys) and of
// its group's id in the wheel (ttl.BytesPerID over the group's 16 records). False if
// key holds no state.
func (s *Store) MemoryUsage(key []byte, now int64) (int64, bool) {
	sh, tag := s.locate(key, now)
	defer sh.mu.Unlock()
	pos, slot := sh.get(key, tag, now)
	if pos < 0 {
		return 0, false
	}
	indexShare := (sh.index.bytes() + int64(sh.index.used) - 1) / int64(sh.index.used)
	n := int64(slabClasses[slot>>slotClassShift].stride) + indexShare + (ttl.BytesPerID+1<<groupShift-1)>>groupShift
	if e := sh.at(slot); e.spilled() {
		c, _, _ := e.spill()
		n += int64(classSizes[c])
	}
	return n, true
}

// Scan returns some of the keys and the cursor to continue from; cursor 0 starts a
// scan, and a returned cursor of 0 ends it. A key that holds a state for the whole
// scan is returned exactly once (records never move while their key lives, and the
// cursor is shard<<32 | next slot); a key added or removed meanwhile may or may not be.
// count bounds the slots looked at per call, as Redis's COUNT bounds the buckets;
// match is a Redis glob (nil matches all) and kind a filter (0 means any).
func (s *Store) Scan(cursor uint64, count int, match []byte, kind algo.Kind, now int64) (uint64, [][]byte) {
	if count <= 0 {
		count = 10
	}
	if len(match) == 1 && match[0] == '*' {
		match = nil // as in Redis, "*" matches every key, the empty one too
	}
	var keys [][]byte
	for i := cursor >> 32; i < uint64(len(s.shards)); i++ {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.advance(now)
		slot, more := uint32(cursor), true
		for ; count > 0; slot++ {
			c, r := slot>>slotClassShift, slot&slotIndexMask
			if int(c) == len(sh.slabs) {
				more = false
				break
			}
			if int(r) >= sh.slabs[c].n {
				slot = (c+1)<<slotClassShift - 1 // the next slab's first record
				continue
			}
			count--
			e := sh.slabs[c].record(r)
			if !e.live() || kind != 0 && e.kind() != kind || e.deadline() <= now {
				continue
			}
			if k := sh.key(e); match == nil || Match(match, k, false) {
				keys = append(keys, append([]byte(nil), k...))
			}
		}
		sh.mu.Unlock()
		if more {
			return i<<32 | uint64(slot), keys
		}
		cursor = 0
		if count == 0 && i+1 < uint64(len(s.shards)) {
			return (i + 1) << 32, keys
		}
	}
	return 0, keys
}

// Len returns the number of keys, after removing those whose state is fresh at now.
func (s *Store) Len(now int64) int {
	s.Expire(now)
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.live
		sh.mu.Unlock()
	}
	return n
}

// Flush removes every key and frees the memory that held them. Counters stay.
func (s *Store) Flush() {
	if s.flushLogged() {
		return
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.reset()
		sh.mu.Unlock()
	}
}

// ResetTime forgets the latest times of MonotonicTime, for a clock set back on purpose
// (DEBUG CLOCK).
func (s *Store) ResetTime() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.latest = 0
		sh.mu.Unlock()
	}
}

// Expire removes the keys whose state is fresh at now from every shard and returns
// how many it removed. The server calls it from a ticker, so that idle shards' keys
// go too, and the memory of size classes left empty goes back, and so does all of a
// shard's memory once its last key has gone.
func (s *Store) Expire(now int64) int {
	var n uint64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		before := sh.expired
		sh.advanceWheels(now)
		sh.tick = max(sh.tick, now/1000)
		sh.chunks.dropIdle()
		if sh.live == 0 && sh.index.n != 0 {
			sh.release()
		}
		n += sh.expired - before
		sh.mu.Unlock()
	}
	return int(n)
}

// Shards returns the number of shards, Config.Shards or DefaultShards.
func (s *Store) Shards() int { return len(s.shards) }

// Stats returns the store's counters, summed over the shards.
func (s *Store) Stats() Stats {
	var st Stats
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		st.Keys += sh.live
		st.Bytes += sh.bytes()
		st.Expired += sh.expired
		st.Evicted += sh.evicted
		st.Changed += sh.changed
		for k := range st.Allowed {
			st.Allowed[k] += sh.allowed[k]
			st.Limited[k] += sh.limited[k]
		}
		sh.mu.Unlock()
	}
	return st
}
