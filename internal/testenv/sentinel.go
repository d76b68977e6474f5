package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
)

// WaitSentinel waits (at most 30 s) until the Sentinel behind s monitors master with
// replicas replicas and others other Sentinels, and does not flag it down: a failover
// test that kills the master before then finds no quorum or no replica to promote.
func WaitSentinel(tb testing.TB, s *redis.Client, master string, replicas, others int) {
	tb.Helper()
	what := fmt.Sprintf("%s seeing %s's %d replicas and %d Sentinels", s.Options().Addr, master, replicas, others)
	poll.Until(tb, 30*time.Second, what, func() bool {
		m, err := s.Do(context.Background(), "SENTINEL", "MASTER", master).Result()
		if err != nil {
			return false
		}
		f := Fields(m)
		return f["num-slaves"] == fmt.Sprint(replicas) && f["num-other-sentinels"] == fmt.Sprint(others) &&
			!strings.Contains(f["flags"], "down")
	})
}

// Fields reads a reply of field-value pairs (RESP2's flat array, RESP3's map), such as
// SENTINEL MASTER's, into a map.
func Fields(v any) map[string]string {
	out := map[string]string{}
	switch v := v.(type) {
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			out[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
		}
	case map[any]any:
		for k, e := range v {
			out[fmt.Sprint(k)] = fmt.Sprint(e)
		}
	}
	return out
}
