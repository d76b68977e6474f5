package ha_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestWaitFailover: decisions a client made durable with WAIT 1 survive a kill -9 of
// the primary and Sentinel's failover: 8 connections spend keys of limit 1 on the
// primary, each admission followed by WAIT 1 500; every key whose WAIT answered 1 is
// found spent on the primary the Sentinels promote. 0 lost.
func TestWaitFailover(t *testing.T) {
	needBinaries(t)
	set := startHA(t, true)
	ctx := context.Background()
	const day = "86400000"
	var mu sync.Mutex
	var acked []string // keys whose admission WAIT 1 confirmed on a replica
	var unacked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rdb := redis.NewClient(&redis.Options{Addr: set.primary.addr, Password: haPass, MaxRetries: -1,
				PoolSize: 1, ReadTimeout: 2 * time.Second})
			defer rdb.Close()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("acked:%d:%d", g, i)
				if r, err := rdb.Do(ctx, "RL.FIXED", key, 1, day).Slice(); err != nil || len(r) < 1 || r[0] != int64(1) {
					return // the primary is gone
				}
				n, err := rdb.Do(ctx, "WAIT", 1, 500).Int64()
				if err != nil {
					return
				}
				if n < 1 {
					unacked.Add(1)
					continue
				}
				mu.Lock()
				acked = append(acked, key)
				mu.Unlock()
			}
		})
	}
	time.Sleep(2 * time.Second)
	set.primary.kill()
	close(stop)
	wg.Wait()
	newPrimary := settledPrimary(t, set)
	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 100 {
		t.Fatalf("only %d admissions acknowledged by WAIT before the kill", len(acked))
	}
	lost := 0
	for _, key := range acked {
		r, err := newPrimary.rdb.Do(ctx, "RL.FIXED", key, 1, day, "PEEK").Slice()
		if err != nil || len(r) < 3 || r[2] != int64(0) {
			lost++
			if lost <= 5 {
				t.Errorf("%s, acknowledged by WAIT 1, is not spent on %s: %v, %v", key, newPrimary.name, r, err)
			}
		}
	}
	t.Logf("%d admissions acknowledged by WAIT 1 before the kill, %d lost after the failover to %s; %d not acknowledged within 500 ms",
		len(acked), lost, newPrimary.name, unacked.Load())
}
