package resp

import (
	"net"
	"testing"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/core"
)

// twoNodes serves two cluster nodes splitting the slots in halves, and returns them
// with their addresses. Node 0 owns "bar" (5061) and "{bar}1"; node 1 "foo" (12182).
func twoNodes(t *testing.T) ([]*Server, []string) {
	t.Helper()
	lns := make([]net.Listener, 2)
	addrs := make([]string, 2)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	servers := make([]*Server, 2)
	for i := range servers {
		topo, err := cluster.New(addrs, i)
		if err != nil {
			t.Fatal(err)
		}
		servers[i] = serveOn(t, lns[i], Config{Cluster: topo})
		servers[i].core.SetClock(t0)
	}
	return servers, addrs
}

// TestMultiClusterAtomic: in cluster mode a command queued for a key of another
// node is refused when queued (MOVED), as one whose keys span slots (CROSSSLOT),
// and EXEC then answers EXECABORT with nothing applied: the token of the local key
// queued before is still there. A transaction whose commands each run here but on
// different slots is refused at EXEC with CROSSSLOT, as Redis Cluster does, again
// with nothing applied.
func TestMultiClusterAtomic(t *testing.T) {
	servers, addrs := twoNodes(t)
	ts := &testServer{Server: servers[0], addr: addrs[0]}
	moved := "MOVED 12182 " + addrs[1]
	for _, tc := range []struct {
		name    string
		refused string // the second command, refused when queued
		reply   string // its reply
	}{
		{"moved", "RL.TOKEN foo 1 60000", moved},
		{"crossslot", "RL.ALL TOKEN bar 1 60000 TOKEN foo 1 60000", errCrossSlot},
		{"arity", "RL.TOKEN foo", "ERR wrong number of arguments for 'rl.token' command"},
		{"unknown", "NOPE foo", "ERR unknown command 'NOPE', with args beginning with: 'foo' "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := ts.client(t, 2)
			run(t, rdb, []call{
				{"MULTI", "OK"},
				{"RL.TOKEN bar 1 60000", "QUEUED"},
				{tc.refused, tc.reply},
				{"RL.TOKEN {bar}1 1 60000", "QUEUED"},
				{"EXEC", errExecAbort},
				// Nothing was spent: the one token of each key is there.
				{"RL.TOKEN bar 1 60000 PEEK", "[1 1 0 0 60000]"},
				{"RL.TOKEN {bar}1 1 60000 PEEK", "[1 1 0 0 60000]"},
				{"EXISTS bar {bar}1", "0"},
			})
		})
	}
	rdb := ts.client(t, 2)
	run(t, rdb, []call{
		{"MULTI", "OK"},
		{"RL.TOKEN bar 1 60000", "QUEUED"},
		{"RL.TOKEN baz 1 60000", "QUEUED"}, // 4813: this node's too, another slot
		{"EXEC", errCrossSlot},
		{"EXEC", errExecNoMulti}, // the transaction was discarded
		{"EXISTS bar", "0"},
		{"EXISTS baz", "0"},
		// One slot: it runs.
		{"MULTI", "OK"},
		{"RL.TOKEN bar 1 60000", "QUEUED"},
		{"EXISTS bar", "QUEUED"},
		{"EXEC", "[[1 1 0 0 60000] 1]"},
	})
	// The other node refuses bar the same way.
	other := &testServer{Server: servers[1], addr: addrs[1]}
	run(t, other.client(t, 2), []call{
		{"MULTI", "OK"},
		{"RL.TOKEN foo 1 60000", "QUEUED"},
		{"RL.TOKEN bar 1 60000", "MOVED 5061 " + addrs[0]},
		{"EXEC", errExecAbort},
		{"EXISTS foo", "0"},
	})
}

// TestMultiReadOnlyReplica: on a replica a write queued in MULTI is refused at once
// (READONLY) and dooms the transaction; a PEEK, a read, is queued and runs. (Raw:
// go-redis drops a connection that answered READONLY.)
func TestMultiReadOnlyReplica(t *testing.T) {
	p := startServer(t, Config{})
	replica := startServer(t, Config{Config: core.Config{ReplicaOf: p.addr}})
	waitLinkUp(t, replica.client(t, 2)) // LOADING until the first sync, as Redis
	r := replica.raw(t)
	r.send("MULTI\r\nRL.TOKEN k 1 60000 PEEK\r\nRL.TOKEN k 1 60000\r\n" +
		"RL.ALL TOKEN k 1 60000 TOKEN j 1 60000\r\nDEL k\r\nEXEC\r\n")
	ro := "-" + errReadOnly + "\r\n"
	r.expect("+OK\r\n+QUEUED\r\n" + ro + ro + ro + "-" + errExecAbort + "\r\n")
	r.send("MULTI\r\nRL.TOKEN k 1 60000 PEEK\r\nEXISTS k\r\nEXEC\r\n")
	r.expect("+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n*5\r\n:1\r\n:1\r\n:0\r\n:0\r\n:60000\r\n:0\r\n")
}

// TestMultiQuit: QUIT inside MULTI is not queued: it answers OK and closes at once.
func TestMultiQuit(t *testing.T) {
	ts := startServer(t, Config{})
	r := ts.raw(t)
	r.send("MULTI\r\nQUIT\r\n")
	r.expect("+OK\r\n+OK\r\n")
	r.expectClosed()
}
