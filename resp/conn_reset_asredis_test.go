package resp_test

import (
	"testing"

	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestResetAsRedis: RESET leaves the connection as a new one, as Redis 6.2+'s: no
// transaction, subscription, MONITOR, CLIENT REPLY OFF or name, RESP2, the default
// user; a SKIP under way still drops its reply.
func TestResetAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareWithRedis(t, redisAddr, rlAddr, []string{
		"RESET\r\n",
		"RESET x\r\n",
		"MULTI\r\nPING\r\nRESET\r\nEXEC\r\nPING\r\n",
		"MULTI\r\nNOSUCH\r\nRESET\r\nMULTI\r\nPING\r\nEXEC\r\n",
		"CLIENT SETNAME foo\r\nRESET\r\nCLIENT GETNAME\r\n",
		"CLIENT REPLY OFF\r\nHELLO 3\r\nCLIENT SETNAME foo\r\nRESET\r\nCLIENT GETNAME\r\nPING\r\n",
		"CLIENT REPLY OFF\r\nPING\r\nRESET\r\nPING\r\n",
		"CLIENT REPLY SKIP\r\nRESET\r\nPING\r\n",
		"SUBSCRIBE a b\r\nPSUBSCRIBE p*\r\nRESET\r\nPING\r\nPUBSUB NUMSUB a b\r\nPUBSUB NUMPAT\r\nSUBSCRIBE c\r\nUNSUBSCRIBE\r\n",
		"CLIENT REPLY OFF\r\nHELLO 3\r\nSUBSCRIBE a\r\nRESET\r\nPUBSUB NUMSUB a\r\nPING\r\n",
		"MONITOR\r\nRESET\r\nPING\r\n",
		"CLIENT TRACKING ON\r\nRESET\r\nPING\r\n",
		"ACL SETUSER u on >p +@all\r\nAUTH u p\r\nACL WHOAMI\r\nRESET\r\nACL WHOAMI\r\nACL DELUSER u\r\n",
	})
	// A default user with a password: RESET logs the connection out.
	redisAddr = testenv.StartRedis(t, "--requirepass", "pw")
	rlAddr = testenv.StartServer(t, resp.Config{RequirePass: "pw"})
	compareLinesWithRedis(t, redisAddr, rlAddr, []string{
		"AUTH pw\r\nPING\r\nRESET\r\nPING\r\nAUTH pw\r\nPING\r\n",
		"RESET\r\nPING\r\n",
	})
}
