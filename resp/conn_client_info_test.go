package resp

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// globRegexp is a Tcl string match pattern (only '*') as an anchored regexp.
func globRegexp(glob string) *regexp.Regexp {
	parts := strings.Split(glob, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

// TestClientInfoPattern: CLIENT INFO and CLIENT LIST match introspection.tcl's
// patterns (redis/redis at 4f8cdc2, Redis 7.4's fields): watch, and a qbuf of the
// request under way, 26 bytes for the runner's "*2 client info".
func TestClientInfoPattern(t *testing.T) {
	ts := startServer(t, Config{})
	r := ts.raw(t)
	const fields = "id=* addr=*:* laddr=*:* fd=* name=* age=* idle=* flags=N db=* sub=0 psub=0 ssub=0 multi=-1 " +
		"watch=0 qbuf=26 qbuf-free=* argv-mem=* multi-mem=0 rbs=* rbp=* obl=0 oll=0 omem=0 tot-mem=* events=r " +
		"cmd=client|%s user=* redir=-1 resp=*"
	for _, sub := range []string{"info", "list"} {
		r.send(respCmd("client", sub))
		n := r.line()
		line := strings.TrimSuffix(r.line(), "\n") // the bulk's one line, its CRLF read
		if !globRegexp(strings.Replace(fields, "%s", sub, 1)).MatchString(line) {
			t.Errorf("CLIENT %s (%s) = %q, not introspection.tcl's pattern", sub, n, line)
		}
		if !strings.Contains(line, " argv-mem=10 ") {
			t.Errorf("CLIENT %s: argv-mem of 'client %s' is 10 bytes: %q", sub, sub, line)
		}
	}
	// Run by EXEC: the transaction's commands and their arguments' bytes.
	r.send("MULTI\r\nECHO hello\r\nEXEC\r\n")
	r.expect("+OK\r\n+QUEUED\r\n*1\r\n$5\r\nhello\r\n")
	r.send("MULTI\r\n" + respCmd("ECHO", "hello") + respCmd("CLIENT", "INFO") + "EXEC\r\n")
	r.expect("+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n$5\r\nhello\r\n")
	r.line()
	if line := r.line(); !strings.Contains(line, " flags=x ") || !strings.Contains(line, " multi=2 ") ||
		!strings.Contains(line, " multi-mem=19 ") {
		t.Errorf("CLIENT INFO in EXEC: %q", line)
	}
}

// TestClientKillMaxAge: CLIENT KILL MAXAGE (Redis 7.4's, which the installed
// redis-server 7.0 lacks) closes the connections at least that many seconds old,
// with Redis's errors for a bad value (introspection.tcl's illegal arguments).
func TestClientKillMaxAge(t *testing.T) {
	ts := startServer(t, Config{})
	old := ts.raw(t)
	old.send("PING\r\n")
	old.expect("+PONG\r\n")
	time.Sleep(1100 * time.Millisecond) // the claim is about connections' ages
	r := ts.raw(t)
	r.send("CLIENT KILL MAXAGE str\r\nCLIENT KILL MAXAGE 9999999999999999999\r\nCLIENT KILL MAXAGE -1\r\nCLIENT KILL MAXAGE 0\r\n")
	r.expect("-ERR maxage is not an integer or out of range\r\n-ERR maxage is not an integer or out of range\r\n" +
		"-ERR maxage should be greater than 0\r\n-ERR maxage should be greater than 0\r\n")
	r.send("CLIENT KILL MAXAGE 1 SKIPME no\r\nCLIENT KILL MAXAGE 1 USER default\r\n")
	r.expect(":1\r\n:0\r\n")
	old.expectClosed()
	r.send("PING\r\n")
	r.expect("+PONG\r\n")
}
