package client_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// TestBatchOptions: a bad Options.Batch is refused at construction, in plain words.
func TestBatchOptions(t *testing.T) {
	rdb := newRedis(t, testenv.DeadAddr(t))
	for _, c := range []struct {
		b    client.Batch
		want string // "" when valid
	}{
		{client.Batch{}, ""},
		{client.Batch{Off: true}, ""},
		{client.Batch{Lanes: 1, MaxCalls: 1}, ""},
		{client.Batch{Lanes: -1}, "Options.Batch.Lanes must be between 1 and 1024 (0: 1), got -1"},
		{client.Batch{Lanes: 1025}, "Options.Batch.Lanes must be between 1 and 1024"},
		{client.Batch{MaxCalls: -5}, "Options.Batch.MaxCalls must be 1 or more (0: 256), got -5"},
		{client.Batch{Off: true, Lanes: 2}, "Options.Batch.Off sends each call on its own: Lanes and MaxCalls must be 0, got 2 and 0"},
	} {
		for _, construct := range constructors {
			_, err := construct(rdb, client.Options{Batch: c.b})
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("%+v: %v, want %q", c.b, err, c.want)
			}
		}
	}
}

// pipelines is a go-redis hook that counts the pipelines and their commands, and can
// hold the next pipeline until released.
type pipelines struct {
	count, cmds, largest atomic.Int64
	mu                   sync.Mutex
	sent                 []string // every command sent, its words joined
	hold                 chan struct{}
	held                 chan struct{} // closed when a pipeline is held
}

func (p *pipelines) DialHook(next redis.DialHook) redis.DialHook { return next }

func (p *pipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (p *pipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if name := cmds[0].Name(); name == "hello" || name == "client" {
			return next(ctx, cmds) // go-redis's handshake on a new connection
		}
		p.count.Add(1)
		p.cmds.Add(int64(len(cmds)))
		for n := p.largest.Load(); int64(len(cmds)) > n && !p.largest.CompareAndSwap(n, int64(len(cmds))); n = p.largest.Load() {
		}
		p.mu.Lock()
		for _, c := range cmds {
			p.sent = append(p.sent, fmt.Sprintln(c.Args()...))
		}
		hold, held := p.hold, p.held
		p.hold, p.held = nil, nil
		p.mu.Unlock()
		if hold != nil {
			close(held)
			<-hold
		}
		return next(ctx, cmds)
	}
}

// holdNext makes the next pipeline wait until the returned release is called; held
// is closed once it waits.
func (p *pipelines) holdNext() (held <-chan struct{}, release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hold := make(chan struct{})
	p.hold, p.held = hold, make(chan struct{})
	return p.held, sync.OnceFunc(func() { close(hold) })
}

// sentOn counts the commands sent on key.
func (p *pipelines) sentOn(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.sent {
		if strings.Contains(s, " "+key+" ") {
			n++
		}
	}
	return n
}

// batched is a Client on a new rlserver or redis-server (lua) with batching b, and
// the hook watching its pipelines.
func batched(t *testing.T, lua bool, b client.Batch, timeout time.Duration) (*client.Client, *pipelines) {
	t.Helper()
	var addr string
	if lua {
		addr = testenv.StartRedis(t)
	} else {
		addr = testenv.StartServer(t, resp.Config{})
	}
	rdb := newRedis(t, addr)
	p := &pipelines{}
	rdb.AddHook(p)
	construct := constructors[0]
	if lua {
		construct = constructors[1]
	}
	c, err := construct(rdb, client.Options{Timeout: timeout, Batch: b})
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// bothServers runs f against rlserver and against redis-server with the scripts.
func bothServers(t *testing.T, f func(t *testing.T, lua bool)) {
	for _, lua := range []bool{false, true} {
		t.Run(map[bool]string{false: "rlserver", true: "redis+lua"}[lua], func(t *testing.T) { f(t, lua) })
	}
}

// TestBatchExact: 64 goroutines × 20 calls, on one key with room for 300 and on keys
// of their own with room for 10, admit exactly 300 and 10 each, as unbatched calls do;
// and the calls did go out in pipelines of several.
func TestBatchExact(t *testing.T) {
	bothServers(t, func(t *testing.T, lua bool) {
		for _, b := range []client.Batch{{}, {Lanes: 4, MaxCalls: 7}} {
			t.Run(fmt.Sprintf("lanes %d max %d", b.Lanes, b.MaxCalls), func(t *testing.T) {
				c, p := batched(t, lua, b, testTimeout)
				shared, own := client.Token(300, 24*hour), client.Fixed(10, hour)
				var admitted, ownAdmitted [64]int
				var wg sync.WaitGroup
				errs := make(chan error, 64)
				for g := range 64 {
					wg.Go(func() {
						for range 20 {
							res, err := c.Allow(context.Background(), "shared", shared)
							if err != nil {
								errs <- err
								return
							}
							if res.Allowed {
								admitted[g]++
							}
							res, err = c.Allow(context.Background(), fmt.Sprint("own:", g), own)
							if err != nil {
								errs <- err
								return
							}
							if res.Allowed {
								ownAdmitted[g]++
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				total := 0
				for g := range 64 {
					total += admitted[g]
					if ownAdmitted[g] != 10 {
						t.Errorf("goroutine %d: %d of 20 admitted on its own key, want 10", g, ownAdmitted[g])
					}
				}
				if total != 300 {
					t.Errorf("%d of 1280 admitted on the shared key, want exactly 300", total)
				}
				if b.MaxCalls != 0 && p.largest.Load() > int64(b.MaxCalls) {
					t.Errorf("a pipeline of %d calls, above MaxCalls %d", p.largest.Load(), b.MaxCalls)
				}
				if p.largest.Load() < 2 || p.count.Load() >= 2560 {
					t.Errorf("%d pipelines, the largest of %d calls: the calls were not batched", p.count.Load(), p.largest.Load())
				}
				t.Logf("2560 calls in %d pipelines, the largest of %d", p.count.Load(), p.largest.Load())
			})
		}
	})
}

// TestBatchOrder: 32 goroutines each make 40 calls on a key of their own and on one
// shared key; each sees its own key's remaining go down one at a time, and the shared
// key's strictly decrease, as the server took them in order.
func TestBatchOrder(t *testing.T) {
	bothServers(t, func(t *testing.T, lua bool) {
		c, _ := batched(t, lua, client.Batch{Lanes: 2}, testTimeout)
		l := client.Fixed(100_000, hour)
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for g := range 32 {
			wg.Go(func() {
				own := fmt.Sprint("order:", g)
				last := 100_000
				for i := range 40 {
					res, err := c.Allow(context.Background(), own, l)
					if err == nil && res.Remaining != 100_000-1-i {
						err = fmt.Errorf("call %d on %s: remaining %d, want %d", i, own, res.Remaining, 100_000-1-i)
					}
					if err == nil {
						res, err = c.Allow(context.Background(), "order:shared", l)
					}
					if err == nil && res.Remaining >= last {
						err = fmt.Errorf("call %d on the shared key: remaining %d after %d", i, res.Remaining, last)
					}
					if err != nil {
						errs <- err
						return
					}
					last = res.Remaining
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// TestBatchNeverSent: a call whose context ends while it waits behind a pipeline that
// is out (held by a hook) returns at once with ErrUnavailable and its context's error,
// and is never sent: the server never counted it, and no pipeline held it.
func TestBatchNeverSent(t *testing.T) {
	bothServers(t, func(t *testing.T, lua bool) {
		c, p := batched(t, lua, client.Batch{Lanes: 1}, testTimeout)
		ctx := context.Background()
		l := client.Fixed(5, hour)
		held, release := p.holdNext()
		defer release()
		first := make(chan error, 1)
		go func() {
			_, err := c.Allow(ctx, "first", l)
			first <- err
		}()
		<-held
		canceled, cancel := context.WithCancel(ctx)
		waited := make(chan error, 1)
		go func() {
			_, err := c.Allow(canceled, "canceled", l)
			waited <- err
		}()
		short, cancelShort := context.WithTimeout(ctx, 20*ms)
		defer cancelShort()
		began := time.Now()
		if _, err := c.Allow(short, "expired", l); !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Allow past its deadline: %v, want ErrUnavailable and DeadlineExceeded", err)
		}
		if d := time.Since(began); d > 20*ms+500*ms {
			t.Errorf("a 20 ms budget returned after %v", d)
		}
		cancel()
		if err := <-waited; !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Allow canceled: %v, want ErrUnavailable and Canceled", err)
		}
		release()
		if err := <-first; err != nil {
			t.Fatalf("the held call: %v", err)
		}
		for _, key := range []string{"canceled", "expired"} {
			res, err := c.Peek(ctx, key, l)
			if err != nil || res.Remaining != 4 {
				t.Errorf("Peek %s: %+v, %v; want nothing consumed (remaining 4 after this call)", key, res, err)
			}
			if n := p.sentOn(key); n != 1 {
				t.Errorf("%d commands sent on %s, want 1 (the Peek)", n, key)
			}
		}
	})
}

// TestBatchStalled: calls on a server that never answers return ErrUnavailable with
// DeadlineExceeded within their own budget plus slack, though their pipeline is out
// and holds a call whose budget is a minute.
func TestBatchStalled(t *testing.T) {
	for _, lua := range []bool{false, true} {
		t.Run(map[bool]string{false: "rlserver", true: "redis+lua"}[lua], func(t *testing.T) {
			rdb := newRedis(t, testenv.StalledAddr(t))
			p := &pipelines{}
			rdb.AddHook(p)
			construct := constructors[0]
			if lua {
				construct = constructors[1]
			}
			c, err := construct(rdb, client.Options{Timeout: -1, Batch: client.Batch{Lanes: 1}})
			if err != nil {
				t.Fatal(err)
			}
			// A first pipeline, held, gathers the next calls into the lane's second.
			held, release := p.holdNext()
			defer release()
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*ms)
				defer cancel()
				c.Allow(ctx, "first", client.Fixed(1, sec))
			}()
			<-held
			long, cancelLong := context.WithTimeout(context.Background(), time.Minute)
			defer cancelLong()
			go c.Allow(long, "long", client.Fixed(1, sec))
			time.AfterFunc(20*ms, release)
			checkBudget(t, c, 64, 200*ms)
			if n := p.largest.Load(); n != 65 {
				t.Errorf("the largest pipeline held %d calls, want the 64 and the long one", n)
			}
		})
	}
}

// checkBudget makes n concurrent calls with a budget each and requires every one to
// return ErrUnavailable, with DeadlineExceeded, within the budget plus slack.
func checkBudget(t *testing.T, c *client.Client, n int, budget time.Duration) {
	t.Helper()
	const slack = 250 * ms // a loaded 2-core machine under -race
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			defer cancel()
			began := time.Now()
			_, err := c.Allow(ctx, fmt.Sprint("k", i%3), client.Fixed(1, sec))
			if d := time.Since(began); d > budget+slack {
				errs <- fmt.Errorf("call %d returned after %v with a budget of %v", i, d, budget)
			} else if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				errs <- fmt.Errorf("call %d: %v, want ErrUnavailable and DeadlineExceeded", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestBatchPaused: a redis-server paused with SIGSTOP while calls are in flight; each
// returns within its budget, and once it resumes, calls are answered again.
func TestBatchPaused(t *testing.T) {
	addr := testenv.StartRedis(t)
	rdb := newRedis(t, addr)
	c, err := client.NewLua(rdb, client.LuaOptions{Options: client.Options{Timeout: 100 * ms}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Allow(ctx, "warm", client.Fixed(1, sec)); err != nil {
		t.Fatal(err)
	}
	pid := redisPID(t, rdb)
	resume := pauseProcess(t, pid)
	resumed := false
	defer func() {
		if !resumed {
			resume()
		}
	}()
	checkBudget(t, c, 64, 100*ms)
	resume()
	resumed = true
	for deadline := time.Now().Add(5 * sec); ; time.Sleep(10 * ms) {
		_, err := c.Allow(ctx, "after", client.Fixed(10, sec))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer 5 s after SIGCONT: %v", err)
		}
	}
}

// redisPID is the process id of the redis-server rdb talks to.
func redisPID(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if pid, ok := strings.CutPrefix(line, "process_id:"); ok {
			var n int
			if _, err := fmt.Sscan(pid, &n); err == nil && n > 0 && n != os.Getpid() {
				return n
			}
		}
	}
	t.Fatalf("no process_id in INFO server: %q", info)
	return 0
}

// TestBatchSentOnce: a server that reads the calls and drops the connection without
// answering fails every call with ErrUnavailable, and receives each call once, though
// rdb has go-redis's default retries (MaxRetries 3): a batch is never re-sent, nor is
// a call sent alone (Batch.Off).
func TestBatchSentOnce(t *testing.T) {
	for _, b := range []client.Batch{{Lanes: 1}, {Off: true}} {
		t.Run(fmt.Sprintf("%+v", b), func(t *testing.T) { testSentOnce(t, b) })
	}
}

func testSentOnce(t *testing.T, b client.Batch) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var received atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r := bufio.NewReader(conn)
				for {
					words, err := readCommand(r)
					if err != nil {
						return
					}
					switch strings.ToUpper(words[0]) {
					case "RL.FIXED":
						received.Add(1)
						conn.SetReadDeadline(time.Now().Add(50 * ms)) // read the rest of the pipeline, then drop it
					case "HELLO": // go-redis's handshake: answered as Redis 5 does
						conn.Write([]byte("-ERR unknown command 'HELLO'\r\n"))
					default:
						conn.Write([]byte("+OK\r\n"))
					}
				}
			}()
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ContextTimeoutEnabled: true, Protocol: 2,
		DisableIdentity: true, MaxRetries: 3})
	defer rdb.Close()
	c, err := client.New(rdb, client.Options{Timeout: 2 * sec, Batch: b})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if _, err := c.Allow(context.Background(), fmt.Sprint("once:", i), client.Fixed(1, sec)); !errors.Is(err, client.ErrUnavailable) {
				t.Errorf("call %d: %v, want ErrUnavailable", i, err)
			}
		})
	}
	wg.Wait()
	if n := received.Load(); n != 16 {
		t.Errorf("the server received %d calls for 16 made", n)
	}
}

// readCommand reads one RESP command (an array of bulk strings) from r.
func readCommand(r *bufio.Reader) ([]string, error) {
	var n int
	if _, err := fmt.Fscanf(r, "*%d\r\n", &n); err != nil || n < 1 {
		return nil, fmt.Errorf("not a command: %v", err)
	}
	words := make([]string, n)
	for i := range words {
		var size int
		if _, err := fmt.Fscanf(r, "$%d\r\n", &size); err != nil {
			return nil, err
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		words[i] = string(b[:size])
	}
	return words, nil
}

// TestBatchNoScript: after SCRIPT FLUSH, concurrent batched calls get NOSCRIPT in
// their pipeline and fall back to EVAL: all succeed, and exactly the limit is admitted.
func TestBatchNoScript(t *testing.T) {
	b := redisLua(t)
	ctx := context.Background()
	if err := b.rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	l := client.Fixed(50, hour)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 4 {
				res, err := b.client.Allow(ctx, "noscript:batched", l)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Allowed {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := admitted.Load(); n != 50 {
		t.Errorf("%d of 128 admitted, want exactly 50", n)
	}
}

// TestBatchLanesExit: a lane's goroutine ends once its queue is empty, so a Client
// left without closing holds no goroutine.
func TestBatchLanesExit(t *testing.T) {
	c, p := batched(t, false, client.Batch{}, testTimeout)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() { c.Allow(context.Background(), fmt.Sprint("exit:", i), client.Fixed(10, sec)) })
	}
	wg.Wait()
	if p.count.Load() == 0 {
		t.Fatal("no pipeline sent")
	}
	for deadline := time.Now().Add(2 * sec); ; time.Sleep(10 * ms) {
		buf := make([]byte, 1<<20)
		n := strings.Count(string(buf[:runtime.Stack(buf, true)]), "(*batcher).run")
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d lane goroutines 2 s after the calls", n)
		}
	}
}

// TestBatchOff: with batching off, each call goes on its own: a pipeline of one (the
// form go-redis does not retry), never with another call.
func TestBatchOff(t *testing.T) {
	c, p := batched(t, false, client.Batch{Off: true}, testTimeout)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if _, err := c.Allow(context.Background(), fmt.Sprint("off:", i), client.Fixed(1, sec)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n, largest := p.count.Load(), p.largest.Load(); n != 16 || largest != 1 {
		t.Errorf("%d pipelines, the largest of %d commands, for 16 calls with batching off", n, largest)
	}
}

// TestBatchRingStalledShard: on a Ring whose second shard accepts and never answers,
// calls on the first shard's keys are answered while a call on the second's holds
// its pipeline out: each shard has lanes of its own.
func TestBatchRingStalledShard(t *testing.T) {
	liveAddr := testenv.StartServer(t, resp.Config{})
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"live": liveAddr, "stalled": testenv.StalledAddr(t)},
		ContextTimeoutEnabled: true, MaxRetries: -1})
	defer ring.Close()
	c, err := client.New(ring, client.Options{Timeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	var live, stalled []string
	for i := 0; len(live) < 16 || len(stalled) == 0; i++ {
		key := fmt.Sprint("ring:", i)
		shard, err := ring.GetShardClientForKey(key)
		if err != nil {
			t.Fatal(err)
		}
		if shard.Options().Addr == liveAddr {
			live = append(live, key)
		} else {
			stalled = append(stalled, key)
		}
	}
	long, cancelLong := context.WithTimeout(context.Background(), time.Minute)
	defer cancelLong()
	go c.Allow(long, stalled[0], client.Fixed(1, sec)) // out for a minute on the stalled shard
	time.Sleep(20 * ms)
	var wg sync.WaitGroup
	for _, key := range live {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*sec)
			defer cancel()
			if res, err := c.Allow(ctx, key, client.Fixed(1, sec)); err != nil || !res.Allowed {
				t.Errorf("Allow %s on the live shard: %+v, %v", key, res, err)
			}
		})
	}
	wg.Wait()
}
