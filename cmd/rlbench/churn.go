package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/internal/lab"
	"github.com/rlserver/rlserver/internal/launch"
)

// churnResult is churn.json: RSS through a user population's life on one rlserver
// process, in bytes.
type churnResult struct {
	Users      int           `json:"users"`
	Life       time.Duration `json:"life_ns"`
	Rate       int           `json:"calls_per_s"`
	Base       int64         `json:"rss_before"`
	Loaded     int64         `json:"rss_loaded"`
	SteadyMin  int64         `json:"rss_steady_min"`
	SteadyMax  int64         `json:"rss_steady_max"`
	SteadyKeys []int64       `json:"steady_keys"` // DBSIZE at each sample
	Gone       int64         `json:"rss_gone_60s"`
	GoneAfter  time.Duration `json:"gone_after_ns"` // from the end of the traffic to DBSIZE 0
}

// runChurn answers the question a user asks of a server's memory over time: does RSS
// hold steady while users come and go, and does it go back to the OS when they are
// gone? On a newly started rlserver process it loads -users users (RL.GCRA user:%08d 1
// <life>: a key lives -churn-life after its last admitted call), reads RSS, then for
// -churn-time sends calls to random users at users/life per second, so that keys
// expire and come back all the time, sampling RSS and DBSIZE every 10 s; then it stops
// the traffic, waits for DBSIZE 0 and reads RSS a minute later.
func runChurn(ctx context.Context, cfg config, w io.Writer) (churnResult, error) {
	res := churnResult{Users: cfg.users, Life: cfg.churnLife}
	res.Rate = max(1, int(float64(cfg.users)/cfg.churnLife.Seconds()))
	dir, bin, err := rlserverIn(ctx, cfg.rlserverBin, "churn")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	p, err := launch.RLServer(bin, dir, "-loglevel", "WARN")
	if err != nil {
		return res, err
	}
	defer p.Kill()
	addr := p.Addr
	c := newClient(addr)
	defer c.Close()
	rss := func() (int64, error) {
		u, err := memoryOf(ctx, c)
		return u.rss, err
	}
	if res.Base, err = rss(); err != nil {
		return res, err
	}
	life := strconv.FormatInt(cfg.churnLife.Milliseconds(), 10)
	call := func(i int) []string { return []string{"RL.GCRA", memoryKey(i), "1", life} }
	bar := newProgress(cfg.users, "load")
	err = lab.Bulk(ctx, addr, cfg.users, call, bar.add)
	bar.done()
	if err != nil {
		return res, err
	}
	time.Sleep(time.Second)
	if res.Loaded, err = rss(); err != nil {
		return res, err
	}
	fmt.Fprintf(w, "loaded %d users: RSS %s (before: %s)\n", cfg.users, mb(res.Loaded), mb(res.Base))

	res.SteadyMin, res.SteadyMax = res.Loaded, res.Loaded
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(int) []string { return call(rng.IntN(cfg.users)) }
	end := time.Now().Add(cfg.churnTime)
	next := time.Now().Add(10 * time.Second)
	for time.Now().Before(end) {
		second := time.Now()
		if err := lab.Bulk(ctx, addr, res.Rate, random, func(int) {}); err != nil {
			return res, err
		}
		if time.Now().After(next) {
			next = next.Add(10 * time.Second)
			r, err := rss()
			if err != nil {
				return res, err
			}
			keys, err := c.DBSize(ctx).Result()
			if err != nil {
				return res, err
			}
			res.SteadyMin, res.SteadyMax = min(res.SteadyMin, r), max(res.SteadyMax, r)
			res.SteadyKeys = append(res.SteadyKeys, keys)
			fmt.Fprintf(w, "steady %4.0f s: %d keys, RSS %s (%.3f of loaded)\n",
				cfg.churnTime.Seconds()-time.Until(end).Seconds(), keys, mb(r), float64(r)/float64(res.Loaded))
		}
		sleepCtx(ctx, time.Until(second.Add(time.Second)))
	}

	stopped := time.Now()
	for {
		keys, err := c.DBSize(ctx).Result()
		if err != nil {
			return res, err
		}
		if keys == 0 {
			break
		}
		if time.Since(stopped) > cfg.churnLife+time.Minute {
			return res, fmt.Errorf("%d keys left %s after the traffic stopped", keys, time.Since(stopped).Round(time.Second))
		}
		sleepCtx(ctx, time.Second)
	}
	res.GoneAfter = time.Since(stopped)
	sleepCtx(ctx, time.Minute)
	if res.Gone, err = rss(); err != nil {
		return res, err
	}
	fmt.Fprintf(w, "steady traffic, %d calls/s for %s: RSS %.3f-%.3f of loaded\n", res.Rate, cfg.churnTime,
		float64(res.SteadyMin)/float64(res.Loaded), float64(res.SteadyMax)/float64(res.Loaded))
	fmt.Fprintf(w, "all gone %s after the traffic stopped; a minute later RSS %s, %.3f of loaded\n",
		res.GoneAfter.Round(time.Second), mb(res.Gone), float64(res.Gone)/float64(res.Loaded))
	return res, ctx.Err()
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
