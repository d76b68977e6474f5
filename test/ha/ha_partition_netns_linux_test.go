package ha_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netns is a network namespace of the test's own, joined to this machine by a veth
// pair: the machine's end hostIP, the namespace's end nsIP, on a /24 of 10/8.
type netns struct {
	t            testing.TB
	name         string // the namespace, as `ip netns` names it
	hostIf, nsIf string // the veth pair's ends
	hostIP, nsIP string
}

// newNetns creates the namespace and its link, both removed when t ends. Without the
// right to (not root) the test is skipped, or fails under RLSERVER_REQUIRE_ROOT=1, as
// CI sets.
func newNetns(t testing.TB) *netns {
	t.Helper()
	id := fmt.Sprintf("%d%d", os.Getpid()%10000, rand.IntN(1000))
	net3 := 1 + rand.IntN(250)
	n := &netns{t: t, name: "rlha" + id, hostIf: "rlh" + id, nsIf: "rln" + id,
		hostIP: fmt.Sprintf("10.213.%d.1", net3), nsIP: fmt.Sprintf("10.213.%d.2", net3)}
	if out, err := exec.Command("ip", "netns", "add", n.name).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("ip netns add: %v %s (the partition test needs root)", err, out)
		if os.Getenv("RLSERVER_REQUIRE_ROOT") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + "; RLSERVER_REQUIRE_ROOT=1 turns this skip into a failure")
	}
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", n.hostIf).Run()
		exec.Command("ip", "netns", "del", n.name).Run()
	})
	n.ip("link", "add", n.hostIf, "type", "veth", "peer", "name", n.nsIf, "netns", n.name)
	n.ip("addr", "add", n.hostIP+"/24", "dev", n.hostIf)
	n.ip("link", "set", n.hostIf, "up")
	n.ip("-n", n.name, "addr", "add", n.nsIP+"/24", "dev", n.nsIf)
	n.ip("-n", n.name, "link", "set", n.nsIf, "up")
	n.ip("-n", n.name, "link", "set", "lo", "up")
	return n
}

// ip runs the ip command with args, failing the test on an error.
func (n *netns) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %s: %v %s", strings.Join(args, " "), err, out)
	}
}

// cut takes the namespace's end of the link down: packets between the namespace and
// the machine are lost (connections time out, as in a real partition), while each side
// keeps its own addresses (the machine's end stays up, without carrier) and the
// namespace its loopback.
func (n *netns) cut() { n.ip("-n", n.name, "link", "set", n.nsIf, "down") }

// heal brings the link back.
func (n *netns) heal() { n.ip("-n", n.name, "link", "set", n.nsIf, "up") }

// exec is argv run inside the namespace.
func (n *netns) exec(argv ...string) []string {
	return append([]string{"ip", "netns", "exec", n.name}, argv...)
}

// dial opens connections from inside the namespace, for clients beside a server that
// runs there: the socket is made by a thread that joined the namespace, and stays in
// it after the thread has left.
func (n *netns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // unlocked only once back home: else the thread ends with us
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- result{nil, err}
			return
		}
		defer unix.Close(home)
		there, err := unix.Open("/run/netns/"+n.name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- result{nil, err}
			return
		}
		defer unix.Close(there)
		if err := unix.Setns(there, unix.CLONE_NEWNET); err != nil {
			done <- result{nil, err}
			return
		}
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, network, addr)
		if unix.Setns(home, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}
