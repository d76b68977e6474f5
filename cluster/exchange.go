package cluster

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Timing of the table exchange.
const (
	exchangeTick    = 100 * time.Millisecond // how soon a change goes out
	exchangeRefresh = time.Second            // how often an unchanged table goes out
	// ExchangeTimeout bounds one exchange, connection included.
	ExchangeTimeout = 2 * time.Second
	// writableDelay bounds how long a restarted node waits for a peer's table before
	// it serves its slots, as Redis's CLUSTER_WRITABLE_DELAY.
	writableDelay = 2 * time.Second
)

// ExchangeConfig is what an Exchange needs of the server it runs in.
type ExchangeConfig struct {
	// Send sends table to the node at addr (over its client port: CLUSTER RLTABLE)
	// and returns the node's own, within ctx.
	Send func(ctx context.Context, addr, table string) (string, error)
	// Changed, if set, is called after a peer's table changed this node's.
	Changed func()
	// Round, if set, is called at the start of each round of the loop, on its
	// goroutine.
	Round func()
	// Logger logs the failed exchanges, at debug level; nil for slog.Default().
	Logger *slog.Logger
}

// Exchange keeps a -cluster-enabled node's table in step with its peers' without
// Redis's bus: it sends its table to every node it knows whenever its table changed
// since it last sent it there, and at least every second, and merges the table it
// gets back (merge.go). A node that starts with peers in its table is Rejoining
// until it has exchanged tables with each, for at most two seconds: its slots answer
// CLUSTERDOWN meanwhile, since a master failed over while it was down would
// otherwise serve them, stale, until its promoted replica's claim reaches it. Only
// that node's own table carries the claim.
type Exchange struct {
	t   *Topology
	cfg ExchangeConfig

	mu        sync.Mutex
	sent      map[string]sentTable // by host:port: what was last sent, and when
	busy      map[string]bool      // by host:port: an exchange under way
	unheard   map[string]bool      // by host:port: no table yet since Start (rejoining)
	stop      chan struct{}        // closed by Stop: ends loop
	rejoining atomic.Bool
}

// sentTable is the last table sent to a peer: its change count and time, or the
// time of the last attempt, failed: a node down is tried once a second.
type sentTable struct {
	changes uint64
	at      time.Time
	failed  bool
}

// NewExchange returns the exchange of t's table, not started.
func NewExchange(t *Topology, cfg ExchangeConfig) *Exchange {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Exchange{t: t, cfg: cfg, sent: map[string]sentTable{}, busy: map[string]bool{}}
}

// Start starts the loop, until Stop; a node whose table names peers is Rejoining
// from now.
func (x *Exchange) Start() {
	x.stop = make(chan struct{})
	if peers := x.t.Peers(); len(peers) > 0 {
		x.mu.Lock()
		x.unheard = map[string]bool{}
		for _, addr := range peers {
			x.unheard[addr] = true
		}
		x.mu.Unlock()
		x.rejoining.Store(true)
		time.AfterFunc(writableDelay, func() { x.rejoining.Store(false) })
	}
	go x.loop()
}

// Stop ends the loop started by Start, if any. An exchange under way finishes.
func (x *Exchange) Stop() {
	if x.stop != nil {
		close(x.stop)
	}
}

// Rejoining reports whether this node, restarted with peers in its table, still
// waits for one of their tables: its slots are then not served. False on a nil
// Exchange (a static topology has none).
func (x *Exchange) Rejoining() bool { return x != nil && x.rejoining.Load() }

// With sends this node's table to the node at addr now and merges its reply.
func (x *Exchange) With(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), ExchangeTimeout)
	defer cancel()
	changes := x.t.Changes()
	table, err := x.cfg.Send(ctx, addr, x.t.Table())
	x.mu.Lock()
	x.sent[addr] = sentTable{changes, time.Now(), err != nil}
	x.mu.Unlock()
	defer x.heard(addr) // after the merge: the peer's claims apply before this node serves
	if err != nil {
		return err
	}
	changed, err := x.t.Merge(table)
	if changed && x.cfg.Changed != nil {
		x.cfg.Changed()
	}
	return err
}

// heard ends a restarted node's wait for addr's table (Rejoining).
func (x *Exchange) heard(addr string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.unheard[addr] {
		delete(x.unheard, addr)
		if len(x.unheard) == 0 {
			x.rejoining.Store(false)
		}
	}
}

// loop sends the table to each peer that needs it, until Stop.
func (x *Exchange) loop() {
	tick := time.NewTicker(exchangeTick)
	defer tick.Stop()
	for {
		select {
		case <-x.stop:
			return
		case <-tick.C:
		}
		if x.cfg.Round != nil {
			x.cfg.Round()
		}
		changes := x.t.Changes()
		for _, addr := range x.t.Peers() {
			if x.due(addr, changes) {
				go x.send(addr)
			}
		}
	}
}

// due reports whether addr needs the table at change count changes, and if so marks
// an exchange with it under way.
func (x *Exchange) due(addr string, changes uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	last := x.sent[addr]
	due := time.Since(last.at) >= exchangeRefresh || last.changes != changes && !last.failed
	if x.busy[addr] || !due {
		return false
	}
	x.busy[addr] = true
	return true
}

// send exchanges tables with addr, which due marked busy.
func (x *Exchange) send(addr string) {
	if err := x.With(addr); err != nil {
		x.cfg.Logger.Debug("cluster table exchange failed", "peer", addr, "err", err)
	}
	x.mu.Lock()
	delete(x.busy, addr)
	x.mu.Unlock()
}
