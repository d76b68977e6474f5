package resp

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/cluster"
)

// A -cluster-enabled node keeps its table in step with its peers' by a
// cluster.Exchange, which sends it over their client ports as CLUSTER RLTABLE; this
// file is its RESP side, and keeps the connections to other nodes, MIGRATE's too.

// peerSet holds the connections to the other nodes and the table exchange.
type peerSet struct {
	mu      sync.Mutex
	clients map[string]*redis.Client // by host:port (MIGRATE: and its AUTH)
	closed  bool                     // stopPeers ran: no new connection
	// exchange keeps the table in step; nil for a static (-cluster-nodes) topology
	// or none.
	exchange *cluster.Exchange
	// pendingMaster is -replicaof's host:port until the table holds its node
	// (cluster_replica.go); only the exchange's goroutine uses it.
	pendingMaster string
}

// errPeersClosed is an exchange or MIGRATE after the server closed.
var errPeersClosed = errors.New("resp: server closed")

// newExchange sets up a -cluster-enabled node's table exchange.
func (s *Server) newExchange() {
	if s.cfg.Cluster == nil || s.cfg.Cluster.Static() {
		return
	}
	s.peers.exchange = cluster.NewExchange(s.cfg.Cluster, cluster.ExchangeConfig{
		Send: s.sendTable, Changed: s.followMaster, Round: s.resolveReplicaOf, Logger: s.log})
}

// sendTable is CLUSTER RLTABLE table on the node at addr: that node's table.
func (s *Server) sendTable(ctx context.Context, addr, table string) (string, error) {
	rdb := s.peerClient(addr)
	if rdb == nil {
		return "", errPeersClosed
	}
	return rdb.Do(ctx, "CLUSTER", "RLTABLE", table).Text()
}

// exchange sends this node's table to the node at addr and merges its reply.
func (s *Server) exchange(addr string) error {
	if s.peers.exchange == nil {
		return cluster.ErrStatic
	}
	return s.peers.exchange.With(addr)
}

// peerClient is a connection pool to the node at addr, made at first use, with the
// server's own password: the nodes of a cluster share one. Nil once the server
// has closed.
func (s *Server) peerClient(addr string) *redis.Client {
	return s.peers.client(addr, func() *redis.Options {
		return &redis.Options{Addr: addr, Password: s.tun.Load().requirePass, DialTimeout: cluster.ExchangeTimeout,
			ReadTimeout: cluster.ExchangeTimeout, WriteTimeout: cluster.ExchangeTimeout}
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

// startPeers starts the replication and the exchange of a -cluster-enabled node.
func (s *Server) startPeers() {
	if s.peers.exchange == nil {
		return
	}
	s.startReplica()
	s.peers.exchange.Start()
}

// stopPeers ends the exchange and closes the connections to the peers.
func (s *Server) stopPeers() {
	if s.peers.exchange != nil {
		s.peers.exchange.Stop()
	}
	s.peers.mu.Lock()
	defer s.peers.mu.Unlock()
	for _, rdb := range s.peers.clients {
		rdb.Close()
	}
	s.peers.clients = nil
	s.peers.closed = true
}
