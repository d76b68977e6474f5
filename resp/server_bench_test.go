package resp

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
)

// BenchmarkServer measures whole requests over loopback TCP: RESP parsing,
// dispatch, the store and the reply, at pipeline depths 1 and 16. Keys cycle over
// 1024 names so several shards work. allocs/op counts the server's allocations
// (the client side here allocates nothing per request).
func BenchmarkServer(b *testing.B) {
	for _, bc := range []struct{ name, cmd string }{
		{"RL.TOKEN", "RL.TOKEN user:%d 100 1000"},
		{"RL.GCRA", "RL.GCRA user:%d 100 1000"},
		{"RL.LOG", "RL.LOG user:%d 100 1000"},
		// Every call refused after the first on each key (a year's window of 1): the
		// path that records refusals for RL.TOP.
		{"RL.TOKEN-refused", "RL.TOKEN hot:%d 1 31536000000"},
		// The two commands above in one all-or-nothing call: against their sum.
		{"RL.ALL-2", "RL.ALL TOKEN user:%[1]d 100 1000 GCRA ip:%[1]d 100 1000"},
		{"PING", "PING"},
	} {
		for _, depth := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/P%d", bc.name, depth), func(b *testing.B) {
				benchPipeline(b, Config{}, bc.cmd, depth)
			})
		}
	}
}

// benchPipeline sends format's commands (%d: the key number) over 1024 keys in
// pipelines of depth to a server with cfg, and fails on an error reply.
func benchPipeline(b *testing.B, cfg Config, format string, depth int) {
	ts := startServer(b, cfg)
	conn, err := net.Dial("tcp", ts.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	// Pre-built batches: 1024 keys / depth distinct pipelines, used in turn.
	var batches [][]byte
	for k := 0; k < 1024; k += depth {
		var buf bytes.Buffer
		for i := 0; i < depth; i++ {
			line := format
			if strings.Contains(format, "%d") {
				line = fmt.Sprintf(format, k+i)
			}
			writeCommand(&buf, line)
		}
		batches = append(batches, buf.Bytes())
	}
	// Replies of a pipeline are read whole: count the lines, 6 per RL.* reply.
	linesPerReply := 6
	switch {
	case format == "PING":
		linesPerReply = 1
	case strings.HasPrefix(format, "RL.ALL"): // the array, allowed, then each rule's six
		linesPerReply = 2 + 6*strings.Count(format, "%[1]d")
	}
	rd := make([]byte, 64<<10)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += depth {
		if _, err := conn.Write(batches[(i/depth)%len(batches)]); err != nil {
			b.Fatal(err)
		}
		for lines := 0; lines < depth*linesPerReply; {
			n, err := conn.Read(rd)
			if err != nil && err != io.EOF {
				b.Fatal(err)
			}
			if bytes.HasPrefix(rd[:n], []byte("-")) || bytes.Contains(rd[:n], []byte("\n-")) {
				b.Fatalf("an error reply: %q", rd[:n])
			}
			lines += bytes.Count(rd[:n], []byte("\n"))
		}
	}
}

// writeCommand encodes a space-separated command line as a RESP array.
func writeCommand(buf *bytes.Buffer, line string) {
	words := bytes.Fields([]byte(line))
	fmt.Fprintf(buf, "*%d\r\n", len(words))
	for _, w := range words {
		fmt.Fprintf(buf, "$%d\r\n%s\r\n", len(w), w)
	}
}
