package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/lab"
)

// nonatomicUsers and crashes are the lesson's setup: 200 users, the client dying
// between its two commands for 1 user in 10.
const nonatomicUsers = 200

func crashes(user int) bool { return user%10 == 7 }

// nonatomicResult is nonatomic.json.
type nonatomicResult struct {
	Users int            `json:"users"`
	Rows  []nonatomicRow `json:"rows"`
}

// nonatomicRow is how many of Users keys one way of limiting left without a TTL.
type nonatomicRow struct {
	Side       string `json:"side"`
	Mode       string `json:"mode"`
	WithoutTTL int    `json:"without_ttl"`
	Lesson     int    `json:"lesson"` // -1: the lesson has no figure
}

// runNonatomic is the lesson's crash test: INCR then EXPIRE as two commands, the
// client crashing between them 1 in 10, leaves keys without a TTL for ever (the
// lesson: 20/200). A script, or an rlserver call, is one atomic command: the same
// crashes cannot leave half a call behind, for any algorithm.
func runNonatomic(ctx context.Context, _ config, e *env, w io.Writer) (any, error) {
	res := nonatomicResult{Users: nonatomicUsers}
	tag := fmt.Sprintf("nonatomic:%d:", time.Now().UnixNano())
	if r, ok := e.side("redis+lua"); ok {
		prefix := tag + "incr-expire:"
		for u := range nonatomicUsers {
			key := prefix + strconv.Itoa(u)
			if err := r.client.Incr(ctx, key).Err(); err != nil {
				return nil, err
			}
			if crashes(u) {
				continue // the client died between its two commands
			}
			if err := r.client.Expire(ctx, key, time.Minute).Err(); err != nil {
				return nil, err
			}
		}
		n, err := withoutTTL(ctx, r.client, prefix, nonatomicUsers)
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, nonatomicRow{r.name, "INCR + EXPIRE, crash 1 in 10", n, 20})
	}
	for _, tg := range e.targets {
		for _, k := range kinds {
			prefix := tag + k.Command() + ":"
			pipe := tg.client.Pipeline()
			for u := range nonatomicUsers {
				tg.call(ctx, pipe, prefix+strconv.Itoa(u), lab.Request(k, 10, 60_000))
				// A crash here, after the one command, cannot leave half a call behind.
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return nil, fmt.Errorf("%s %s: %w", tg.name, k.Command(), err)
			}
			n, err := withoutTTL(ctx, tg.client, prefix, nonatomicUsers)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", tg.name, k.Command(), err)
			}
			lesson := -1
			if tg.script {
				lesson = 0
			}
			res.Rows = append(res.Rows, nonatomicRow{tg.name, k.Command(), n, lesson})
		}
	}
	fmt.Fprintf(w, "keys left without a TTL, of %d users:\n", nonatomicUsers)
	t := newTable("side", "mode", "without TTL", "lesson")
	for _, r := range res.Rows {
		t.row(r.Side, r.Mode, strconv.Itoa(r.WithoutTTL), count(r.Lesson))
	}
	t.write(w)
	return res, nil
}

// withoutTTL counts the keys prefix0 .. prefix(n-1) that exist without a TTL,
// failing if any is missing: every call above creates its key.
func withoutTTL(ctx context.Context, c *redis.Client, prefix string, n int) (int, error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.DurationCmd, n)
	for u := range n {
		cmds[u] = pipe.PTTL(ctx, prefix+strconv.Itoa(u))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	without := 0
	for u, cmd := range cmds {
		switch d := cmd.Val(); {
		case d == -2:
			return 0, errors.New(prefix + strconv.Itoa(u) + ": missing")
		case d < 0:
			without++
		}
	}
	return without, nil
}
