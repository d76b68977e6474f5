package resp_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/testenv"
	"github.com/rlserver/rlserver/resp"
)

// commandCategories reads COMMAND's ACL categories (the 7th field of each entry),
// subcommands' under their full names.
func commandCategories(t *testing.T, addr string) map[string][]string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer rdb.Close()
	v, err := rdb.Do(context.Background(), "COMMAND").Slice()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	var walk func(entries []any)
	walk = func(entries []any) {
		for _, e := range entries {
			f := e.([]any)
			var cats []string
			for _, c := range f[6].([]any) {
				cats = append(cats, fmt.Sprint(c))
			}
			slices.Sort(cats)
			out[fmt.Sprint(f[0])] = cats
			if len(f) > 9 {
				walk(f[9].([]any))
			}
		}
	}
	walk(v)
	return out
}

// TestACLCategoriesAsRedis: every command and subcommand rlserver shares with
// Redis 7.0 is in Redis's ACL categories (COMMAND INFO's 7th field), so that
// rules naming them (-@dangerous, +@read) mean on rlserver what they mean on Redis.
func TestACLCategoriesAsRedis(t *testing.T) {
	redisCats := commandCategories(t, testenv.StartRedis(t))
	rlCats := commandCategories(t, testenv.StartServer(t, resp.Config{}))
	shared := 0
	for name, cats := range rlCats {
		want, ok := redisCats[name]
		if !ok {
			continue
		}
		shared++
		if !slices.Equal(cats, want) {
			t.Errorf("%s: %v, Redis %v", name, cats, want)
		}
	}
	if shared < 50 {
		t.Fatalf("only %d commands shared with Redis", shared)
	}
}

// TestCommandFlagsAsRedis: COMMAND's no_auth and no_multi flags are Redis 7.0's for
// every command both have. (Other flags differ where rlserver's commands behave
// otherwise, as "loading" where a replica serves them while it loads.)
func TestCommandFlagsAsRedis(t *testing.T) {
	flags := func(addr string) map[string][]string {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
		defer rdb.Close()
		v, err := rdb.Do(context.Background(), "COMMAND").Slice()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		var walk func(entries []any)
		walk = func(entries []any) {
			for _, e := range entries {
				f := e.([]any)
				var keep []string
				for _, fl := range f[2].([]any) {
					if s := fmt.Sprint(fl); s == "no_auth" || s == "no_multi" {
						keep = append(keep, s)
					}
				}
				slices.Sort(keep)
				out[fmt.Sprint(f[0])] = keep
				if len(f) > 9 {
					walk(f[9].([]any))
				}
			}
		}
		walk(v)
		return out
	}
	redisFlags, rlFlags := flags(testenv.StartRedis(t)), flags(testenv.StartServer(t, resp.Config{}))
	for name, got := range rlFlags {
		if want, ok := redisFlags[name]; ok && !slices.Equal(got, want) {
			t.Errorf("%s: %v, Redis %v", name, got, want)
		}
	}
}
