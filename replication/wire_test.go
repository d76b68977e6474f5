package replication

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/store"
)

// TestChunks: a snapshot cut by chunkWriter reads back whole through chunkReader,
// across chunk boundaries, with io.EOF after the empty last chunk.
func TestChunks(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	snap := bytes.Repeat([]byte("0123456789abcdef"), chunkMax/16*2+5) // two full chunks and a part
	go func() {
		w := bufio.NewWriter(a)
		cw := &chunkWriter{w: w, conn: a}
		cw.Write(snap[:7])
		cw.Write(snap[7:])
		cw.close()
		io.WriteString(a, "after")
	}()
	br := bufio.NewReader(b)
	got, err := io.ReadAll(&chunkReader{r: br, conn: b})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, snap) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(snap))
	}
	rest := make([]byte, 5)
	if _, err := io.ReadFull(br, rest); err != nil || string(rest) != "after" {
		t.Errorf("after the snapshot: %q, %v", rest, err)
	}
}

// TestChunkTooLong: a chunk announced longer than chunkMax is a corrupt stream.
func TestChunkTooLong(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go a.Write([]byte{0xff, 0xff, 0xff, 0xff})
	_, err := io.ReadAll(&chunkReader{r: bufio.NewReader(b), conn: b})
	if err == nil || !strings.Contains(err.Error(), "corrupt stream") {
		t.Errorf("a 4 GiB chunk: %v", err)
	}
}

func TestParseReplicaOf(t *testing.T) {
	for _, tc := range []struct {
		in   string
		host string
		port int
	}{
		{"127.0.0.1:6379", "127.0.0.1", 6379},
		{"primary 7000", "primary", 7000},
		{"[::1]:6380", "::1", 6380},
		{"nohostport", "", 0},
		{"h:0", "", 0},
		{"h:65536", "", 0},
		{":6379", "", 0},
		{"a b c", "", 0},
	} {
		host, port, err := ParseReplicaOf(tc.in)
		if host != tc.host || port != tc.port || (err == nil) != (tc.host != "") {
			t.Errorf("ParseReplicaOf(%q) = %q, %d, %v", tc.in, host, port, err)
		}
	}
}

func TestRespCommand(t *testing.T) {
	if got := string(respCommand("REPLCONF", "ACK", "42")); got != "*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$2\r\n42\r\n" {
		t.Errorf("respCommand = %q", got)
	}
}

func TestNewRefuses(t *testing.T) {
	st, err := store.New(store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	now := func() int64 { return 1 }
	for _, cfg := range []Config{{}, {Store: st, Now: now, BacklogSize: -1}, {Store: st, Now: now, ReplicaOf: "h:0"}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	n, err := New(Config{Store: st, Now: now, ReplicaOf: "127.0.0.1 6379"})
	if err != nil {
		t.Fatal(err)
	}
	if host, port := n.Primary(); host != "127.0.0.1" || port != 6379 || !n.ReadOnly() {
		t.Errorf("a replica of %s:%d, read-only %v", host, port, n.ReadOnly())
	}
}
