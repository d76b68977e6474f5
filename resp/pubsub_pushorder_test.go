package resp

import "testing"

// TestPushToSelfAfterReply: a push to the connection that runs the command (PUBLISH
// to a channel it subscribed, a key it tracks written inside EXEC) follows the
// command's whole reply, EXEC's array included, as Redis 7.2's pending push messages
// (pubsub.tcl's "publish to self inside multi"; Redis 7.0 interleaves them, so this
// is not compared with the installed redis-server).
func TestPushToSelfAfterReply(t *testing.T) {
	ts := startServer(t, Config{})
	r := ts.raw(t)
	r.send("CLIENT REPLY OFF\r\nHELLO 3\r\nSUBSCRIBE foo\r\nCLIENT REPLY ON\r\n")
	r.expect(">3\r\n$9\r\nsubscribe\r\n$3\r\nfoo\r\n:1\r\n+OK\r\n")
	message := func(m string) string { return ">3\r\n$7\r\nmessage\r\n$3\r\nfoo\r\n$3\r\n" + m + "\r\n" }
	r.send("MULTI\r\nPING abc\r\nPUBLISH foo bar\r\nPUBLISH foo vaz\r\nPING def\r\nEXEC\r\n")
	r.expect("+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n" +
		"*4\r\n$3\r\nabc\r\n:1\r\n:1\r\n$3\r\ndef\r\n" + message("bar") + message("vaz"))
	r.send("PUBLISH foo one\r\nPING\r\n")
	r.expect(":1\r\n" + message("one") + "+PONG\r\n")
	// Under CLIENT REPLY OFF the push still comes, the reply does not.
	r.send("CLIENT REPLY OFF\r\nPUBLISH foo two\r\nCLIENT REPLY ON\r\n")
	r.expect(message("two") + "+OK\r\n")
	r.send("UNSUBSCRIBE foo\r\nPUBLISH foo x\r\n")
	r.expect(">3\r\n$11\r\nunsubscribe\r\n$3\r\nfoo\r\n:0\r\n:0\r\n")

	// Tracking: a key read, then written by the same connection inside EXEC.
	tr := ts.raw(t)
	tr.send("CLIENT REPLY OFF\r\nHELLO 3\r\nCLIENT TRACKING ON\r\nCLIENT REPLY ON\r\nEXISTS k\r\n")
	tr.expect("+OK\r\n:0\r\n")
	tr.send("MULTI\r\nDEL k\r\nPING\r\nEXEC\r\n")
	tr.expect("+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:0\r\n+PONG\r\n>2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n")
}
