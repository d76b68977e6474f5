package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// heapCheckInterval is how often returnHeap looks at the Go heap.
const heapCheckInterval = 10 * time.Second

// heapSlack is how much more heap memory than after its last return returnHeap lets
// stay resident in a quiet heap.
const heapSlack = 32 << 20

// returnHeap gives a quiet Go heap's garbage and free pages back to the OS, every
// heapCheckInterval until ctx ends: when no collection ran in the last interval and
// the heap holds heapSlack more than it did after the last return.
//
// Why: the store lives off the Go heap (internal/offheap), so the heap holds only
// requests in flight and their buffers, but a burst leaves them behind. A client that
// pipelined a million calls at once (redis-cli --pipe) left 150 MB of garbage in a
// heap whose live data was a few MB; with no traffic after, nothing triggers a
// collection until the runtime's forced one 2 minutes later, and the scavenger returns
// only free pages: RSS stayed at 190 MB after every key had gone. debug.FreeOSMemory
// collects and returns the pages at once; with the keys off the heap a collection
// marks a few MB, ~1 ms. A busy heap collects by itself and is left alone.
func returnHeap(ctx context.Context) {
	samples := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	held := func() uint64 {
		metrics.Read(samples)
		return samples[1].Value.Uint64() + samples[2].Value.Uint64() + samples[3].Value.Uint64()
	}
	floor := held()
	cycles := samples[0].Value.Uint64()
	t := time.NewTicker(heapCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h := held()
		quiet := samples[0].Value.Uint64() == cycles
		if quiet && h > floor+heapSlack {
			debug.FreeOSMemory()
			floor = held()
		}
		cycles = samples[0].Value.Uint64()
	}
}
