package resp_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// aclAsRedisUser is a user both servers know, of commands both have.
const aclAsRedisUser = "cmp on >cpass ~tenantA:* &news.* +del +echo +publish +subscribe +multi +exec"

// TestACLAsRedis: the same users, the same requests, the same bytes as a real
// redis-server 7.0: NOPERM for commands, keys and channels, inside MULTI too,
// failed AUTHs, and the ACL subcommands' answers and errors.
func TestACLAsRedis(t *testing.T) {
	// DEBUG is checked against the ACL as rlserver checks it once enabled.
	redisAddr := testenv.StartRedis(t, append([]string{"--enable-debug-command", "yes", "--user"}, strings.Fields(aclAsRedisUser)...)...)
	rlAddr := testenv.StartServer(t, resp.Config{Users: []resp.UserDirective{{Args: strings.Fields(aclAsRedisUser)}}})
	const login = "AUTH cmp cpass\r\n"
	compareWithRedis(t, redisAddr, rlAddr, []string{
		"AUTH cmp wrong\r\n",
		"AUTH nosuch x\r\n",
		"AUTH onlypass\r\n",
		"HELLO 2 AUTH cmp wrong\r\n",
		login + "DEL tenantA:x\r\n",
		login + "DEL tenantB:x\r\n",
		login + "DEL tenantA:x tenantB:y\r\n",
		login + "FLUSHALL\r\n",
		login + "CONFIG GET maxmemory\r\n",
		login + "CONFIG SET maxmemory 1\r\n",
		login + "DEBUG SLEEP 0\r\n",
		login + "REPLICAOF NO ONE\r\n",
		login + "CLUSTER INFO\r\n",
		login + "ACL WHOAMI\r\n",
		login + "PING\r\n",
		login + "PUBLISH news.a x\r\n",
		login + "PUBLISH other x\r\n",
		login + "SUBSCRIBE news.a other\r\n",
		login + "MULTI\r\nDEL tenantB:x\r\nEXEC\r\n",
		login + "MULTI\r\nFLUSHALL\r\nEXEC\r\n",
		login + "MULTI\r\nDEL tenantA:x\r\nEXEC\r\n",
		"ACL WHOAMI\r\n",
		"ACL SETUSER x bogus\r\n",
		"ACL SETUSER x on +nosuch\r\n",
		"ACL SETUSER x +@nosuch\r\n",
		"ACL SETUSER x -nosuch\r\n",
		"ACL SETUSER x allkeys ~a\r\n",
		"ACL SETUSER x allchannels &a\r\n",
		"ACL SETUSER x <nope\r\n",
		"ACL SETUSER x #abc\r\n",
		"ACL SETUSER x !abc\r\n",
		"ACL SETUSER x %X~a\r\n",
		"ACL SETUSER x %RR~a\r\n",
		"ACL SETUSER x +config|get|x\r\n",
		"ACL SETUSER x +config|nosuch\r\n",
		"ACL SETUSER x +debug|\r\n",
		"*3\r\n$3\r\nACL\r\n$7\r\nSETUSER\r\n$3\r\na b\r\n",
		"ACL GETUSER x\r\n", // nothing of the bad ones was applied
		"ACL SETUSER u on >p ~a:* %R~r:* %W~w:* %RW~rw:* &news.* -@all +del\r\nACL GETUSER u\r\nACL USERS\r\nACL DELUSER u nobody\r\n",
		"ACL SETUSER v\r\nACL GETUSER v\r\nACL SETUSER v reset\r\nACL GETUSER v\r\nACL DELUSER v\r\n",
		"ACL SETUSER w on nopass allkeys allchannels allcommands\r\nACL GETUSER w\r\nACL SETUSER w resetpass resetkeys resetchannels nocommands off\r\nACL GETUSER w\r\nACL DELUSER w\r\n",
		"ACL GETUSER default\r\n",
		"ACL GETUSER nobody\r\n",
		"ACL DELUSER default\r\n",
		"ACL CAT nosuch\r\n",
		"ACL cAt a b\r\n",
		"ACL GenPass 1 2\r\n",
		"ACL LoG 1 2\r\n",
		"ACL GENPASS 0\r\n",
		"ACL GENPASS 5000\r\n",
		"ACL GENPASS x\r\n",
		"ACL LOG x\r\n",
		"ACL DRYRUN cmp DEL tenantB:x\r\n",
		"ACL DRYRUN cmp DEL tenantA:x\r\n",
		"ACL DRYRUN cmp FLUSHALL\r\n",
		"ACL DRYRUN cmp PUBLISH other x\r\n",
		"ACL DRYRUN nobody DEL x\r\n",
		"ACL DRYRUN cmp NOSUCH\r\n",
		"ACL DRYRUN cmp DEL\r\n",
		"ACL SAVE\r\n",
		"ACL LOAD\r\n",
		"CONFIG GET acllog-max-len\r\n",
		"CONFIG SET acllog-max-len -1\r\n",
		"CONFIG SET acllog-max-len 1x\r\n",
		"CONFIG SET acllog-max-len 9223372036854775808\r\n",
		"CONFIG SET acllog-max-len 0\r\nCONFIG GET acllog-max-len\r\nCONFIG SET acllog-max-len 128\r\n",
		"CONFIG GET masteruser\r\n",
		"CONFIG GET aclfile\r\n",
		// ACL LIST is left out: which categories sum a user's commands up depends
		// on the command table, and Redis lists single commands in its hash order.
		"ACL\r\n",
		"ACL NOSUCH\r\n",
	})
}

// TestDefaultUserAuthAsRedis: a default user with a password, or off, whether
// from a user line or ACL SETUSER, leaves new connections unauthenticated, as in
// Redis: NOAUTH until AUTH (a security hole when connections ran as default).
func TestDefaultUserAuthAsRedis(t *testing.T) {
	for _, rules := range []string{
		"default on >secret ~* &* +@all",
		"default off nopass ~* &* +@all",
		"default off >secret ~* &* +@all",
	} {
		t.Run(rules, func(t *testing.T) {
			redisAddr := testenv.StartRedis(t, append([]string{"--user"}, strings.Fields(rules)...)...)
			rlAddr := testenv.StartServer(t, resp.Config{Users: []resp.UserDirective{{Args: strings.Fields(rules)}}})
			compareLinesWithRedis(t, redisAddr, rlAddr, []string{
				"PING\r\n",
				"DEL k\r\n",
				"FLUSHALL\r\n",
				"HELLO 3\r\n",
				"AUTH wrong\r\n",
				"AUTH secret\r\nPING\r\n",
				"AUTH default secret\r\nDEL k\r\n",
			})
		})
	}
	t.Run("ACL SETUSER", func(t *testing.T) {
		redisAddr := testenv.StartRedis(t)
		rlAddr := testenv.StartServer(t, resp.Config{})
		compareLinesWithRedis(t, redisAddr, rlAddr, []string{
			"ACL SETUSER default >secret\r\n",
			"PING\r\n", // a new connection: the runner opens one per input
			"AUTH secret\r\nACL SETUSER default nopass\r\n",
			"PING\r\n",
		})
	})
}

// compareLinesWithRedis is compareWithRedis for inputs whose every reply is one
// line, where no end marker can be sent (a connection that must AUTH refuses it):
// it reads as many lines as the input has commands.
func compareLinesWithRedis(t *testing.T, redisAddr, rlAddr string, inputs []string) {
	t.Helper()
	for _, in := range inputs {
		want, got := replyLines(t, redisAddr, in), replyLines(t, rlAddr, in)
		if got != want {
			t.Errorf("%q:\n rlserver: %q\n    redis: %q", in, got, want)
		}
	}
}

func replyLines(t *testing.T, addr, in string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second)) // guards against a hang, decides nothing
	if _, err := conn.Write([]byte(in)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	var b strings.Builder
	for range strings.Count(in, "\r\n") {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%q: after %q: %v", in, b.String(), err)
		}
		b.WriteString(line)
	}
	return b.String()
}
