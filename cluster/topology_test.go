package cluster

import (
	"fmt"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	cases := []struct {
		name   string
		addrs  string // comma-separated
		self   int
		err    string // a part of the error; empty: valid
		ranges string // each node's First-Last, space-separated, when valid
	}{
		{"one node", "127.0.0.1:7000", 0, "", "0-16383"},
		{"three even", "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002", 2, "", "0-5460 5461-10921 10922-16383"},
		{"two even", "a:1,b:2", 1, "", "0-8191 8192-16383"},
		{"explicit", "a:1@10923-16383,b:2@0-5460,c:3@5461-10922", 0, "", "10923-16383 0-5460 5461-10922"},
		{"ipv6", "[::1]:7000,[::1]:7001", 0, "", "0-8191 8192-16383"},
		{"no nodes", "", 0, "no nodes", ""},
		{"self negative", "a:1,b:2", -1, "self is -1, must be this node's index in the list of 2 nodes, 0 to 1", ""},
		{"self too big", "a:1,b:2", 2, "self is 2", ""},
		{"no port", "a:1,b", 0, `node "b": the address must be host:port`, ""},
		{"no host", "a:1,:2", 0, `node ":2": the address must be host:port`, ""},
		{"bad port", "a:1,b:x", 0, `node "b:x": the port must be a number from 1 to 65535`, ""},
		{"port 0", "a:0", 0, "the port must be", ""},
		{"port too big", "a:65536", 0, "the port must be", ""},
		{"twice", "a:1,b:2,a:1", 0, "node a:1 is listed twice", ""},
		{"twice with ranges", "a:1@0-100,a:1@101-16383", 0, "node a:1 is listed twice", ""},
		{"some ranges", "a:1@0-8191,b:2", 0, "1 of 2 nodes have a slot range", ""},
		{"bad range", "a:1@0-x", 0, `node "a:1@0-x": the slots must be first-last`, ""},
		{"reversed range", "a:1@9-8", 0, "the slots must be first-last", ""},
		{"range past the end", "a:1@0-16384", 0, "the slots must be first-last", ""},
		{"one number", "a:1@5", 0, "the slots must be first-last", ""},
		{"gap", "a:1@0-100,b:2@200-16383", 0, "slots 101-199 belong to no node", ""},
		{"gap at the start", "a:1@1-16383", 0, "slots 0-0 belong to no node", ""},
		{"gap at the end", "a:1@0-100,b:2@101-16000", 1, "slots 16001-16383 belong to no node", ""},
		{"overlap", "a:1@0-100,b:2@50-16383", 0, "nodes a:1 and b:2 both claim slots 50-100", ""},
		{"inside", "a:1@0-16383,b:2@50-60", 0, "nodes a:1 and b:2 both claim slots 50-60", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var addrs []string
			if tc.addrs != "" {
				addrs = strings.Split(tc.addrs, ",")
			}
			topo, err := New(addrs, tc.self)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("New(%q, %d): err %v, want one containing %q", tc.addrs, tc.self, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q, %d): %v", tc.addrs, tc.self, err)
			}
			var got []string
			for _, n := range topo.Nodes() {
				for _, r := range topo.Ranges(n.ID) {
					got = append(got, fmt.Sprintf("%d-%d", r.First, r.Last))
				}
			}
			if strings.Join(got, " ") != tc.ranges {
				t.Errorf("ranges %q, want %q", strings.Join(got, " "), tc.ranges)
			}
		})
	}
}

// TestOwner walks every slot of an explicit topology: exactly one node owns it,
// Owner names that node from every node's point of view, and Owns agrees.
func TestOwner(t *testing.T) {
	addrs := []string{"10.0.0.1:6380@8000-16383", "10.0.0.2:6380@0-99", "10.0.0.3:6380@100-7999"}
	topos := make([]*Topology, len(addrs))
	for i := range addrs {
		var err error
		if topos[i], err = New(addrs, i); err != nil {
			t.Fatal(err)
		}
	}
	want := func(slot uint16) int {
		switch {
		case slot < 100:
			return 1
		case slot < 8000:
			return 2
		}
		return 0
	}
	for slot := uint16(0); slot < Slots; slot++ {
		owner := want(slot)
		for i, topo := range topos {
			if got, _ := topo.Owner(slot); got != topo.Nodes()[owner] {
				t.Fatalf("node %d: Owner(%d) = %+v, want node %d", i, slot, got, owner)
			}
			if got := topo.Owns(slot); got != (i == owner) {
				t.Fatalf("node %d: Owns(%d) = %v, want %v", i, slot, got, i == owner)
			}
		}
	}
}

// TestNodeID: ids are SHA-1 of host:port in hex, the same on every node, and
// Self is the node at the index given.
func TestNodeID(t *testing.T) {
	a, err := New([]string{"127.0.0.1:7000", "127.0.0.1:7001"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New([]string{"127.0.0.1:7000", "127.0.0.1:7001"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// printf 127.0.0.1:7001 | sha1sum
	const id7001 = "73e424d53fc3edc27f2c55eb2808f7bdd833f129"
	cases := []struct {
		what, got, want string
	}{
		{"a's self", a.Self().Addr(), "127.0.0.1:7000"},
		{"b's self", b.Self().Addr(), "127.0.0.1:7001"},
		{"b's id on a", a.Nodes()[1].ID, id7001},
		{"b's id on b", b.Self().ID, id7001},
		{"a's id on b", b.Nodes()[0].ID, a.Self().ID},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.what, tc.got, tc.want)
		}
	}
}
