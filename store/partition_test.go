package store

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/rlserver/rlserver/algo"
	"github.com/zeebo/xxh3"
)

// TestPartition: keys are found by partition, as created, deleted, evicted by
// expiry or flushed; a key whose state is fresh is neither counted nor listed.
func TestPartition(t *testing.T) {
	part := func(key []byte) uint16 { return uint16(key[0] - 'a') }
	s := newStore(t, Config{Shards: 4, Partition: part})
	short, long := request(algo.KindFixed, 5, 10*sec), request(algo.KindFixed, 5, 3600*sec)
	var want []string
	for i := range 50 {
		k := fmt.Sprintf("b%d", i)
		r := long
		if i%2 == 0 {
			r = short // fresh within 10 s
		} else {
			want = append(want, k)
		}
		if _, err := s.Do([]byte(k), r, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Do([]byte(fmt.Sprintf("c%d", i)), long, t0); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.CountPartition(1, t0); n != 50 {
		t.Fatalf("CountPartition(1) = %d, want 50", n)
	}
	later := t0 + 20*sec
	if n := s.CountPartition(1, later); n != 25 {
		t.Fatalf("CountPartition(1) 20 s later = %d, want 25: the fresh keys are not counted", n)
	}
	var got []string
	for _, k := range s.KeysInPartition(1, 1000, later) {
		got = append(got, string(k))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("KeysInPartition(1) = %v, want %v", got, want)
	}
	if keys := s.KeysInPartition(1, 3, later); len(keys) != 3 {
		t.Fatalf("KeysInPartition(1, 3) gave %d keys", len(keys))
	}
	s.Expire(later)
	s.Delete([]byte(want[0]), later)
	if n := s.CountPartition(1, later); n != 24 {
		t.Fatalf("after expiry and a delete: %d, want 24", n)
	}
	if n := s.CountPartition(2, later); n != 50 {
		t.Fatalf("CountPartition(2) = %d, want 50", n)
	}
	s.Flush()
	if n := s.CountPartition(2, later) + s.CountPartition(1, later); n != 0 {
		t.Fatalf("after Flush: %d keys", n)
	}
}

// TestPartitionBytes bounds the Go heap the partition index takes: 500,000 keys of a
// fixed window over 16384 partitions (cluster mode's slots), at most 24 bytes a key.
func TestPartitionBytes(t *testing.T) {
	part := func(key []byte) uint16 { return uint16(xxh3.Hash(key) & 16383) }
	const keys = 500_000
	// The same keys with and without the index: what differs is the index's, in
	// either build (with rlserver_heap the records too are on the Go heap).
	heapOf := func(cfg Config) int64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := newStore(t, cfg)
		r := request(algo.KindFixed, 5, 3600*sec)
		for i := range keys {
			if _, err := s.Do([]byte(fmt.Sprintf("user:%010d", i)), r, t0); err != nil {
				t.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(s)
		return int64(after.HeapAlloc) - int64(before.HeapAlloc)
	}
	without := heapOf(Config{})
	perKey := (heapOf(Config{Partition: part}) - without) / keys
	t.Logf("%d bytes of Go heap a key", perKey)
	if perKey > 24 {
		t.Fatalf("the partition index takes %d bytes of Go heap a key, want at most 24", perKey)
	}
}
