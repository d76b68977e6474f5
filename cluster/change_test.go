package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// open is a -cluster-enabled topology in a file of t's own.
func open(t *testing.T, port int) *Topology {
	t.Helper()
	top, err := Open(filepath.Join(t.TempDir(), "nodes.conf"), "127.0.0.1", port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { top.Save() }) // before the directory goes: no write under way
	return top
}

// exchange merges each table into the other, as two nodes' exchange does.
func exchange(t *testing.T, a, b *Topology) {
	t.Helper()
	if _, err := a.Merge(b.Table()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Merge(a.Table()); err != nil {
		t.Fatal(err)
	}
}

// owner is slot's owner's port on top, 0 for none.
func owner(top *Topology, slot uint16) int {
	n, ok := top.Owner(slot)
	if !ok {
		return 0
	}
	return n.Port
}

// TestOpenKeepsTable: a node's table, slots being moved and epochs included, comes
// back from its config file as it was described.
func TestOpenKeepsTable(t *testing.T) {
	a, b := open(t, 7000), open(t, 7001)
	if err := a.SetConfigEpoch(3); err != nil {
		t.Fatal(err)
	}
	if err := a.AssignSlots([]Range{{0, 99}, {200, 200}}, false); err != nil {
		t.Fatal(err)
	}
	exchange(t, a, b)
	if err := a.SetMigrating(5, b.Self().ID); err != nil {
		t.Fatal(err)
	}
	if err := a.SetImporting(300, b.Self().ID); err != nil {
		t.Fatal(err)
	}
	want := a.Describe()
	if !strings.Contains(want, "[5->-"+b.Self().ID+"]") || !strings.Contains(want, "[300-<-"+b.Self().ID+"]") ||
		!strings.Contains(want, " 3 connected 0-99 200") {
		t.Fatalf("table:\n%s", want)
	}
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(a.path, "127.0.0.1", 7000)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Describe(); got != want {
		t.Fatalf("reopened:\n%s\nwant\n%s", got, want)
	}
	if in := again.Info(); in.Current != 3 || in.MyEpoch != 3 || in.Assigned != 101 || in.Known != 2 {
		t.Fatalf("reopened info %+v", in)
	}
}

// TestMoveSlot moves a slot as redis-cli does and a third node that hears the
// two in either order ends with the new owner: by the new owner's bumped epoch, or
// because the old owner no longer claims the slot, whatever its epoch.
func TestMoveSlot(t *testing.T) {
	a, b, c := open(t, 7000), open(t, 7001), open(t, 7002)
	for i, top := range []*Topology{a, b, c} {
		if err := top.SetConfigEpoch(int64(10 - i)); err != nil { // a's epoch the highest
			t.Fatal(err)
		}
	}
	if err := a.AssignSlots([]Range{{0, 99}}, false); err != nil {
		t.Fatal(err)
	}
	exchange(t, a, b)
	exchange(t, a, c)
	exchange(t, b, c)
	if owner(c, 5) != 7000 {
		t.Fatalf("c: slot 5 owned by %d, want 7000", owner(c, 5))
	}
	if err := a.SetNode(5, b.Self().ID, 1); err == nil || err.Error() !=
		"Can't assign hashslot 5 to a different node while I still hold keys for this hash slot." {
		t.Fatalf("SetNode with a key left: %v", err)
	}
	if err := a.SetMigrating(7, b.Self().ID); err != nil {
		t.Fatal(err)
	}
	if err := b.SetMigrating(7, a.Self().ID); err == nil || err.Error() != "I'm not the owner of hash slot 7" {
		t.Fatalf("MIGRATING of another's slot: %v", err)
	}
	// Without importing, b takes slot 5 at its own, lower epoch: a gives it away.
	if err := b.SetNode(5, b.Self().ID, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.SetNode(5, b.Self().ID, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Merge(b.Describe()); err != nil { // b's claim first: a's epoch is higher
		t.Fatal(err)
	}
	if owner(c, 5) != 7000 {
		t.Fatalf("c: slot 5 owned by %d before a gave it up, want 7000", owner(c, 5))
	}
	if _, err := c.Merge(a.Describe()); err != nil { // a no longer claims it
		t.Fatal(err)
	}
	if _, err := c.Merge(b.Describe()); err != nil {
		t.Fatal(err)
	}
	if owner(c, 5) != 7001 {
		t.Fatalf("c: slot 5 owned by %d, want 7001", owner(c, 5))
	}
	// Importing, b bumps its epoch above every other: its claim wins at once.
	if err := b.SetImporting(6, a.Self().ID); err != nil {
		t.Fatal(err)
	}
	if err := b.SetNode(6, b.Self().ID, 0); err != nil {
		t.Fatal(err)
	}
	if in := b.Info(); in.MyEpoch != 11 {
		t.Fatalf("b's epoch %d after importing, want 11", in.MyEpoch)
	}
	if _, err := c.Merge(b.Describe()); err != nil {
		t.Fatal(err)
	}
	if owner(c, 6) != 7001 {
		t.Fatalf("c: slot 6 owned by %d, want 7001", owner(c, 6))
	}
}

// TestBadChanges: refused changes say Redis's words and change nothing.
func TestBadChanges(t *testing.T) {
	a, b := open(t, 7000), open(t, 7001)
	if err := a.AssignSlots([]Range{{0, 9}}, false); err != nil {
		t.Fatal(err)
	}
	exchange(t, a, b)
	before := a.Describe()
	a.Save()
	conf, _ := os.ReadFile(a.path)
	cases := []struct {
		err  error
		want string
	}{
		{a.AssignSlots([]Range{{10, 10}, {5, 5}}, false), "Slot 5 is already busy"},
		{a.AssignSlots([]Range{{9, 11}}, true), "Slot 10 is already unassigned"},
		{a.AssignSlots([]Range{{20, 21}, {21, 21}}, false), "Slot 21 specified multiple times"},
		{a.SetImporting(3, b.Self().ID), "I'm already the owner of hash slot 3"},
		{a.SetMigrating(3, "nobody"), "I don't know about node nobody"},
		{a.SetNode(3, "nobody", 0), "Unknown node nobody"},
		{a.Forget("nobody"), "Unknown node nobody"},
		{a.Forget(a.Self().ID), "I tried hard but I can't forget myself..."},
		{a.SetConfigEpoch(4), "The user can assign a config epoch only when the node does not know any other node."},
	}
	for _, tc := range cases {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("got %v, want %q", tc.err, tc.want)
		}
	}
	a.Save()
	if got, _ := os.ReadFile(a.path); a.Describe() != before || string(got) != string(conf) {
		t.Fatalf("refused changes changed the table:\n%s\nwas\n%s", a.Describe(), before)
	}
	if _, err := a.Merge("-ERR unknown command"); err == nil {
		t.Fatal("a table of nothing merged")
	}
}

// TestForgetStays: a forgotten node is not brought back by a peer's table.
func TestForgetStays(t *testing.T) {
	a, b, c := open(t, 7000), open(t, 7001), open(t, 7002)
	exchange(t, a, b)
	exchange(t, b, c)
	exchange(t, a, b)
	if in := a.Info(); in.Known != 3 {
		t.Fatalf("a knows %d nodes, want 3", in.Known)
	}
	if err := a.Forget(c.Self().ID); err != nil {
		t.Fatal(err)
	}
	exchange(t, a, b)
	if _, err := a.Merge(c.Describe()); err != nil {
		t.Fatal(err)
	}
	if in := a.Info(); in.Known != 2 {
		t.Fatalf("a knows %d nodes after FORGET, want 2", in.Known)
	}
}
