// The cluster tests: rlserver processes in cluster mode on loopback, beside a real
// Redis Cluster where the replies must match, driven by go-redis's ClusterClient,
// redis-cli --cluster and Redis Sentinels as a user would drive them: forming a
// cluster, transactions on it, replicas and their failover, and reshards under load.
//
// Each test starts the servers it needs from the rlserver binary, built once for
// them all (testenv.RLServerBin). Without redis-server and redis-cli the tests skip,
// unless RLSERVER_REQUIRE_REDIS=1 (CI): then they fail.
//
//	go test -run 'Cluster|Reshard' -v ./test/cluster/
package cluster_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/launch"
	"github.com/rlserver/rlserver/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// needBinaries skips or fails t when redis-server is missing, and fails it when
// rlserver does not build.
func needBinaries(t testing.TB) {
	t.Helper()
	testenv.RedisTool(t, "redis-server")
	testenv.RLServerBin(t)
}

// process is an rlserver process, with a client on it.
type process struct {
	*launch.Proc
	client *redis.Client
}

// stop closes the client and ends p: SIGTERM, then SIGKILL after 5 s.
func (p *process) stop() {
	p.client.Close()
	p.Proc.Stop()
}

// newClient connects to addr with go-redis's defaults (RESP3 through HELLO 3) and
// no retries: a retried RL.* call would be counted twice.
func newClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64, MaxRetries: -1,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute})
}

// startNode runs the rlserver binary (launch.Built) on addr with DEBUG CLOCK and
// args, its log in dir, and waits until it answers PING.
func startNode(dir, addr string, args ...string) (*process, error) {
	bin, err := launch.Built()
	if err != nil {
		return nil, err
	}
	p, err := launch.RLServerAt(bin, dir, addr, append([]string{"-enable-debug-command", "-loglevel", "WARN"}, args...)...)
	if err != nil {
		return nil, err
	}
	return &process{Proc: p, client: newClient(p.Addr)}, nil
}

// reply5 reads a five-integer reply.
func reply5(cmd *redis.Cmd) ([5]int64, error) {
	var r [5]int64
	v, err := cmd.Int64Slice()
	if err != nil {
		return r, err
	}
	if len(v) != 5 {
		return r, fmt.Errorf("%d integers in the reply, want 5: %v", len(v), v)
	}
	copy(r[:], v)
	return r, nil
}
