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
