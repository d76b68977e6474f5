package cluster_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/testenv"
)

// TestSlotMatchesRedis asks a real redis-server in cluster mode for the slot of
// thousands of random keys, rich in braces and binary bytes, and requires Slot to
// agree on every one. A cluster-enabled Redis answers CLUSTER KEYSLOT before any
// slot is assigned; its nodes.conf goes to StartRedis's temporary --dir.
func TestSlotMatchesRedis(t *testing.T) {
	addr := testenv.StartRedis(t, "--cluster-enabled", "yes")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "{}{}ab:x\x00\xff"
	keys := make([]string, 5000)
	for i := range keys {
		b := make([]byte, rng.IntN(24))
		for j := range b {
			if rng.IntN(4) == 0 {
				b[j] = byte(rng.Uint32())
			} else {
				b[j] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		keys[i] = string(b)
	}
	pipe := rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.ClusterKeySlot(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if got, want := cluster.Slot([]byte(k)), cmds[i].Val(); int64(got) != want {
			t.Errorf("Slot(%q) = %d, Redis says %d", k, got, want)
		}
	}
}
