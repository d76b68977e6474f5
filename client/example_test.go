package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
)

// frozen is a clock that never moves, so that the examples' output is repeatable.
// Leave EmbeddedOptions.Clock nil for the real time.
func frozen() time.Time { return time.Unix(1_750_000_000, 0) }

func Example() {
	c, err := client.NewEmbedded(client.EmbeddedOptions{Clock: frozen})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	limit := client.Token(3, time.Second) // 3 at once, then one every 333.3 ms
	for range 4 {
		res, err := c.Allow(ctx, "user:42", limit)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("allowed=%v remaining=%d retry after %v\n", res.Allowed, res.Remaining, res.RetryAfter)
	}
	// Output:
	// allowed=true remaining=2 retry after 0s
	// allowed=true remaining=1 retry after 0s
	// allowed=true remaining=0 retry after 0s
	// allowed=false remaining=0 retry after 334ms
}

// New talks to rlserver, through a go-redis client with any options: the Client keeps
// each call within its budget and never lets go-redis re-send one.
func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6380"})
	defer rdb.Close()
	c, err := client.New(rdb) // each call: 50 ms at most
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Allow(context.Background(), "user:42", client.GCRA(100, time.Second, 20))
	switch {
	case errors.Is(err, client.ErrUnavailable):
		// Down, or slower than the budget: fail open (serve) or closed (refuse), as you decide.
	case err != nil:
		log.Fatal(err) // ErrBadLimit or ErrWrongType: a bug to fix, not a condition to handle
	case !res.Allowed:
		fmt.Println("come back in", res.RetryAfter)
	}
}

// NewLua runs the same limits on plain Redis, Valkey or a Redis Cluster.
func ExampleNewLua() {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"},
	})
	defer rdb.Close()
	c, err := client.NewLua(rdb, client.LuaOptions{Options: client.Options{Timeout: 20 * time.Millisecond}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Allow(context.Background(), "login:203.0.113.7", client.Slide(5, time.Minute))
	fmt.Println(res.Allowed, err)
}

// AllowN spends several units at once: here, a report worth 4 of a 10-a-minute quota.
func ExampleClient_AllowN() {
	c, err := client.NewEmbedded(client.EmbeddedOptions{Clock: frozen})
	if err != nil {
		log.Fatal(err)
	}
	limit := client.Fixed(10, time.Minute)
	for range 3 {
		res, err := c.AllowN(context.Background(), "reports:acme", limit, 4)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("allowed=%v remaining=%d\n", res.Allowed, res.Remaining)
	}
	// Output:
	// allowed=true remaining=6
	// allowed=true remaining=2
	// allowed=false remaining=2
}

// Peek answers as Allow would, and consumes nothing.
func ExampleClient_Peek() {
	c, err := client.NewEmbedded(client.EmbeddedOptions{Clock: frozen})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	limit := client.Log(2, time.Hour)
	for _, name := range []string{"peek", "peek", "allow", "peek"} {
		call := c.Peek
		if name == "allow" {
			call = c.Allow
		}
		res, err := call(ctx, "user:7", limit)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: allowed=%v remaining=%d\n", name, res.Allowed, res.Remaining)
	}
	// Output:
	// peek: allowed=true remaining=1
	// peek: allowed=true remaining=1
	// allow: allowed=true remaining=1
	// peek: allowed=true remaining=0
}

// Leaky shapes rather than refuses: an allowed Result's RetryAfter is the caller's
// turn in the queue, the time to wait before going ahead.
func ExampleLeaky() {
	c, err := client.NewEmbedded(client.EmbeddedOptions{Clock: frozen})
	if err != nil {
		log.Fatal(err)
	}
	limit := client.Leaky(2, time.Second, 2) // one leaves every 500 ms, two may wait
	for range 4 {
		res, err := c.Allow(context.Background(), "jobs", limit)
		if err != nil {
			log.Fatal(err)
		}
		if res.Allowed {
			fmt.Println("go in", res.RetryAfter)
		} else {
			fmt.Println("denied, the queue has room in", res.RetryAfter)
		}
	}
	// Output:
	// go in 0s
	// go in 500ms
	// go in 1s
	// denied, the queue has room in 500ms
}

// AllowAll checks a request against several limits at once: if one refuses, none
// consumes, so a request denied by its IP's limit does not use up its user's.
func ExampleClient_AllowAll() {
	c, err := client.NewEmbedded(client.EmbeddedOptions{Clock: frozen})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for range 3 {
		res, err := c.AllowAll(ctx,
			client.Rule{Key: "user:42", Limit: client.Fixed(100, time.Minute)},
			client.Rule{Key: "ip:203.0.113.7", Limit: client.Token(2, time.Second)})
		if err != nil {
			log.Fatal(err)
		}
		user, ip := res.Results[0], res.Results[1]
		fmt.Printf("allowed=%v user remaining=%d ip remaining=%d ip retry after %v\n",
			res.Allowed, user.Remaining, ip.Remaining, ip.RetryAfter)
	}
	// Output:
	// allowed=true user remaining=99 ip remaining=1 ip retry after 0s
	// allowed=true user remaining=98 ip remaining=0 ip retry after 0s
	// allowed=false user remaining=97 ip remaining=0 ip retry after 500ms
}

// Acquire limits the requests in flight: at most 2 exports at once per customer. A
// lease ends by itself after its time, so a process that crashes holding one does not
// keep its place for ever.
func ExampleClient_Acquire() {
	c, err := client.NewEmbedded(client.EmbeddedOptions{Clock: frozen})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for range 3 {
		lease, err := c.Acquire(ctx, "exports:acme", 2, time.Minute)
		if err != nil {
			log.Fatal(err)
		}
		defer lease.Release(ctx) // does nothing for a lease not acquired
		if !lease.Acquired {
			fmt.Println("busy, a place frees in", lease.RetryAfter)
			continue
		}
		fmt.Println("acquired, remaining", lease.Remaining)
	}
	// Output:
	// acquired, remaining 1
	// acquired, remaining 0
	// busy, a place frees in 1m0s
}

// Priorities keep a share of a limit for the classes above: of 10, batch calls get 5
// and critical ones the rest. The names are a policy's (docs/policies.md).
func ExamplePriorities() {
	c, err := client.NewEmbedded(client.EmbeddedOptions{Clock: frozen})
	if err != nil {
		log.Fatal(err)
	}
	p, err := client.NewPriorities(
		client.Class{Name: "critical"},
		client.Class{Name: "batch", ReservePercent: 50},
	)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	fleet := client.Fixed(10, time.Minute)
	call := func(class string) {
		l, err := p.Limit(fleet, class)
		if err != nil {
			log.Fatal(err)
		}
		res, err := c.Allow(ctx, "fleet", l)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-8s allowed=%v remaining=%d\n", class, res.Allowed, res.Remaining)
	}
	for range 6 {
		call("batch")
	}
	call("critical")
	// Output:
	// batch    allowed=true remaining=4
	// batch    allowed=true remaining=3
	// batch    allowed=true remaining=2
	// batch    allowed=true remaining=1
	// batch    allowed=true remaining=0
	// batch    allowed=false remaining=0
	// critical allowed=true remaining=4
}

// Allow decides one request. Unlike go-redis/redis_rate's, RetryAfter is 0 (not −1)
// when allowed: test Allowed.
func ExampleClient_Allow() {
	c, err := client.NewEmbedded(client.EmbeddedOptions{Clock: frozen})
	if err != nil {
		log.Fatal(err)
	}
	limit := client.GCRA(2, time.Second, 2) // 2 a second, bursts of 2
	for range 3 {
		res, err := c.Allow(context.Background(), "user:42", limit)
		if err != nil {
			log.Fatal(err) // errors.Is(err, client.ErrUnavailable): fail open or closed
		}
		fmt.Printf("allowed=%v remaining=%d retry after %v\n", res.Allowed, res.Remaining, res.RetryAfter)
	}
	// Output:
	// allowed=true remaining=1 retry after 0s
	// allowed=true remaining=0 retry after 0s
	// allowed=false remaining=0 retry after 500ms
}

// With Options.Fallback, a Client whose server is down (here, an address that
// refuses connections) goes on deciding in-process at this replica's share of the
// limit (1 of 2 replicas: 2 of 4), and says so in Degraded; its circuit breaker
// stops calling the server after a few failures, until a probe finds it back.
// Without it, the call returns ErrUnavailable, for the caller to fail open or closed.
func ExampleFallback() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	down := "redis://" + ln.Addr().String() + "/"
	ln.Close()

	c, err := client.Open(down, client.Options{Fallback: &client.Fallback{Replicas: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		res, err := c.Allow(context.Background(), "user:42", client.Token(4, time.Hour))
		fmt.Println(res.Allowed, res.Degraded, err)
	}
	bare, err := client.Open(down)
	if err != nil {
		log.Fatal(err)
	}
	defer bare.Close()
	_, err = bare.Allow(context.Background(), "user:42", client.Token(4, time.Hour))
	fmt.Println(errors.Is(err, client.ErrUnavailable))
	// Output:
	// true true <nil>
	// true true <nil>
	// false true <nil>
	// true
}
