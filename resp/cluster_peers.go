package resp

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// How -cluster-enabled nodes keep their tables in step without Redis's bus: each
// sends its table to every node it knows, over their client ports (CLUSTER
// RLTABLE), whenever its table changed since it last sent it there and at least
// every second, and merges the table it gets back (cluster/merge.go). MIGRATE's
// connections to other nodes are kept here too.

// Timing of the table exchange.
const (
	exchangeTick    = 100 * time.Millisecond // how soon a change goes out
	exchangeRefresh = time.Second            // how often an unchanged table goes out
	exchangeTimeout = 2 * time.Second        // one exchange, connection included
	// writableDelay bounds how long a restarted node waits for a peer's table before
	// it serves its slots, as Redis's CLUSTER_WRITABLE_DELAY.
	writableDelay = 2 * time.Second
)

// peerSet holds the connections to the other nodes and the exchange's state.
type peerSet struct {
	mu      sync.Mutex
	clients map[string]*redis.Client // by host:port (MIGRATE: and its AUTH)
	sent    map[string]sentTable     // by host:port: what was last sent, and when
	busy    map[string]bool          // by host:port: an exchange under way
	stop    chan struct{}            // closed by Close: ends exchangeLoop
	closed  bool                     // stopPeers ran: no new connection
	// rejoining is set while a node restarted with peers in its table has not yet
	// exchanged tables with each (unheard, by host:port, under mu), for at most
	// writableDelay: its slots answer CLUSTERDOWN, since a master failed over while
	// it was down would otherwise serve them, stale, until its promoted replica's
	// claim reaches it. Only that node's own table carries the claim.
	rejoining atomic.Bool
	unheard   map[string]bool
	// pendingMaster is -replicaof's host:port until the table holds its node
	// (cluster_replica.go); only exchangeLoop's goroutine uses it.
	pendingMaster string
}

// errPeersClosed is an exchange or MIGRATE after the server closed.
var errPeersClosed = errors.New("resp: server closed")

// sentTable is the last table sent to a peer: its change count and time, or the
// time of the last attempt, failed: a node down is tried once a second.
type sentTable struct {
	changes uint64
	at      time.Time
	failed  bool
}

// peerClient is a connection pool to the node at addr, made at first use, with the
// server's own password: the nodes of a cluster share one. Nil once the server
// has closed.
func (s *Server) peerClient(addr string) *redis.Client {
	return s.peers.client(addr, func() *redis.Options {
		return &redis.Options{Addr: addr, Password: s.tun.Load().requirePass, DialTimeout: exchangeTimeout,
			ReadTimeout: exchangeTimeout, WriteTimeout: exchangeTimeout}
	})
}

// client is the pool kept under key, made with opts (RESP2, no retries, 4
// connections) at first use; nil once the server has closed.
func (p *peerSet) client(key string, opts func() *redis.Options) *redis.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if p.clients == nil {
		p.clients = map[string]*redis.Client{}
	}
	rdb := p.clients[key]
	if rdb == nil {
		o := opts()
		o.Protocol, o.DisableIdentity, o.MaxRetries, o.PoolSize = 2, true, -1, 4
		rdb = redis.NewClient(o)
		p.clients[key] = rdb
	}
	return rdb
}

// exchange sends this node's table to the node at addr and merges its reply.
func (s *Server) exchange(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), exchangeTimeout)
	defer cancel()
	t := s.cfg.Cluster
	changes := t.Changes()
	rdb := s.peerClient(addr)
	if rdb == nil {
		return errPeersClosed
	}
	table, err := rdb.Do(ctx, "CLUSTER", "RLTABLE", t.Table()).Text()
	s.peers.mu.Lock()
	if s.peers.sent == nil {
		s.peers.sent = map[string]sentTable{}
	}
	s.peers.sent[addr] = sentTable{changes, time.Now(), err != nil}
	s.peers.mu.Unlock()
	defer s.heard(addr) // after the merge: the peer's claims apply before this node serves
	if err != nil {
		return err
	}
	changed, err := t.Merge(table)
	if changed {
		s.followMaster()
	}
	return err
}

// heard ends a restarted node's wait for addr's table (rejoining).
func (s *Server) heard(addr string) {
	s.peers.mu.Lock()
	defer s.peers.mu.Unlock()
	if s.peers.unheard[addr] {
		delete(s.peers.unheard, addr)
		if len(s.peers.unheard) == 0 {
			s.peers.rejoining.Store(false)
		}
	}
}

// exchangeLoop sends the table to each peer that needs it, until Close.
func (s *Server) exchangeLoop() {
	tick := time.NewTicker(exchangeTick)
	defer tick.Stop()
	for {
		select {
		case <-s.peers.stop:
			return
		case <-tick.C:
		}
		s.resolveReplicaOf()
		changes := s.cfg.Cluster.Changes()
		for _, addr := range s.cfg.Cluster.Peers() {
			s.peers.mu.Lock()
			last, busy := s.peers.sent[addr], s.peers.busy[addr]
			due := time.Since(last.at) >= exchangeRefresh || last.changes != changes && !last.failed
			if busy || !due {
				s.peers.mu.Unlock()
				continue
			}
			if s.peers.busy == nil {
				s.peers.busy = map[string]bool{}
			}
			s.peers.busy[addr] = true
			s.peers.mu.Unlock()
			go func() {
				if err := s.exchange(addr); err != nil {
					s.log.Debug("cluster table exchange failed", "peer", addr, "err", err)
				}
				s.peers.mu.Lock()
				delete(s.peers.busy, addr)
				s.peers.mu.Unlock()
			}()
		}
	}
}

// startPeers starts the exchange of a -cluster-enabled node.
func (s *Server) startPeers() {
	if s.cfg.Cluster == nil || s.cfg.Cluster.Static() {
		return
	}
	s.peers.stop = make(chan struct{})
	if peers := s.cfg.Cluster.Peers(); len(peers) > 0 {
		s.peers.unheard = map[string]bool{}
		for _, addr := range peers {
			s.peers.unheard[addr] = true
		}
		s.peers.rejoining.Store(true)
		time.AfterFunc(writableDelay, func() { s.peers.rejoining.Store(false) })
	}
	s.startReplica()
	go s.exchangeLoop()
}

// stopPeers ends the exchange and closes the connections to the peers.
func (s *Server) stopPeers() {
	if s.peers.stop != nil {
		close(s.peers.stop)
	}
	s.peers.mu.Lock()
	defer s.peers.mu.Unlock()
	for _, rdb := range s.peers.clients {
		rdb.Close()
	}
	s.peers.clients = nil
	s.peers.closed = true
}
