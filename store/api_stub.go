package store

// API skeleton fixed by the lead; the store owner replaces this file keeping these
// exported names and signatures (adding more is fine). All times are µs since the epoch.

import (
	"errors"

	"github.com/rlserver/rlserver/algo"
)

// ErrWrongType is returned when a key holds another algorithm's state.
var ErrWrongType = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")

// Config configures a Store.
type Config struct {
	Shards      int   // a power of two; 0 means the default
	MaxLogLimit int64 // largest RL.LOG limit; 0 means 100,000
}

// Stats is a snapshot of the store's counters.
type Stats struct {
	Keys    int
	Bytes   int64     // bytes held by slabs, index and wheels
	Expired uint64    // keys removed because their state became fresh
	Allowed [8]uint64 // per algo.Kind
	Limited [8]uint64 // per algo.Kind
}

// Store is a sharded in-memory store of limiter states.
type Store struct{}

func New(cfg Config) (*Store, error)                                             { panic("todo") }
func (s *Store) Do(key []byte, r algo.Request, now int64) (algo.Decision, error) { panic("todo") }
func (s *Store) Delete(key []byte, now int64) bool                               { panic("todo") }
func (s *Store) Exists(key []byte, now int64) bool                               { panic("todo") }
func (s *Store) Type(key []byte, now int64) (algo.Kind, bool)                    { panic("todo") }
func (s *Store) TTL(key []byte, now int64) (int64, bool)                         { panic("todo") }
func (s *Store) Scan(cursor uint64, count int, match []byte, kind algo.Kind, now int64) (uint64, [][]byte) {
	panic("todo")
}
func (s *Store) Len(now int64) int                               { panic("todo") }
func (s *Store) MemoryUsage(key []byte, now int64) (int64, bool) { panic("todo") }
func (s *Store) Flush()                                          { panic("todo") }
func (s *Store) Expire(now int64) int                            { panic("todo") }
func (s *Store) Stats() Stats                                    { panic("todo") }
