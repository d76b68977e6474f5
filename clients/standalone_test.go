package clients_test

import (
	"fmt"
	"testing"
)

// TestStandalone runs each library's standalone script (testdata/standalone*) on one
// rlserver and, for its first part (connection commands, errors, pipelines,
// MULTI, CLIENT INFO, Pub/Sub), on a real redis-server, whose answers show that
// what the checks expect is Redis's behaviour: ioredis and node-redis in RESP2 and
// RESP3, redis-py (4.3 speaks RESP2 only). The RL.* part expects the algorithms'
// answers on fresh keys at a frozen clock.
func TestStandalone(t *testing.T) {
	t.Parallel()
	py, nodeBin := python(t), node(t)
	redisTools(t)
	targets := map[string]string{"rlserver": rlServer(t), "redis": startRedis(t)}
	type run struct {
		name string
		argv []string
	}
	var runs []run
	for _, target := range []string{"redis", "rlserver"} {
		addr := targets[target]
		runs = append(runs, run{"redis-py/" + target, []string{py, "standalone.py", target, addr}})
		for _, proto := range []string{"2", "3"} {
			runs = append(runs,
				run{fmt.Sprintf("ioredis/RESP%s/%s", proto, target), []string{nodeBin, "standalone_ioredis.js", target, addr, proto}},
				run{fmt.Sprintf("node-redis/RESP%s/%s", proto, target), []string{nodeBin, "standalone_node_redis.js", target, addr, proto}})
		}
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			runScript(t, r.name, r.argv...)
		})
	}
}
