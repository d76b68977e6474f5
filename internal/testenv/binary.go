package testenv

import (
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/launch"
)

// Main runs m's tests, then removes the rlserver binary they built (RLServerBin,
// launch.Built). A package whose tests start the binary has
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
func Main(m *testing.M) int {
	defer launch.RemoveBuilt()
	return m.Run()
}

// RLServerBin returns the rlserver binary built from cmd/rlserver, built once for the
// whole test binary (launch.Built); a build that fails fails tb. The package's
// TestMain removes it (Main).
func RLServerBin(tb testing.TB) string {
	tb.Helper()
	bin, err := launch.Built()
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// StartRLCluster starts n rlserver processes (RLServerBin) on loopback as one
// cluster of n masters, the slots split evenly (-cluster-nodes, -cluster-self), each
// with args added to its flags; it stops them when tb ends and returns their
// addresses in -cluster-nodes order. The ports are free when picked but may be taken
// before a node binds one: then the whole cluster starts again, up to three times.
func StartRLCluster(tb testing.TB, n int, args ...string) []string {
	tb.Helper()
	bin := RLServerBin(tb)
	var err error
	for range 3 {
		var addrs []string
		if addrs, err = launch.FreeAddrs(n); err != nil {
			tb.Fatal(err)
		}
		var nodes []*launch.Proc
		for i, addr := range addrs {
			var p *launch.Proc
			nodeArgs := append([]string{"-cluster-nodes", strings.Join(addrs, ","), "-cluster-self", strconv.Itoa(i)}, args...)
			if p, err = launch.RLServerAt(bin, tb.TempDir(), addr, nodeArgs...); err != nil {
				break
			}
			nodes = append(nodes, p)
		}
		for _, p := range nodes {
			if err == nil {
				tb.Cleanup(p.Stop)
			} else {
				p.Stop()
			}
		}
		if err == nil {
			return addrs
		}
	}
	tb.Fatal(err)
	return nil
}
