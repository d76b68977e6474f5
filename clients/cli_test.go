package clients_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// cli runs redis-cli against addr with args (and stdin, if not empty) and returns
// its output, colours stripped, and whether it exited 0.
func cli(t *testing.T, bin, addr, stdin string, args ...string) (string, bool) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-h", host, "-p", port}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return ansi.ReplaceAllString(string(out), ""), err == nil
}

// ansi matches the colour escapes of redis-cli --cluster.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestRedisCLI runs redis-cli's modes on one rlserver (its clock frozen): commands
// in RESP2 and RESP3, --pipe, --scan, --memkeys, --bigkeys, --hotkeys, MONITOR; and
// --cluster check on three rlserver nodes, whose verdict lines must be those of a
// real Redis Cluster's.
func TestRedisCLI(t *testing.T) {
	t.Parallel()
	_, bin := redisTools(t)
	addr := rlServer(t)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()

	t.Run("commands", func(t *testing.T) {
		for _, proto := range []string{"-2", "-3"} {
			key := "cli" + proto
			var got []string
			for range 4 {
				out, ok := cli(t, bin, addr, "", proto, "RL.FIXED", key, "3", "60000")
				got = append(got, strings.Join(strings.Fields(out), " ")+fmt.Sprint(" ", ok))
			}
			want := []string{"1 3 2 0 60000 true", "1 3 1 0 60000 true", "1 3 0 0 60000 true", "0 3 0 60000 60000 true"}
			if !slices.Equal(got, want) {
				t.Errorf("redis-cli %s RL.FIXED %s 3 60000, 4 times: %q, want %q", proto, key, got, want)
			}
			// redis-cli prints an error reply and exits 0, as it does with Redis.
			if out, ok := cli(t, bin, addr, "", proto, "RL.FIXED", key, "0", "60000"); strings.TrimSpace(out) != "ERR limit must be an integer between 1 and 1000000000" || !ok {
				t.Errorf("redis-cli %s RL.FIXED with limit 0: %q (exit 0: %v)", proto, out, ok)
			}
		}
	})

	t.Run("--pipe and --scan", func(t *testing.T) {
		var in strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&in, "RL.TOKEN cli:pipe:%d 5 60000\r\n", i)
		}
		out, ok := cli(t, bin, addr, in.String(), "--pipe")
		if !ok || !strings.Contains(out, "errors: 0, replies: 1000") {
			t.Errorf("redis-cli --pipe of 1000 RL.TOKEN: %q (exit 0: %v), want errors: 0, replies: 1000", out, ok)
		}
		// PEEK answers what a call would: 1 allowed, 3 left after the pipe's call and this one.
		if v, err := rdb.Do(ctx, "RL.TOKEN", "cli:pipe:999", 5, 60000, "PEEK").Int64Slice(); err != nil || v[0] != 1 || v[2] != 3 {
			t.Errorf("cli:pipe:999 after the --pipe: %v %v, want allowed, 3 remaining", v, err)
		}
		out, ok = cli(t, bin, addr, "", "--scan", "--pattern", "cli:pipe:*")
		if n := len(strings.Fields(out)); !ok || n != 1000 {
			t.Errorf("redis-cli --scan --pattern cli:pipe:*: %d keys (exit 0: %v), want 1000", n, ok)
		}
	})

	// The key-space reports, each over a keyspace of 1002 keys (the two of "commands"
	// and the thousand of the pipe): Redis's own summary line, exit 0.
	for _, mode := range []string{"--memkeys", "--bigkeys", "--hotkeys"} {
		t.Run(mode, func(t *testing.T) {
			n := rdb.DBSize(ctx).Val()
			out, ok := cli(t, bin, addr, "", mode)
			if want := fmt.Sprintf("Sampled %d keys in the keyspace!", n); !ok || !strings.Contains(out, want) {
				t.Errorf("redis-cli %s: exit 0: %v, want %q in:\n%s", mode, ok, want, tail(out))
			}
		})
	}
	t.Run("--memkeys counts MEMORY USAGE", func(t *testing.T) {
		keys, _, err := rdb.ScanType(ctx, 0, "*", 10000, "rl.fixed").Result()
		if err != nil || len(keys) == 0 {
			t.Fatalf("SCAN TYPE rl.fixed: %v %v", keys, err)
		}
		var bytes int64
		for _, k := range keys {
			bytes += rdb.MemoryUsage(ctx, k).Val()
		}
		out, _ := cli(t, bin, addr, "", "--memkeys")
		if want := fmt.Sprintf("%d rl.fixeds with %d bytes", len(keys), bytes); !strings.Contains(out, want) {
			t.Errorf("redis-cli --memkeys: want %q (the MEMORY USAGE of the rl.fixed keys) in:\n%s", want, tail(out))
		}
	})

	t.Run("MONITOR", func(t *testing.T) {
		host, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bin, "-h", host, "-p", port, "MONITOR")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Wait()
		defer cmd.Process.Kill()
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		want := `"RL.FIXED" "cli:monitored" "3" "60000"`
		timeout := time.After(10 * time.Second)
		var seen []string
		for sent := false; ; {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("redis-cli MONITOR ended after %q", seen)
				}
				seen = append(seen, l)
				if l == "OK" && !sent { // MONITOR is on: a command from another connection
					if err := rdb.Do(ctx, "RL.FIXED", "cli:monitored", 3, 60000).Err(); err != nil {
						t.Fatal(err)
					}
					sent = true
				}
				if strings.HasSuffix(l, want) {
					return
				}
			case <-timeout:
				t.Fatalf("no %s in redis-cli MONITOR's stream within 10 s, only %q", want, seen)
			}
		}
	})

	t.Run("--cluster check", func(t *testing.T) {
		verdicts := func(addrs []string) []string {
			out, ok := cli(t, bin, addrs[0], "", "--cluster", "check", addrs[0])
			if !ok {
				t.Errorf("redis-cli --cluster check %s failed:\n%s", addrs[0], out)
			}
			var v []string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "[") || strings.HasPrefix(l, ">>>") {
					v = append(v, strings.ReplaceAll(l, addrs[0], "<addr>"))
				}
			}
			return v
		}
		want, got := verdicts(redisCluster(t)), verdicts(rlCluster(t, 3))
		if !slices.Equal(got, want) {
			t.Errorf("redis-cli --cluster check on rlserver:\n%s\non a Redis Cluster:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
