package resp_test

// Byte-for-byte comparisons with a real redis-server: the same bytes go to both, and
// both must answer the same bytes, then close the connection or not alike. Without
// redis-server they skip, unless RLSERVER_REQUIRE_REDIS=1 (CI): then they fail.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// endMarker ends every exchange: its reply tells that all before it was answered.
const (
	endMarker = "ECHO __end__\r\n"
	endReply  = "$7\r\n__end__\r\n"
)

// exchange sends in (then the end marker) on a new connection to addr and returns
// every byte answered, up to the end marker's reply or the connection's close.
func exchange(t *testing.T, addr, in string) (got string, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A deadline guards against a hung test, never decides a result.
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(in + endMarker)); err != nil {
		t.Fatal(err)
	}
	var b []byte
	buf := make([]byte, 4096)
	for !bytes.HasSuffix(b, []byte(endReply)) {
		n, err := conn.Read(buf)
		b = append(b, buf[:n]...)
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			return string(b), true
		}
		if err != nil {
			t.Fatalf("%q: after %q: %v", in, b, err)
		}
	}
	return string(bytes.TrimSuffix(b, []byte(endReply))), false
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// compareWithRedis sends each input to both servers and requires the same answer.
func compareWithRedis(t *testing.T, redisAddr, rlAddr string, inputs []string) {
	t.Helper()
	for _, in := range inputs {
		want, wantClosed := exchange(t, redisAddr, in)
		got, gotClosed := exchange(t, rlAddr, in)
		if got != want || gotClosed != wantClosed {
			t.Errorf("%q:\n rlserver: %q (closed %v)\n    redis: %q (closed %v)", in, got, gotClosed, want, wantClosed)
		}
	}
}

// TestProtocolAsRedis: requests framed oddly are skipped, refused or read as Redis
// does (tests/unit/protocol.tcl of redis/redis, and what it leaves out).
func TestProtocolAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareWithRedis(t, redisAddr, rlAddr, []string{
		"\r\nPING\r\n",
		// Counts of zero or less are skipped.
		"*0\r\nPING\r\n",
		"*-1\r\nPING\r\n",
		"*-10\r\nPING\r\n",
		"*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n",
		// Lengths Redis's string2ll refuses.
		"*+1\r\n$4\r\nPING\r\n",
		"*01\r\n$4\r\nPING\r\n",
		"*-0\r\n$4\r\nPING\r\n",
		"*\r\n",
		"*1\r\n$04\r\nPING\r\n",
		"*1\r\n$+4\r\nPING\r\n",
		"*1\r\n$-0\r\n",
		"*1\r\n$\r\n",
		"*1\r\n$-10\r\n",
		"*1\r\n$blabla\r\n",
		"*3000000000\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
		"*1\r\nfoo\r\n",
		// The two bytes after a bulk are skipped unread.
		"*1\r\n$4\r\nPINGxx",
		"*2\r\n$4\r\nECHO\r\n$3\r\nabcXY*1\r\n$4\r\nPING\r\n",
		"*1\r\n$3\r\nabcde\r\n",
		// The commands before a bad one in the same write run.
		"PING\r\n*1\r\n$x\r\n",
		"*1\r\n$4\r\nPING\r\n*1x\r\n",
		"*2\r\n$4\r\nECHO\r\n$1\r\nk\r\n*+2\r\n",
		// Transactions: QUIT is not queued.
		"MULTI\r\nQUIT\r\n",
		"MULTI\r\nPING\r\nQUIT\r\n",
		"MULTI\r\nNOSUCH\r\nPING\r\nEXEC\r\n",
		"MULTI\r\nPING x y\r\nEXEC\r\n",
		// SUBSCRIBE is queued; EXEC subscribes, and PING after it in the queue answers
		// as on a subscribed connection.
		"MULTI\r\nSUBSCRIBE a b\r\nPING\r\nEXEC\r\nPING\r\nUNSUBSCRIBE a b\r\n",
		"MULTI\r\nUNSUBSCRIBE\r\nPSUBSCRIBE p*\r\nEXEC\r\nPUNSUBSCRIBE\r\n",
	})
	// Split across writes: a count line in pieces.
	for _, addr := range []string{redisAddr, rlAddr} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		for _, part := range []string{"*", "-", "1", "\r", "\n", "*1\r\n$4\r\nPI", "NG\r\n"} {
			conn.Write([]byte(part))
			time.Sleep(time.Millisecond) // apart, to reach the server in separate reads; either way the answer is the same
		}
		want := "+PONG\r\n"
		got := make([]byte, len(want))
		if _, err := io.ReadFull(conn, got); err != nil || string(got) != want {
			more, _ := io.ReadAll(conn)
			got = append(got, more...)
			t.Errorf("%s (redis %v): split count line: %q, %v", addr, addr == redisAddr, got, err)
		}
		conn.Close()
	}
}

// TestGetKeysAsRedis: COMMAND GETKEYS and GETKEYSANDFLAGS find the keys of the
// commands both servers have, with Redis's flags and errors.
func TestGetKeysAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareWithRedis(t, redisAddr, rlAddr, []string{
		"COMMAND GETKEYS EXISTS a b c\r\n",
		"COMMAND GETKEYSANDFLAGS EXISTS a b\r\n",
		"COMMAND GETKEYSANDFLAGS DEL a b\r\n",
		"COMMAND GETKEYSANDFLAGS UNLINK a\r\n",
		"COMMAND GETKEYSANDFLAGS PTTL k\r\n",
		"COMMAND GETKEYSANDFLAGS TTL k\r\n",
		"COMMAND GETKEYSANDFLAGS TYPE k\r\n",
		"COMMAND GETKEYSANDFLAGS MEMORY USAGE k\r\n",
		"COMMAND GETKEYS MEMORY USAGE k SAMPLES 5\r\n",
		"COMMAND GETKEYS NOSUCH x\r\n",
		"COMMAND GETKEYS CLIENT NOPE\r\n",
		"COMMAND GETKEYS PING x\r\n",
		"COMMAND GETKEYS TYPE a b\r\n",
		"COMMAND GETKEYS\r\n",
	})
}

// TestClientAsRedis: CLIENT REPLY, CLIENT KILL's filters and errors, and CLIENT
// INFO's fields, as Redis's.
func TestClientAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareWithRedis(t, redisAddr, rlAddr, []string{
		"CLIENT REPLY OFF\r\nPING\r\nCLIENT REPLY ON\r\nPING\r\n",
		"CLIENT REPLY SKIP\r\nPING\r\nPING\r\nCLIENT REPLY FOO\r\nCLIENT REPLY\r\n",
		"CLIENT REPLY OFF\r\nCLIENT REPLY SKIP\r\nPING\r\nCLIENT REPLY ON\r\n",
		"CLIENT REPLY SKIP\r\nCLIENT REPLY ON\r\nPING\r\n", // introspection.tcl: ON ends a SKIP with its OK
		"CLIENT KILL USER nobody\r\nCLIENT KILL USER default LADDR 1.2.3.4:5\r\nCLIENT KILL ID 0\r\n",
		"CLIENT KILL ADDR\r\nCLIENT KILL TYPE x\r\nCLIENT KILL SKIPME maybe\r\nCLIENT KILL 1.2.3.4:5\r\n",
		"CLIENT KILL ADDR 1.2.3.4:5 LADDR\r\nCLIENT KILL FOO bar\r\n",
		"CLIENT TRACKING\r\nCLIENT TRACKING maybe\r\nCLIENT TRACKING ON FOO\r\nCLIENT TRACKING OFF\r\n",
	})
	// Killing one's own connection: the reply, then the close; commands after it are dropped.
	for _, form := range []string{"CLIENT KILL ADDR %s SKIPME no", "CLIENT KILL %s", "CLIENT KILL LADDR %[2]s SKIPME no ADDR %[1]s"} {
		var answers [2]string
		for i, addr := range []string{redisAddr, rlAddr} {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(conn, form+"\r\nPING\r\n", conn.LocalAddr(), conn.RemoteAddr())
			b, err := io.ReadAll(conn)
			answers[i] = fmt.Sprintf("%q %v", b, err)
			conn.Close()
		}
		if answers[0] != answers[1] {
			t.Errorf("%s of one's own: rlserver %s, redis %s", form, answers[1], answers[0])
		}
	}
	// CLIENT INFO: Redis's fields in Redis's order (rlserver adds watch after multi, of
	// Redis 7.4, and lib-name, lib-ver and tot-cmds, of 7.2 and later, at the end).
	fields := func(addr string) []string {
		got, _ := exchange(t, addr, "CLIENT INFO\r\n")
		_, line, _ := strings.Cut(got, "\r\n")
		var names []string
		for _, f := range strings.Fields(line) {
			if name, _, _ := strings.Cut(f, "="); name != "watch" {
				names = append(names, name)
			}
		}
		return names
	}
	want, got := fields(redisAddr), fields(rlAddr)
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Errorf("CLIENT INFO fields:\n rlserver %v\n    redis %v", got, want)
	}
}

// TestInfoAsRedis: INFO answers Redis's sections for no argument, default, all,
// everything and several names; commandstats and errorstats count as Redis's do;
// CONFIG GET *of names replicaof and its alias slaveof.
func TestInfoAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	headers := func(addr, req string) string {
		got, _ := exchange(t, addr, req)
		var hs []string
		for _, line := range strings.Split(got, "\r\n") {
			if strings.HasPrefix(line, "# ") {
				hs = append(hs, line)
			}
		}
		return strings.Join(hs, ",")
	}
	for _, req := range []string{"INFO\r\n", "INFO default\r\n", "INFO all\r\n", "INFO everything\r\n",
		"INFO cpu commandstats\r\n", "INFO keyspace server\r\n", "INFO CPU\r\n", "INFO nosuch\r\n"} {
		if got, want := headers(rlAddr, req), headers(redisAddr, req); got != want {
			t.Errorf("%q sections:\n rlserver %s\n    redis %s", req, got, want)
		}
	}
	// The same calls on both, then the counters' lines of the commands both have.
	lines := func(addr string) string {
		got, _ := exchange(t, addr, "CONFIG RESETSTAT\r\nPING\r\nPING\r\nPING x y\r\nECHO\r\nNOSUCH\r\n"+
			"MULTI\r\nEXEC x\r\nDISCARD\r\nINFO commandstats errorstats\r\n")
		var keep []string
		for _, line := range strings.Split(got, "\r\n") {
			name, val, ok := strings.Cut(line, ":")
			if !ok || !strings.HasPrefix(name, "cmdstat_") && !strings.HasPrefix(name, "errorstat_") {
				continue
			}
			if name == "cmdstat_info" || name == "cmdstat_config|resetstat" {
				continue
			}
			// The run times differ: keep the counts.
			var fields []string
			for _, f := range strings.Split(val, ",") {
				if !strings.HasPrefix(f, "usec") {
					fields = append(fields, f)
				}
			}
			keep = append(keep, name+":"+strings.Join(fields, ","))
		}
		slices.Sort(keep) // Redis lists them in its dictionary's order
		return strings.Join(keep, "\n")
	}
	if got, want := lines(rlAddr), lines(redisAddr); got != want {
		t.Errorf("commandstats and errorstats:\n rlserver:\n%s\n redis:\n%s", got, want)
	}
	// CONFIG GET's pairs come in Redis's dictionary order, which varies: as a set.
	pairs := func(addr string) string {
		got, _ := exchange(t, addr, "CONFIG GET *of\r\n")
		lines := strings.Split(got, "\r\n")
		var ps []string
		for i := 1; i+3 < len(lines); i += 4 {
			ps = append(ps, lines[i+1]+"="+lines[i+3])
		}
		slices.Sort(ps)
		return strings.Join(ps, " ")
	}
	if got, want := pairs(rlAddr), pairs(redisAddr); got != want || want == "" {
		t.Errorf("CONFIG GET *of: rlserver %q, redis %q", got, want)
	}
}

// TestPubsubObjectAsRedis: PUBSUB's counts, with one subscriber of a channel and a
// pattern on each server, and OBJECT's replies and errors for a key that is absent.
func TestPubsubObjectAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	for _, addr := range []string{redisAddr, rlAddr} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		conn.Write([]byte("SUBSCRIBE news.a\r\nPSUBSCRIBE p*\r\n"))
		want := "*3\r\n$9\r\nsubscribe\r\n$6\r\nnews.a\r\n:1\r\n*3\r\n$10\r\npsubscribe\r\n$2\r\np*\r\n:2\r\n"
		got := make([]byte, len(want))
		if _, err := io.ReadFull(conn, got); err != nil || string(got) != want {
			t.Fatalf("%s: subscribing: %q, %v", addr, got, err)
		}
	}
	compareWithRedis(t, redisAddr, rlAddr, []string{
		"PUBSUB CHANNELS\r\nPUBSUB CHANNELS news.*\r\nPUBSUB CHANNELS x*\r\n",
		"PUBSUB NUMSUB\r\nPUBSUB NUMSUB news.a x news.a\r\nPUBSUB NUMPAT\r\n",
		"PUBSUB SHARDCHANNELS\r\nPUBSUB SHARDNUMSUB a b\r\nPUBSUB SHARDCHANNELS x*\r\n",
		"PUBSUB CHANNELS a b\r\nPUBSUB SHARDCHANNELS a b\r\nPUBSUB NUMPAT x\r\nPUBSUB NOPE\r\nPUBSUB\r\n",
		"OBJECT ENCODING nokey\r\nOBJECT FREQ nokey\r\nOBJECT IDLETIME nokey\r\nOBJECT REFCOUNT nokey\r\n",
		"OBJECT NOPE k\r\nOBJECT ENCODING\r\nOBJECT FREQ a b\r\nOBJECT\r\n",
	})
}

// TestNumbersAsRedis: integer arguments are read as Redis's string2ll reads them (no
// '+', no leading zero, no space, no exponent or hexadecimal), and CONFIG SET's
// integer and memory parameters refuse what Redis refuses, in its words.
func TestNumbersAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	var inputs []string
	for _, v := range []string{"+1", "01", "-0", " 1", "1 ", "0x10", "1e3", "1.5", "inf", "nan", "1e400",
		"9223372036854775808", "-9223372036854775809", ""} {
		for _, cmd := range [][]string{{"SELECT", v}, {"SCAN", "0", "COUNT", v}, {"MEMORY", "USAGE", "k", "SAMPLES", v},
			{"SLOWLOG", "GET", v}, {"CLIENT", "KILL", "ID", v}, {"HELLO", v}, {"CONFIG", "SET", "timeout", v},
			{"CONFIG", "SET", "maxclients", v}, {"CONFIG", "SET", "slowlog-log-slower-than", v},
			{"CONFIG", "SET", "slowlog-max-len", v}} {
			inputs = append(inputs, string(respArray(cmd...)))
		}
		if v != "" && v != "9223372036854775808" && v != "01" { // Redis takes these; rlserver needs 0 or 1 MiB or more
			inputs = append(inputs, string(respArray("CONFIG", "SET", "maxmemory", v)))
		}
	}
	inputs = append(inputs, string(respArray("CONFIG", "SET", "slowlog-log-slower-than", "-2")),
		string(respArray("CONFIG", "SET", "maxclients", "4294967296")), string(respArray("CONFIG", "SET", "maxclients", "0")),
		string(respArray("CONFIG", "SET", "timeout", "-1")), string(respArray("CONFIG", "SET", "maxmemory", "-1")))
	compareWithRedis(t, redisAddr, rlAddr, inputs)
}

// respArray encodes args as one RESP request.
func respArray(args ...string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}
