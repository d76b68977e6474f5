package resp

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/rlserver/rlserver/cluster"
)

// BenchmarkClusterCheck is the price of cluster mode's slot check on the hot path:
// RL.TOKEN over loopback at pipeline depths 1 and 16, standalone against a
// one-node cluster that owns every slot (the check runs, every key stays here).
func BenchmarkClusterCheck(b *testing.B) {
	one, err := cluster.New([]string{"127.0.0.1:6380"}, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		cfg  Config
	}{{"standalone", Config{}}, {"cluster", Config{Cluster: one}}} {
		for _, depth := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/P%d", mode.name, depth), func(b *testing.B) {
				benchPipeline(b, mode.cfg, "RL.TOKEN user:%d 100 1000", depth)
			})
		}
	}
}

// BenchmarkClusterRedirect is the slot check alone, as serveCommand runs it for
// one RL.TOKEN whose key this node owns, without the network's noise around it.
func BenchmarkClusterRedirect(b *testing.B) {
	one, err := cluster.New([]string{"127.0.0.1:6380"}, 0)
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{cfg: Config{Cluster: one}}
	cm := commandIndex["rl.token"]
	args := bytes.Fields([]byte("RL.TOKEN user:12345 100 1000"))
	for b.Loop() {
		if msg := s.clusterRedirect(&client{}, cm, args); msg != "" {
			b.Fatal(msg)
		}
	}
}
