package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// heapCheckInterval is how often returnHeap looks at the Go heap.
const heapCheckInterval = 250 * time.Millisecond

// heapSlack is how much more heap memory than after its last return returnHeap lets
// stay resident in an idle heap.
const heapSlack = 1 << 20

// idleAllocs is the most the server may allocate in a heapCheckInterval and count as
// idle: about 2 commands a millisecond (redcon allocates ~170 B a command).
const idleAllocs = 64 << 10

// returnHeap gives an idle Go heap's garbage and free pages back to the OS, every
// heapCheckInterval until ctx ends: when the server allocated less than idleAllocs in
// the last interval and the heap holds heapSlack more than after the last return.
//
// Why: the store lives off the Go heap (internal/offheap), so the heap holds only
// requests in flight and their buffers, but serving leaves garbage behind. Any load
// grows the heap to the collector's 4 MB minimum goal, 3 MB over a newly started server's
// (15-20 B a user for 200k users, in TestMemoryPerUser), and a client that pipelined a
// million calls at once (redis-cli --pipe) left 150 MB of garbage in a heap whose live
// data was a few MB. With no traffic after, nothing triggers a collection until the
// runtime's forced one 2 minutes later, and the scavenger returns only free pages
// slowly. debug.FreeOSMemory collects and returns the pages at once; with the keys off
// the heap a collection marks a few MB, ~1 ms. A heap in use is left alone: forcing
// collections there would trade CPU and page faults for memory the next requests
// take back.
func returnHeap(ctx context.Context) {
	samples := []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	held := func() uint64 {
		metrics.Read(samples)
		return samples[1].Value.Uint64() + samples[2].Value.Uint64() + samples[3].Value.Uint64()
	}
	floor := held()
	allocs := samples[0].Value.Uint64()
	t := time.NewTicker(heapCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h := held()
		idle := samples[0].Value.Uint64()-allocs < idleAllocs
		if idle && h > floor+heapSlack {
			debug.FreeOSMemory()
			floor = held()
		}
		allocs = samples[0].Value.Uint64()
	}
}
