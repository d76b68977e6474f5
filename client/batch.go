package client

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Batch configures auto-batching (auto-pipelining, as redis/rueidis does it) for New
// and NewLua; NewEmbedded ignores it. The zero value batches, with the defaults.
//
// One call per round trip leaves a server, and the app, in system calls most of the
// time (~45% of rlserver's CPU). Batched, concurrent calls queue by key on Lanes
// lanes per node; a lane sends what has queued as one go-redis pipeline, on one
// connection, and while it waits for the replies the next calls queue for its next
// pipeline. Many goroutines calling Allow on random keys so get several times the
// decisions per second of go-redis's pool alone, with a lower p99: fewer system calls
// per decision (`make bench-client` measures both; docs/benchmarks.md has a run).
//
// What batching keeps:
//   - Each call keeps its own context and budget: a call whose context ends while
//     it waits, queued or with its pipeline out, returns ErrUnavailable at once,
//     wrapping the context's error, and its late reply is discarded. A call whose
//     context is done before its pipeline leaves is never sent.
//   - A call is sent once: the pipelines are marked so that go-redis never re-sends
//     them (MaxRetries does not apply), even after a network error, when every call of
//     the pipeline fails with ErrUnavailable.
//   - Order per key: a key's calls queue on one lane, whose pipelines go one after
//     the other, so calls on one key reach the server in the order they were made.
//
// A pipeline goes out with a context of its own, without the callers' values, whose
// deadline is the latest of its calls': go-redis hooks see it through
// ProcessPipelineHook, not ProcessHook. On a Ring or a ClusterClient each node has
// Lanes lanes of its own, so a node that stalls holds up only its own keys' calls.
// Lanes need no stopping: a lane's goroutine runs only while it has calls to send.
type Batch struct {
	// Off sends each call on its own, through go-redis's pool: a round trip per call,
	// still never re-sent and still returning by its budget.
	Off bool
	// Lanes is how many pipelines may be out at once per node (a Ring's shard, a
	// cluster's master), each on its own connection of go-redis's pipeline pool
	// (PipelinePoolSize); 0 means DefaultLanes. More lanes overlap more round trips,
	// in smaller pipelines.
	Lanes int
	// MaxCalls is the most calls in one pipeline; 0 means DefaultMaxCalls. Calls
	// beyond it wait for the lane's next pipeline.
	MaxCalls int
}

// DefaultLanes is Batch.Lanes when 0. One lane sends the fewest, largest pipelines:
// with many goroutines on few cores it gives more decisions per second than several
// lanes, and a lower p99 (`go run -C cmd/rlbench . client -lanes 1,2,4,8` compares them);
// the app's goroutines keep filling the next pipeline while one is out. More lanes pay where the round trip is long or a
// server has cores to spare for several connections.
const DefaultLanes = 1

// DefaultMaxCalls is Batch.MaxCalls when 0: this many RL.* calls are about 16 KB on
// the wire, well within go-redis's 128 KiB pipeline buffers, and as many as the 256
// goroutines of make bench-client can have queued at once.
const DefaultMaxCalls = 256

// maxLanes bounds Batch.Lanes: each lane may hold a connection of rdb's pool.
const maxLanes = 1024

// sender sends one command and waits for its reply or the end of ctx. It returns
// the command that holds the outcome: cmd itself, or another holding ctx's error
// when ctx ended first (cmd may then still be written by its pipeline, and must not
// be read). key is the command's first key: its lane.
type sender interface {
	send(ctx context.Context, key string, cmd *redis.Cmd) *redis.Cmd
}

// newSender returns the sender Batch b configures on rdb, or why b is invalid.
func newSender(rdb redis.UniversalClient, b Batch) (sender, error) {
	switch {
	case b.Lanes < 0 || b.Lanes > maxLanes:
		return nil, fmt.Errorf("client: Options.Batch.Lanes must be between 1 and %d (0: %d), got %d", maxLanes, DefaultLanes, b.Lanes)
	case b.MaxCalls < 0:
		return nil, fmt.Errorf("client: Options.Batch.MaxCalls must be 1 or more (0: %d), got %d", DefaultMaxCalls, b.MaxCalls)
	case b.Off && (b.Lanes != 0 || b.MaxCalls != 0):
		return nil, fmt.Errorf("client: Options.Batch.Off sends each call on its own: Lanes and MaxCalls must be 0, got %d and %d", b.Lanes, b.MaxCalls)
	case b.Off:
		return direct{rdb: rdb, deadlines: readsDeadlines(rdb)}, nil
	}
	bt := &batcher{rdb: rdb, seed: maphash.MakeSeed(), maxCalls: b.MaxCalls, lanes: b.Lanes}
	if bt.maxCalls == 0 {
		bt.maxCalls = DefaultMaxCalls
	}
	if bt.lanes == 0 {
		bt.lanes = DefaultLanes
	}
	bt.single = make([]lane, bt.lanes)
	switch c := rdb.(type) {
	case *redis.Ring:
		bt.nodeOf = func(_ context.Context, key string) *redis.Client {
			node, _ := c.GetShardClientForKey(key)
			return node
		}
	case *redis.ClusterClient:
		bt.nodeOf = func(ctx context.Context, key string) *redis.Client {
			node, _ := c.MasterForKey(ctx, key)
			return node
		}
	}
	return bt, nil
}

// direct sends each command on its own, through go-redis's pool, as a pipeline of one
// marked not to be retried (once): rdb.Process would re-send it as MaxRetries says.
type direct struct {
	rdb       redis.UniversalClient
	deadlines bool // go-redis gives up at the context's deadline (readsDeadlines)
}

func (d direct) send(ctx context.Context, _ string, cmd *redis.Cmd) *redis.Cmd {
	if d.deadlines {
		d.exec(ctx, cmd)
		return cmd
	}
	// go-redis would wait for the reply until its ReadTimeout: wait for it here only
	// until the context ends, as a batched call does, and drop a late reply.
	done := make(chan struct{})
	go func() {
		d.exec(ctx, cmd)
		close(done)
	}()
	select {
	case <-done:
		return cmd
	case <-ctx.Done():
	}
	failed := redis.NewCmd(ctx)
	failed.SetErr(ctx.Err())
	return failed
}

// exec sends cmd alone; its error is the command's.
func (d direct) exec(ctx context.Context, cmd *redis.Cmd) {
	pipe := d.rdb.Pipeline()
	pipe.Process(ctx, once{cmd})
	pipe.Exec(ctx)
}

// readsDeadlines reports whether rdb gives up a command at its context's deadline:
// go-redis does only with ContextTimeoutEnabled. A wrapper it cannot look into is
// taken not to.
func readsDeadlines(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// batcher sends commands in pipelines, on lanes that each take a share of the keys.
// On a Ring or a ClusterClient each node has lanes of its own, so that a pipeline
// holds one node's calls and a stalled node holds up no other node's.
type batcher struct {
	rdb      redis.UniversalClient
	seed     maphash.Seed
	maxCalls int
	lanes    int                                                 // lanes per node
	nodeOf   func(ctx context.Context, key string) *redis.Client // a key's node; nil with one node
	single   []lane                                              // the lanes with one node, or of keys whose node is unknown
	byNode   sync.Map                                            // *redis.Client → []lane
}

// lane is the lane of key: its node's lanes, a share of them by the key's hash. A key
// that a topology change moves to another node moves to that node's lanes.
func (b *batcher) lane(ctx context.Context, key string) *lane {
	lanes := b.single
	if b.nodeOf != nil {
		if node := b.nodeOf(ctx, key); node != nil {
			v, ok := b.byNode.Load(node)
			if !ok {
				v, _ = b.byNode.LoadOrStore(node, make([]lane, b.lanes))
			}
			lanes = v.([]lane)
		}
	}
	return &lanes[maphash.String(b.seed, key)%uint64(len(lanes))]
}

// lane is a queue of calls and, while it holds any, the one goroutine sending them.
type lane struct {
	mu      sync.Mutex
	queue   []*call
	spare   []*call // the last pipeline's slice, for the next run's first swap
	running bool    // a goroutine is sending this lane's calls
}

// call is one command waiting for its pipeline's reply.
type call struct {
	ctx   context.Context
	cmd   *redis.Cmd
	state atomic.Int32 // pending, then delivered (by the lane) or abandoned (by the caller)
	done  chan struct{}
}

// The states of a call: whoever moves it from pending owns its outcome.
const (
	pending int32 = iota
	delivered
	abandoned
)

func (b *batcher) send(ctx context.Context, key string, cmd *redis.Cmd) *redis.Cmd {
	c := &call{ctx: ctx, cmd: cmd, done: make(chan struct{})}
	l := b.lane(ctx, key)
	l.mu.Lock()
	l.queue = append(l.queue, c)
	start := !l.running
	l.running = true
	l.mu.Unlock()
	if start {
		go b.run(l)
	}
	select {
	case <-c.done:
		return cmd
	case <-ctx.Done():
	}
	if !c.state.CompareAndSwap(pending, abandoned) {
		<-c.done // delivered as the context ended: the reply is here
		return cmd
	}
	failed := redis.NewCmd(ctx)
	failed.SetErr(ctx.Err())
	return failed
}

// run sends l's calls, a pipeline at a time, until its queue is empty.
func (b *batcher) run(l *lane) {
	l.mu.Lock()
	batch := l.spare
	l.spare = nil
	for {
		switch n := len(l.queue); {
		case n == 0:
			l.running = false
			l.spare = batch[:0]
			l.mu.Unlock()
			return
		case n <= b.maxCalls:
			batch, l.queue = l.queue, batch[:0]
		default:
			batch = append(batch[:0], l.queue[:b.maxCalls]...)
			rest := copy(l.queue, l.queue[b.maxCalls:])
			clear(l.queue[rest:])
			l.queue = l.queue[:rest]
		}
		l.mu.Unlock()
		b.exec(batch)
		clear(batch) // let the calls go
		l.mu.Lock()
	}
}

// exec sends batch's live calls as one pipeline and hands each its reply.
func (b *batcher) exec(batch []*call) {
	pipe := b.rdb.Pipeline()
	var deadline time.Time
	bounded := true
	now := time.Now()
	live := batch[:0]
	for _, c := range batch {
		d, ok := c.ctx.Deadline()
		if c.ctx.Err() != nil || ok && !now.Before(d) || c.state.Load() != pending {
			continue // its caller returns, or has returned, ErrUnavailable: never sent
		}
		if !ok {
			bounded = false
		} else if d.After(deadline) {
			deadline = d
		}
		pipe.Process(c.ctx, once{c.cmd})
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	// The pipeline outlives any one caller: it runs until the last deadline among its
	// calls (go-redis's ReadTimeout if one has none), and each caller leaves at its own.
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if bounded {
		ctx, cancel = context.WithDeadline(ctx, deadline)
	}
	pipe.Exec(ctx) // each command holds its own error
	cancel()
	for _, c := range live {
		if c.state.CompareAndSwap(pending, delivered) {
			close(c.done)
		}
	}
}

// once is a command go-redis never re-sends: a pipeline holding one is not retried
// after a network error, whatever rdb's MaxRetries (a call whose reply was lost may
// have counted; sent again, it would count twice). Cluster redirects (MOVED, ASK),
// where the node refused the call, are still followed.
type once struct{ *redis.Cmd }

// NoRetry tells go-redis not to retry the pipeline holding the command.
func (once) NoRetry() bool { return true }

// do makes a command of args, sends it with s and returns the command holding its
// outcome. args[1] is the key.
func do(ctx context.Context, s sender, args ...any) *redis.Cmd {
	return s.send(ctx, args[1].(string), redis.NewCmd(ctx, args...))
}
