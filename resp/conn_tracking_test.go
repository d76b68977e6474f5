package resp

import "testing"

// TestClientTracking: a RESP3 connection tracking the keys it read gets one
// invalidation push when another connection writes one, none for its own writes
// under NOLOOP, a null one on FLUSHALL, and nothing after OFF.
func TestClientTracking(t *testing.T) {
	ts := startServer(t, Config{})
	a, b := ts.raw(t), ts.raw(t)
	a.send("HELLO 3\r\n")
	a.skipPast("*0\r\n") // the end of HELLO's map: modules []
	a.send("CLIENT TRACKING ON\r\nEXISTS k\r\nPTTL j\r\n")
	a.expect("+OK\r\n:0\r\n:-2\r\n")
	b.send("RL.TOKEN k 1 60000\r\n")
	b.skipPast(":60000\r\n")
	a.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n")
	// Once: a second write sends nothing until k is read again.
	b.send("DEL k\r\n")
	b.expect(":1\r\n")
	a.send("PING\r\n")
	a.expect("+PONG\r\n")
	// Its own write of a key it read: invalidated, but not under NOLOOP.
	a.send("RL.TOKEN j 1 60000\r\n")
	a.skipPast(":60000\r\n")
	a.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nj\r\n")
	a.send("CLIENT TRACKING ON NOLOOP\r\nTYPE j\r\nDEL j\r\nPING\r\n")
	a.expect("+OK\r\n+rl.token\r\n:1\r\n+PONG\r\n")
	b.send("FLUSHALL\r\n")
	b.expect("+OK\r\n")
	a.expect(">2\r\n$10\r\ninvalidate\r\n_\r\n")
	// Refused options, then OFF: a read then a write send nothing.
	a.send("CLIENT TRACKING ON BCAST\r\nCLIENT TRACKING ON FOO\r\nCLIENT TRACKING OFF\r\nEXISTS k\r\n")
	a.expect("-" + errTrackingOption + "\r\n-ERR syntax error\r\n+OK\r\n:0\r\n")
	b.send("RL.TOKEN k 1 60000\r\n")
	b.skipPast(":60000\r\n")
	a.send("PING\r\n")
	a.expect("+PONG\r\n")
}
