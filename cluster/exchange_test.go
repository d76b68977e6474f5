package cluster

import (
	"context"
	"errors"
	"testing"
)

// serve is the Send of an Exchange whose peers are the topologies by address: each
// merges the table it gets and answers its own, as CLUSTER RLTABLE does.
func serve(nodes map[string]*Topology) func(context.Context, string, string) (string, error) {
	return func(_ context.Context, addr, table string) (string, error) {
		peer := nodes[addr]
		if peer == nil {
			return "", errors.New("connection refused")
		}
		if _, err := peer.Merge(table); err != nil {
			return "", err
		}
		return peer.Table(), nil
	}
}

// TestExchangeWith: an exchange with a node makes each table hold the other node,
// calls Changed once this node's table changed, and ends a restarted node's wait
// (Rejoining) once every peer's table came back.
func TestExchangeWith(t *testing.T) {
	a, b := open(t, 7000), open(t, 7001)
	nodes := map[string]*Topology{b.Self().Addr(): b}
	changed := 0
	x := NewExchange(a, ExchangeConfig{Send: serve(nodes), Changed: func() { changed++ }})
	if err := x.With(b.Self().Addr()); err != nil {
		t.Fatal(err)
	}
	if len(a.Nodes()) != 2 || len(b.Nodes()) != 2 || changed != 1 {
		t.Fatalf("after an exchange: %d and %d nodes, Changed called %d times; want 2, 2, 1", len(a.Nodes()), len(b.Nodes()), changed)
	}
	if err := x.With("127.0.0.1:1"); err == nil {
		t.Error("an exchange with no node: no error")
	}

	// a restarts: it waits for b's table.
	x = NewExchange(a, ExchangeConfig{Send: serve(nodes)})
	x.Start()
	defer x.Stop()
	if !x.Rejoining() {
		t.Error("a restarted node with a peer is not Rejoining")
	}
	if err := x.With(b.Self().Addr()); err != nil {
		t.Fatal(err)
	}
	if x.Rejoining() {
		t.Error("Rejoining after every peer's table came back")
	}
	if (*Exchange)(nil).Rejoining() {
		t.Error("a nil Exchange is Rejoining")
	}
}
