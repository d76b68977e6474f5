package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/rlserver/rlserver/algo"
)

// leaseCall is one call on a lease key: at µs after t0, RL.ACQUIRE (id may be "" for a
// generated one), RL.RELEASE or RL.RENEW, and what must follow: the answer ("1"/"0",
// or ACQUIRE's "acquired remaining retry_after"), and the key's TTL in µs (-1: absent).
type leaseCall struct {
	at      int64
	op, id  string
	limit   int64
	leaseMs int64
	want    string
	wantTTL int64
}

// runLeaseCalls plays calls on key "job" of a new store with one shard, and returns
// the store and the ids acquired.
func runLeaseCalls(t *testing.T, calls []leaseCall) *Store {
	t.Helper()
	s := newStore(t, Config{Shards: 1})
	key := []byte("job")
	for i, c := range calls {
		now := t0 + c.at
		var got string
		var err error
		switch c.op {
		case "acquire":
			r := algo.LeaseRequest{Limit: c.limit, Duration: c.leaseMs * ms}
			if c.id != "" {
				r.ID = []byte(c.id)
			}
			var d algo.LeaseDecision
			d, err = s.Acquire(key, r, now)
			got = fmt.Sprint(b2i(d.Acquired), " ", d.Remaining, " ", algo.Millis(d.RetryAfter))
			if d.Acquired && c.id != "" && string(d.ID) != c.id {
				t.Errorf("call %d: id %q, want %q", i, d.ID, c.id)
			}
		case "release":
			var ok bool
			ok, err = s.Release(key, []byte(c.id), now)
			got = fmt.Sprint(b2i(ok))
		case "renew":
			var ok bool
			ok, err = s.Renew(key, []byte(c.id), c.leaseMs*ms, now)
			got = fmt.Sprint(b2i(ok))
		}
		if err != nil || got != c.want {
			t.Errorf("call %d: %s %q at +%d = %q, %v; want %q", i, c.op, c.id, c.at, got, err, c.want)
		}
		ttl, ok := s.TTL(key, now)
		if !ok {
			ttl = -1
		}
		if ttl != c.wantTTL {
			t.Errorf("call %d: TTL %d, want %d", i, ttl, c.wantTTL)
		}
		if kind, ok := s.Type(key, now); ok && kind != algo.KindLease {
			t.Errorf("call %d: type %v", i, kind)
		}
	}
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestLeases(t *testing.T) {
	tests := []struct {
		name  string
		calls []leaseCall
	}{
		{"limit, retry_after, the key's TTL is the last lease's", []leaseCall{
			{at: 0, op: "acquire", limit: 2, leaseMs: 1000, want: "1 1 0", wantTTL: 1000 * ms},
			{at: 100 * ms, op: "acquire", limit: 2, leaseMs: 500, want: "1 0 0", wantTTL: 900 * ms},
			{at: 200 * ms, op: "acquire", limit: 2, leaseMs: 1000, want: "0 0 400", wantTTL: 800 * ms},
			{at: 600 * ms, op: "acquire", limit: 2, leaseMs: 1000, id: "x", want: "1 0 0", wantTTL: 1000 * ms},
		}},
		{"release of the last lease removes the key", []leaseCall{
			{at: 0, op: "acquire", id: "a", limit: 3, leaseMs: 1000, want: "1 2 0", wantTTL: 1000 * ms},
			{at: 0, op: "acquire", id: "b", limit: 3, leaseMs: 2000, want: "1 1 0", wantTTL: 2000 * ms},
			{at: 10 * ms, op: "release", id: "b", want: "1", wantTTL: 990 * ms},
			{at: 10 * ms, op: "release", id: "b", want: "0", wantTTL: 990 * ms},
			{at: 10 * ms, op: "release", id: "unknown", want: "0", wantTTL: 990 * ms},
			{at: 20 * ms, op: "release", id: "a", want: "1", wantTTL: -1},
			{at: 20 * ms, op: "release", id: "a", want: "0", wantTTL: -1},
			{at: 20 * ms, op: "renew", id: "a", leaseMs: 1000, want: "0", wantTTL: -1},
		}},
		{"renew extends, an idempotent acquire too; an ended lease is not revived", []leaseCall{
			{at: 0, op: "acquire", id: "a", limit: 1, leaseMs: 1000, want: "1 0 0", wantTTL: 1000 * ms},
			{at: 900 * ms, op: "renew", id: "a", leaseMs: 1000, want: "1", wantTTL: 1000 * ms},
			{at: 1500 * ms, op: "acquire", id: "a", limit: 1, leaseMs: 2000, want: "1 0 0", wantTTL: 2000 * ms},
			{at: 1500 * ms, op: "acquire", id: "b", limit: 1, leaseMs: 2000, want: "0 0 2000", wantTTL: 2000 * ms},
			{at: 3500 * ms, op: "renew", id: "a", leaseMs: 1000, want: "0", wantTTL: -1},
			{at: 3500 * ms, op: "acquire", id: "b", limit: 1, leaseMs: 10, want: "1 0 0", wantTTL: 10 * ms},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runLeaseCalls(t, tt.calls) })
	}
}

// TestLeaseCrash: a holder that dies never releases; its leases end at their deadline
// through the wheel, the key vanishes with the last one, and its memory comes back.
func TestLeaseCrash(t *testing.T) {
	s := newStore(t, Config{Shards: 1})
	for i := range 50 {
		key := []byte(fmt.Sprint("worker-pool-", i))
		for j := range 3 {
			if d, err := s.Acquire(key, algo.LeaseRequest{Limit: 3, Duration: int64(1000+j) * ms}, t0+int64(j)*ms); err != nil || !d.Acquired {
				t.Fatalf("acquire: %+v, %v", d, err)
			}
		}
	}
	if d, _ := s.Acquire([]byte("worker-pool-0"), algo.LeaseRequest{Limit: 3, Duration: sec}, t0+500*ms); d.Acquired || algo.Millis(d.RetryAfter) != 500 {
		t.Fatalf("a full set: %+v, want refused for 500 ms", d)
	}
	full := s.Stats().Bytes
	if n := s.Expire(t0 + 1001*ms); n != 0 || s.Stats().Keys != 50 {
		t.Fatalf("before the last deadline: %d expired, %d keys", n, s.Stats().Keys)
	}
	if n := s.Expire(t0 + 1004*ms); n != 50 {
		t.Fatalf("Expire at the last deadline removed %d keys, want 50", n)
	}
	st := s.Stats()
	if st.Keys != 0 || st.Expired != 50 {
		t.Fatalf("after the deadlines: %+v", st)
	}
	// The chunks' pages went back; the slab, index and wheel keep their size.
	for c, cl := range s.shards[0].chunks.classes {
		if len(cl.pages) != 0 {
			t.Errorf("class %d keeps %d pages with no key", c, len(cl.pages))
		}
	}
	if st.Bytes >= full {
		t.Errorf("the store holds %d bytes with no key, %d with them", st.Bytes, full)
	}
	if d, err := s.Acquire([]byte("worker-pool-0"), algo.LeaseRequest{Limit: 3, Duration: sec}, t0+1004*ms); err != nil || d.Remaining != 2 {
		t.Fatalf("after the crash: %+v, %v; want a free set", d, err)
	}
}

func TestLeaseIDs(t *testing.T) {
	s := newStore(t, Config{})
	hex16 := regexp.MustCompile(`^[0-9a-f]{16}$`)
	seen := map[string]bool{}
	var first []byte
	for i := range 100 {
		key := []byte(fmt.Sprint("k", i%3))
		d, err := s.Acquire(key, algo.LeaseRequest{Limit: 100, Duration: sec}, t0)
		if err != nil || !d.Acquired || !hex16.Match(d.ID) || seen[string(d.ID)] {
			t.Fatalf("acquire %d: %+v, %v: want a new 16-hex-digit id", i, d, err)
		}
		seen[string(d.ID)] = true
		if i == 0 {
			first = d.ID
		}
	}
	// The returned id is the caller's: changing it changes nothing stored.
	id := bytes.Clone(first)
	first[0] ^= 1
	if ok, err := s.Release([]byte("k0"), id, t0); !ok || err != nil {
		t.Fatalf("release of the first id: %v, %v", ok, err)
	}
	// A generated id a caller already took for the key is skipped.
	seq := uint64(0x41)
	s.leaseID = func() uint64 { seq++; return seq }
	if _, err := s.Acquire([]byte("k1"), algo.LeaseRequest{Limit: 100, Duration: sec, ID: []byte("0000000000000042")}, t0); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Acquire([]byte("k1"), algo.LeaseRequest{Limit: 100, Duration: sec}, t0); string(d.ID) != "0000000000000043" {
		t.Errorf("generated %q, want the taken 0000000000000042 skipped", d.ID)
	}
}

func TestLeaseWrongType(t *testing.T) {
	s := newStore(t, Config{})
	if _, err := s.Do([]byte("limiter"), request(algo.KindFixed, 1, sec), t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire([]byte("lease"), algo.LeaseRequest{Limit: 1, Duration: sec}, t0); err != nil {
		t.Fatal(err)
	}
	lease := algo.LeaseRequest{Limit: 1, Duration: sec}
	for name, err := range map[string]error{
		"acquire on a limiter": second(s.Acquire([]byte("limiter"), lease, t0)),
		"release on a limiter": second(s.Release([]byte("limiter"), []byte("x"), t0)),
		"renew on a limiter":   second(s.Renew([]byte("limiter"), []byte("x"), sec, t0)),
		"RL.FIXED on leases":   second(s.Do([]byte("lease"), request(algo.KindFixed, 1, sec), t0)),
		"RL.LOG on leases":     second(s.Do([]byte("lease"), request(algo.KindLog, 1, sec), t0)),
		"RL.ALL on leases": second(s.DoAll([]algo.Rule{rule("other", algo.KindFixed, 1, sec), rule("lease", algo.KindFixed, 1, sec)},
			make([]algo.Decision, 2), t0)),
	} {
		if !errors.Is(err, ErrWrongType) {
			t.Errorf("%s: %v, want WRONGTYPE", name, err)
		}
	}
	if _, err := s.Acquire([]byte("big"), algo.LeaseRequest{Limit: DefaultMaxLogLimit + 1, Duration: sec}, t0); !errors.Is(err, ErrLogLimit) {
		t.Errorf("a limit above max-log-limit: %v", err)
	}
	if s.Exists([]byte("other"), t0) || s.Exists([]byte("big"), t0) {
		t.Error("a refused call created a key")
	}
}

func second[T any](_ T, err error) error { return err }

// TestLeaseKeys: memory, scan by kind, eviction and snapshots know lease keys.
func TestLeaseKeys(t *testing.T) {
	s := newStore(t, Config{Shards: 4})
	for i := range 20 {
		key := []byte(fmt.Sprint("lease:", i))
		for j := range 1 + i%5 {
			r := algo.LeaseRequest{Limit: 10, Duration: int64(10+i+j) * sec}
			if j == 2 {
				r.ID = []byte("a caller's own id, not hex")
			}
			if _, err := s.Acquire(key, r, t0+int64(j)*ms); err != nil {
				t.Fatal(err)
			}
		}
		s.Do([]byte(fmt.Sprint("fixed:", i)), request(algo.KindFixed, 10, 60*sec), t0)
	}
	if got := scanAll(s, 7, "", algo.KindLease, t0); len(got) != 20 {
		t.Errorf("SCAN TYPE rl.lease found %d keys, want 20", len(got))
	}
	// A key of 16 bytes with one generated id: a 40-byte record and a chunk of 16 +
	// 1+1+8 bytes in the 32-byte class, where an RL.FIXED key of 16 bytes has a 40-byte
	// record with the key inside.
	s.Acquire([]byte("0123456789abcdef"), algo.LeaseRequest{Limit: 10, Duration: sec}, t0)
	s.Do([]byte("fedcba9876543210"), request(algo.KindFixed, 10, 60*sec), t0)
	one := newStore(t, Config{Shards: 1})
	one.Acquire([]byte("0123456789abcdef"), algo.LeaseRequest{Limit: 10, Duration: sec}, t0)
	one.Do([]byte("fedcba9876543210"), request(algo.KindFixed, 10, 60*sec), t0)
	mem, ok := one.MemoryUsage([]byte("0123456789abcdef"), t0)
	fixedMem, _ := one.MemoryUsage([]byte("fedcba9876543210"), t0)
	if !ok || mem-fixedMem != 40+32-40 {
		t.Errorf("MEMORY USAGE of a 1-lease key: %d, of an RL.FIXED key %d; want 32 more", mem, fixedMem)
	}

	data := snapshotOf(t, s, t0+sec)
	loaded := newStore(t, Config{Shards: 2})
	if info, err := loaded.ReadSnapshot(bytes.NewReader(data), t0+sec); err != nil || info.Keys != 41 { // the 1-second lease ended: 20+20+1 left
		t.Fatalf("ReadSnapshot: %+v, %v", info, err)
	}
	for i := range 20 {
		key := []byte(fmt.Sprint("lease:", i))
		at := t0 + 2*sec
		wantTTL, _ := s.TTL(key, at)
		if ttl, ok := loaded.TTL(key, at); !ok || ttl != wantTTL {
			t.Errorf("%s: TTL %d, want %d", key, ttl, wantTTL)
		}
		r := algo.LeaseRequest{Limit: 10, Duration: sec}
		want, _ := s.Acquire(key, r, at)
		got, err := loaded.Acquire(key, r, at)
		if err != nil || got.Remaining != want.Remaining || got.FreshAt != want.FreshAt {
			t.Errorf("%s after loading: %+v, %v; want %+v", key, got, err, want)
		}
		for _, id := range [][]byte{[]byte("a caller's own id, not hex"), got.ID} {
			if ok, _ := loaded.Release(key, id, at); ok != (i%5 >= 2 || bytes.Equal(id, got.ID)) {
				t.Errorf("%s: release %q after loading = %v", key, id, ok)
			}
		}
	}

	// Eviction takes lease keys as any other, soonest deadline first.
	small := newStore(t, Config{Shards: 1, MaxMemory: 4 * minShardBudget})
	for i := range 5000 {
		if _, err := small.Acquire([]byte(fmt.Sprint("l", i)), algo.LeaseRequest{Limit: 2, Duration: int64(1+i) * sec}, t0); err != nil {
			t.Fatal(err)
		}
	}
	if st := small.Stats(); st.Evicted == 0 || st.Bytes > 4*minShardBudget+pageBytes {
		t.Errorf("after 5000 lease keys in a small budget: %+v", st)
	}
	if small.Exists([]byte("l0"), t0) || !small.Exists([]byte("l4999"), t0) {
		t.Error("eviction did not take the soonest deadline first")
	}
}

// leaseRoundTrip encodes and decodes a non-empty sorted lease set and fails unless
// it comes back whole, in at most maxLeaseBytes a lease, and passes the snapshot check.
func leaseRoundTrip(t *testing.T, leases []algo.Lease) {
	t.Helper()
	base := leases[0].Deadline
	size := leaseSize(leases, base)
	if size > len(leases)*maxLeaseBytes {
		t.Fatalf("%d leases in %d bytes", len(leases), size)
	}
	buf := make([]byte, size)
	encodeLeases(buf, leases, base)
	got, _ := decodeLeases(buf, base, nil, []byte("old scratch"))
	if len(got) != len(leases) {
		t.Fatalf("%d leases back, want %d", len(got), len(leases))
	}
	for i := range got {
		if got[i].Deadline != leases[i].Deadline || !bytes.Equal(got[i].ID, leases[i].ID) {
			t.Fatalf("lease %d: %+v, want %+v", i, got[i], leases[i])
		}
	}
	var sr snapshotReader
	if !sr.validLeases(buf, uint64(base), leases[len(leases)-1].Deadline) {
		t.Fatalf("a valid encoding of %d leases fails the snapshot check", len(leases))
	}
}

func TestLeaseCodec(t *testing.T) {
	for _, leases := range [][]algo.Lease{
		{{Deadline: t0, ID: []byte("0123456789abcdef")}},
		{{Deadline: t0, ID: []byte("0123456789ABCDEF")}, {Deadline: t0, ID: []byte("x")}, {Deadline: t0 + 1e9, ID: []byte{}}},
		{{Deadline: 5, ID: bytes.Repeat([]byte{0, '\n'}, 64)}, {Deadline: 1<<62 - 1, ID: []byte("ffffffffffffffff")}},
	} {
		leaseRoundTrip(t, leases)
	}
}

// FuzzLeaseCodec round-trips any lease set the store can hold: deadlines ascending in
// [0, 2^62), ids of 0 to 128 bytes. The input is cut into leases of a deadline step
// (8 bytes), an id length byte and the id. Its seed corpus runs with go test.
func FuzzLeaseCodec(f *testing.F) {
	f.Add([]byte("\x10\x27\x00\x00\x00\x00\x00\x00\x100123456789abcdef"))
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x40\x03abc\xff\xff\xff\xff\xff\xff\xff\xff\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		leases := []algo.Lease{{Deadline: t0, ID: []byte("first")}}
		for len(data) >= 9 {
			step := int64(binary.LittleEndian.Uint64(data) % (1 << 40))
			n := min(int(data[8])%(algo.MaxLeaseID+1), len(data)-9)
			prev := leases[len(leases)-1].Deadline
			leases = append(leases, algo.Lease{Deadline: min(prev+step, 1<<62-1), ID: data[9 : 9+n]})
			data = data[9+n:]
		}
		leaseRoundTrip(t, leases)
	})
}
