package resp

import "testing"

// TestClientTrackingOptInOut: under OPTIN only the reads of the command or
// transaction after CLIENT CACHING yes are tracked (a PING in between uses it up,
// CLIENT commands do not); under OPTOUT all but those after CLIENT CACHING no.
func TestClientTrackingOptInOut(t *testing.T) {
	ts := startServer(t, Config{})
	a, b := ts.raw(t), ts.raw(t)
	a.send("HELLO 3\r\n")
	a.skipPast("*0\r\n")
	write := func(key string) {
		b.send("RL.TOKEN " + key + " 1 60000\r\n")
		b.skipPast(":60000\r\n")
	}
	invalidated := func(key string) string {
		return ">2\r\n$10\r\ninvalidate\r\n*1\r\n$" + string(rune('0'+len(key))) + "\r\n" + key + "\r\n"
	}
	a.send("CLIENT TRACKING ON OPTIN\r\nEXISTS k1\r\nCLIENT CACHING yes\r\nPING\r\nEXISTS k2\r\n" +
		"CLIENT CACHING yes\r\nCLIENT GETNAME\r\nEXISTS k3\r\n" +
		"CLIENT CACHING yes\r\nMULTI\r\nPING\r\nEXISTS k4\r\nEXEC\r\nEXISTS k5\r\n")
	a.expect("+OK\r\n:0\r\n+OK\r\n+PONG\r\n:0\r\n+OK\r\n_\r\n:0\r\n+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+PONG\r\n:0\r\n:0\r\n")
	for _, k := range []string{"k1", "k2", "k3", "k4", "k5"} {
		write(k)
	}
	a.send("PING\r\n")
	a.expect(invalidated("k3") + invalidated("k4") + "+PONG\r\n")

	a.send("CLIENT TRACKING OFF\r\nCLIENT TRACKING ON OPTOUT\r\nEXISTS k6\r\nCLIENT CACHING no\r\nEXISTS k7\r\nEXISTS k8\r\n")
	a.expect("+OK\r\n+OK\r\n:0\r\n+OK\r\n:0\r\n:0\r\n")
	for _, k := range []string{"k6", "k7", "k8"} {
		write(k)
	}
	a.send("PING\r\n")
	a.expect(invalidated("k6") + invalidated("k8") + "+PONG\r\n")
}
