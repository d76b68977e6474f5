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
	redisTools(t)
	targets := map[string]string{"rlserver": rlServer(t), "redis": startRedis(t)}
	var runs []scriptRun
	for _, target := range []string{"redis", "rlserver"} {
		addr := targets[target]
		runs = append(runs, scriptRun{"redis-py/" + target, python, []string{"standalone.py", target, addr}})
		for _, proto := range []string{"2", "3"} {
			runs = append(runs,
				scriptRun{fmt.Sprintf("ioredis/RESP%s/%s", proto, target), node, []string{"standalone_ioredis.js", target, addr, proto}},
				scriptRun{fmt.Sprintf("node-redis/RESP%s/%s", proto, target), node, []string{"standalone_node_redis.js", target, addr, proto}})
		}
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			runScript(t, r.name, append([]string{r.interp(t)}, r.args...)...)
		})
	}
}
