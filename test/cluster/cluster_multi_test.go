package cluster_test

import (
	"bufio"
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/testenv"
)

// TestRLServerClusterMultiMatchesRedis: a transaction on a real Redis Cluster and
// on rlserver nodes gets the same replies, up to the slot and address of a MOVED:
// a command for another node's key is refused when queued (MOVED), as one whose
// keys span slots (CROSSSLOT), and EXEC answers EXECABORT; one whose commands each
// run on the node but in different slots is refused at EXEC with CROSSSLOT.
func TestRLServerClusterMultiMatchesRedis(t *testing.T) {
	testenv.RedisTool(t, "redis-server")
	redisAddrs := testenv.StartRedisCluster(t, 3)
	_, rlAddrs := startRLCluster(t, 3)
	moved := regexp.MustCompile(`MOVED \d+ \S+`)
	// keys finds, for node 0 of addrs, two keys in different slots of its own, and
	// one key of node 1.
	keys := func(addrs []string) (a, b, other string) {
		c := newClient(addrs[0])
		defer c.Close()
		//lint:ignore SA1019 CLUSTER SLOTS is what redis-cli and older clients send; rlserver answers it as Redis does
		slots, err := c.ClusterSlots(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		owner := func(key string) string {
			slot := int(cluster.Slot([]byte(key)))
			for _, r := range slots {
				if r.Start <= slot && slot <= r.End {
					return r.Nodes[0].Addr
				}
			}
			return ""
		}
		for i := 0; a == "" || b == "" || other == ""; i++ {
			key := "k" + strconv.Itoa(i)
			switch owner(key) {
			case addrs[0]:
				if a == "" {
					a = key
				} else if b == "" && cluster.Slot([]byte(key)) != cluster.Slot([]byte(a)) {
					b = key
				}
			case addrs[1]:
				if other == "" {
					other = key
				}
			}
		}
		return a, b, other
	}
	replies := func(addrs []string) string {
		a, b, other := keys(addrs)
		conn, err := net.Dial("tcp", addrs[0])
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second)) // against a hang, never a result
		lines := []string{
			"MULTI", "EXISTS " + a, "EXISTS " + other, "EXISTS " + a, "EXEC",
			"MULTI", "EXISTS " + a, "DEL " + a + " " + b, "EXEC",
			"MULTI", "EXISTS " + a, "EXISTS " + b, "EXEC", "EXEC",
			"MULTI", "EXISTS " + a, "DEL " + a, "EXEC",
		}
		if _, err := conn.Write([]byte(strings.Join(lines, "\r\n") + "\r\n")); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(conn)
		var got []string
		for len(got) < len(lines)+2 { // the last EXEC's array: its header and two replies
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: after %q: %v", addrs[0], got, err)
			}
			got = append(got, moved.ReplaceAllString(strings.TrimSpace(line), "MOVED"))
		}
		return strings.Join(got, " | ")
	}
	if r, s := replies(redisAddrs), replies(rlAddrs); r != s {
		t.Errorf("transactions:\n redis-server: %s\n     rlserver: %s", r, s)
	}
}
