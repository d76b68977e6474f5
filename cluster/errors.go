package cluster

import "errors"

// Errors of the topology's changes and merges.
var (
	// ErrStatic refuses a change to a -cluster-nodes topology, which every node
	// derives alone from its flags: a change on one would not reach the others.
	ErrStatic = errors.New("the topology is static (-cluster-nodes): start the nodes with -cluster-enabled to change it")
	// ErrNotCluster is a table that is none: the peer is not a cluster node.
	ErrNotCluster = errors.New("cluster: the peer sent no table")
)
