package resp_test

import (
	"testing"

	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestMultiAsRedis: the commands Redis flags no-multi (SAVE, SHUTDOWN, SYNC, PSYNC)
// are refused when queued and doom the transaction; MONITOR is queued and refused by
// EXEC, as Redis's.
func TestMultiAsRedis(t *testing.T) {
	redisAddr := testenv.StartRedis(t)
	rlAddr := testenv.StartServer(t, resp.Config{})
	compareWithRedis(t, redisAddr, rlAddr, []string{
		"MULTI\r\nSAVE\r\nPING\r\nEXEC\r\n",
		"MULTI\r\nSHUTDOWN NOSAVE\r\nEXEC\r\n",
		"MULTI\r\nSHUTDOWN\r\nSHUTDOWN SAVE\r\nPING\r\nDISCARD\r\n",
		"MULTI\r\nSYNC\r\nEXEC\r\n",
		"MULTI\r\nPSYNC ? -1\r\nEXEC\r\n",
		"MULTI\r\nSAVE x\r\nEXEC\r\n",
		"MULTI\r\nMONITOR\r\nPING\r\nEXEC\r\nPING\r\n",
	})
}
