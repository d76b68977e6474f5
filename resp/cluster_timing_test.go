package resp

import (
	"bytes"
	"fmt"
	"io"
	"net"
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
				benchTokenPipeline(b, mode.cfg, depth)
			})
		}
	}
}

// benchTokenPipeline sends RL.TOKEN over 1024 keys in pipelines of depth to a
// server with cfg, as benchPipeline does for a default server.
func benchTokenPipeline(b *testing.B, cfg Config, depth int) {
	ts := startServer(b, cfg)
	conn, err := net.Dial("tcp", ts.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var batches [][]byte
	for k := 0; k < 1024; k += depth {
		var buf bytes.Buffer
		for i := range depth {
			writeCommand(&buf, fmt.Sprintf("RL.TOKEN user:%d 100 1000", k+i))
		}
		batches = append(batches, buf.Bytes())
	}
	rd := make([]byte, 64<<10)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += depth {
		if _, err := conn.Write(batches[(i/depth)%len(batches)]); err != nil {
			b.Fatal(err)
		}
		for lines := 0; lines < depth*6; { // 6 lines per RL.* reply
			n, err := conn.Read(rd)
			if err != nil && err != io.EOF {
				b.Fatal(err)
			}
			if bytes.Contains(rd[:n], []byte("-")) {
				b.Fatalf("an error reply: %q", rd[:n])
			}
			lines += bytes.Count(rd[:n], []byte("\n"))
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
		if msg := s.clusterRedirect(cm, args); msg != "" {
			b.Fatal(msg)
		}
	}
}
