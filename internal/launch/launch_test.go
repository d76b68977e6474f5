package launch

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/resp"
)

// TestFreeAddr: an address on loopback whose port and port+10000 can both be bound.
func TestFreeAddr(t *testing.T) {
	addrs, err := FreeAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("%q: %v", a, err)
		}
		p, _ := strconv.Atoi(port)
		for _, q := range []int{p, p + 10000} {
			ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(q)))
			if err != nil {
				t.Fatalf("port %d of %s: %v", q, a, err)
			}
			ln.Close()
		}
	}
	if addrs[0] == addrs[1] || addrs[1] == addrs[2] || addrs[0] == addrs[2] {
		t.Errorf("FreeAddrs(3) = %v: not distinct", addrs)
	}
}

// TestStartExited: a program that exits at once is an error quoting its log.
func TestStartExited(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "sh.log")
	_, err = Start(Spec{Name: "sh", Addr: addr, Log: log, Argv: []string{"sh", "-c", "echo no luck; exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "exited at start") || !strings.Contains(err.Error(), "no luck") {
		t.Errorf("Start: %v, want an exit quoting the log", err)
	}
}

// TestInProcess: the in-process server answers, and stops cleanly.
func TestInProcess(t *testing.T) {
	_, addr, stop, err := InProcess(resp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := waitPing(addr, "", nil); err != nil {
		t.Error(err)
	}
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
}
