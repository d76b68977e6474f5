package cluster

import (
	"strings"
	"testing"
)

// shard is a master a owning every slot at epoch 1, its replica r, and a third node
// o, each having heard the others.
func shard(t *testing.T) (a, r, o *Topology) {
	t.Helper()
	a, r, o = open(t, 7000), open(t, 7001), open(t, 7002)
	if err := a.SetConfigEpoch(1); err != nil {
		t.Fatal(err)
	}
	if err := a.AssignSlots([]Range{{0, Slots - 1}}, false); err != nil {
		t.Fatal(err)
	}
	exchange(t, a, r)
	exchange(t, a, o)
	if _, err := r.Replicate(a.Self().ID, 0); err != nil {
		t.Fatal(err)
	}
	exchange(t, r, a)
	exchange(t, r, o)
	return a, r, o
}

// lineOf is id's line in top's CLUSTER NODES.
func lineOf(top *Topology, id string) string {
	for _, l := range strings.Split(top.Describe(), "\n") {
		if strings.HasPrefix(l, id) {
			return l
		}
	}
	return ""
}

// TestReplicaLines: a replica's line says "slave" and its master's id, with its
// master's epoch (Redis's nodeEpoch) and no slot, on every node and in nodes.conf;
// CLUSTER SHARDS's groups put it after its master.
func TestReplicaLines(t *testing.T) {
	a, r, o := shard(t)
	aID, rID := a.Self().ID, r.Self().ID
	want := rID + " 127.0.0.1:7001@0 slave " + aID + " 0 0 1 connected"
	for _, top := range []*Topology{a, o} {
		if got := lineOf(top, rID); got != want {
			t.Fatalf("%d sees the replica as %q, want %q", top.Self().Port, got, want)
		}
	}
	if got := lineOf(r, rID); got != strings.Replace(want, "slave", "myself,slave", 1) {
		t.Fatalf("the replica's own line %q", got)
	}
	if m, ok := r.Master(); !ok || m.ID != aID {
		t.Fatalf("Master %v %v", m, ok)
	}
	if err := r.Save(); err != nil { // changes reach nodes.conf in the background
		t.Fatal(err)
	}
	again, err := Open(r.path, "127.0.0.1", 7001)
	if err != nil {
		t.Fatal(err)
	}
	if again.Describe() != r.Describe() {
		t.Fatalf("reopened:\n%s\nwant\n%s", again.Describe(), r.Describe())
	}
	shards := o.Shards() // o's own first, a master of no slot
	if len(shards) != 2 || len(shards[1]) != 2 || shards[1][0].ID != aID || shards[1][1].ID != rID {
		t.Fatalf("shards %v", shards)
	}
	if n, _ := o.Owner(5); n.ID != aID {
		t.Fatalf("slot 5 is %v's, want the master's", n)
	}
	if lines, err := o.DescribeReplicas(aID); err != nil || len(lines) != 1 || lines[0] != want {
		t.Fatalf("REPLICAS of the master: %q %v", lines, err)
	}
	if _, err := o.DescribeReplicas(rID); err == nil || err.Error() != "The specified node is not a master" {
		t.Fatalf("REPLICAS of the replica: %v", err)
	}
}

// TestReplicateChecks: CLUSTER REPLICATE's preconditions, in Redis's order and
// words; a refusal changes nothing.
func TestReplicateChecks(t *testing.T) {
	a, r, o := shard(t)
	before := o.Describe()
	for _, c := range []struct {
		id   string
		keys int
		want string
	}{
		{strings.Repeat("f", 40), 0, "Unknown node " + strings.Repeat("f", 40)},
		{o.Self().ID, 0, "Can't replicate myself"},
		{r.Self().ID, 0, "I can only replicate a master, not a replica."},
		{a.Self().ID, 3, "To set a master the node must be empty and without assigned slots."},
	} {
		if _, err := o.Replicate(c.id, c.keys); err == nil || err.Error() != c.want {
			t.Errorf("REPLICATE %s: %v, want %q", c.id[:8], err, c.want)
		}
	}
	if _, err := a.Replicate(o.Self().ID, 0); err == nil || !strings.HasPrefix(err.Error(), "To set a master") {
		t.Errorf("a master with slots: %v", err)
	}
	if o.Describe() != before {
		t.Fatalf("a refused REPLICATE changed the table:\n%s", o.Describe())
	}
	if err := r.Forget(a.Self().ID); err == nil || err.Error() != "Can't forget my master!" {
		t.Errorf("FORGET of the master: %v", err)
	}
}

// TestPromote: the replica promoted takes its master's slots with a new, highest
// epoch; the third node follows it; the old master, hearing it, gives up its slots
// and becomes its replica, as does REPLICAOF sent by Sentinel.
func TestPromote(t *testing.T) {
	a, r, o := shard(t)
	if ok, err := r.Promote(); !ok || err != nil {
		t.Fatalf("Promote %v %v", ok, err)
	}
	if in := r.Info(); in.MyEpoch != 2 || in.Current != 2 {
		t.Fatalf("promoted: %+v, want epoch 2", in)
	}
	if _, ok := r.Master(); ok || !r.Owns(0) || !r.Owns(Slots-1) {
		t.Fatal("the promoted replica owns not the slots")
	}
	exchange(t, r, o)
	if n, _ := o.Owner(100); n.ID != r.Self().ID {
		t.Fatalf("the third node gives slot 100 to %v", n)
	}
	// The old master, back, still claims its slots at epoch 1 until it hears r.
	exchange(t, a, o)
	if n, _ := o.Owner(100); n.ID != r.Self().ID {
		t.Fatal("the old master's lower epoch won")
	}
	exchange(t, r, a)
	if m, ok := a.Master(); !ok || m.ID != r.Self().ID || a.Owns(100) {
		t.Fatalf("the old master: master %v %v, owns 100 %v", m, ok, a.Owns(100))
	}
	exchange(t, a, o)
	if got := lineOf(o, a.Self().ID); !strings.Contains(got, " slave "+r.Self().ID+" ") {
		t.Fatalf("the third node sees the old master as %q", got)
	}
	if ok, _ := r.Promote(); ok {
		t.Fatal("a master promoted again")
	}
}

// TestFollow: REPLICAOF host port makes a node the replica of the table's node
// there, dropping its slots; an unknown address is reported.
func TestFollow(t *testing.T) {
	a, r, o := shard(t)
	if _, known, _ := o.Follow("127.0.0.1:1"); known {
		t.Fatal("an unknown address is known")
	}
	if _, _, err := a.Follow(a.Self().Addr()); err == nil || err.Error() != "Can't replicate myself" {
		t.Fatalf("Follow itself: %v", err)
	}
	if _, err := r.Promote(); err != nil {
		t.Fatal(err)
	}
	// Sentinel tells the old master before the tables do.
	m, known, err := a.Follow(r.Self().Addr())
	if err != nil || !known || m.ID != r.Self().ID {
		t.Fatalf("Follow: %v %v %v", m, known, err)
	}
	if a.Owns(0) || !strings.Contains(lineOf(a, a.Self().ID), "myself,slave "+r.Self().ID) {
		t.Fatalf("the old master:\n%s", a.Describe())
	}
	exchange(t, r, o)
	exchange(t, a, o)
	if n, _ := o.Owner(0); n.ID != r.Self().ID {
		t.Fatalf("slot 0 is %v's", n)
	}
}

// TestCurrentEpochSpreads: a replica's own epoch is not on its line (its master's
// is), but the tables carry the current epoch, so that a node promoted anywhere
// takes an epoch above every node's.
func TestCurrentEpochSpreads(t *testing.T) {
	a, r, o := open(t, 7000), open(t, 7001), open(t, 7002)
	for i, top := range []*Topology{a, r, o} {
		if err := top.SetConfigEpoch(int64([]int{1, 7, 2}[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.AssignSlots([]Range{{0, Slots - 1}}, false); err != nil {
		t.Fatal(err)
	}
	exchange(t, a, r)
	if _, err := r.Replicate(a.Self().ID, 0); err != nil {
		t.Fatal(err)
	}
	exchange(t, r, a)
	exchange(t, a, o)
	if !strings.Contains(lineOf(o, r.Self().ID), " 1 connected") {
		t.Fatalf("the replica's line %q, want its master's epoch 1", lineOf(o, r.Self().ID))
	}
	if in := o.Info(); in.Current != 7 {
		t.Fatalf("the third node's current epoch %d, want the replica's 7", in.Current)
	}
}

// TestFollowHandsOver: a master told to replicate a master without slots (Sentinel
// naming the other of two replicas promoted at once) hands it its slots, which it
// takes with a new, highest epoch; a third node follows.
func TestFollowHandsOver(t *testing.T) {
	a, r, o := shard(t)
	if _, err := r.Promote(); err != nil { // r takes a's slots at epoch 2
		t.Fatal(err)
	}
	exchange(t, r, o)
	b := open(t, 7003) // a master of no slot
	exchange(t, b, o)
	exchange(t, b, r)
	if _, _, err := r.Follow(b.Self().Addr()); err != nil {
		t.Fatal(err)
	}
	if n, _ := r.Owner(0); n.ID != b.Self().ID {
		t.Fatalf("r hands slot 0 to %v", n)
	}
	exchange(t, r, b)
	if !b.Owns(0) || !b.Owns(Slots-1) || b.Info().MyEpoch <= 2 {
		t.Fatalf("b owns 0 %v, epoch %d", b.Owns(0), b.Info().MyEpoch)
	}
	exchange(t, b, o)
	exchange(t, a, o)
	if n, _ := o.Owner(100); n.ID != b.Self().ID {
		t.Fatalf("the third node gives slot 100 to %v", n)
	}
}
