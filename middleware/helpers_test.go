package middleware_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
)

// networkClient is a Client on the server at addr: rlserver's commands, or the Lua
// scripts. timeout is its per-call budget.
func networkClient(t testing.TB, addr string, lua bool, timeout time.Duration) *client.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1,
		PoolSize: 64, MinIdleConns: 4})
	t.Cleanup(func() { rdb.Close() })
	opts := client.Options{Timeout: timeout}
	c, err := client.New(rdb, opts)
	if lua {
		c, err = client.NewLua(rdb, client.LuaOptions{Options: opts})
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// embeddedClient is an in-process Client; frozen at a whole minute unless real.
func embeddedClient(t testing.TB, real bool) *client.Client {
	t.Helper()
	var opts client.EmbeddedOptions
	if !real {
		opts.Clock = func() time.Time { return time.Unix(1_750_000_020, 0) }
	}
	c, err := client.NewEmbedded(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// itoa is strconv.Itoa, for building expected headers.
func itoa(n int) string { return strconv.Itoa(n) }

// testTimeout is the middleware's budget in tests that are not about failures: roomy,
// for a loaded machine under -race, where 50 ms would fail requests open.
const testTimeout = 5 * time.Second
