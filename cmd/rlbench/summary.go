package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// summaryRow is one experiment's headline figure on each side and in the lesson;
// "-" where a side is absent or the lesson has no figure.
type summaryRow struct {
	experiment, figure, redisLua, rlserver, lesson string
}

// headliner is an experiment result that has a headline figure for summary.md.
type headliner interface {
	headline() summaryRow
}

// writeSummary writes dir/summary.md: one markdown table, a row per experiment.
func writeSummary(dir string, rows []summaryRow) error {
	if dir == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("| experiment | headline figure | redis+lua | rlserver | lesson (redis+lua) |\n")
	b.WriteString("|---|---|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.experiment, r.figure, r.redisLua, r.rlserver, r.lesson)
	}
	return os.WriteFile(filepath.Join(dir, "summary.md"), []byte(b.String()), 0o644)
}

func (r boundaryResult) headline() summaryRow {
	row := summaryRow{"boundary", fmt.Sprintf("most admitted in any 1 s, limit %d: rl.fixed / rl.log", r.Limit), "-", "-", "200 / 100"}
	var fixed, log boundaryRow
	for _, a := range r.Rows {
		switch a.Algorithm {
		case "rl.fixed":
			fixed = a
		case "rl.log":
			log = a
		}
	}
	if fixed.RedisLua >= 0 {
		row.redisLua = count(fixed.RedisLua) + " / " + count(log.RedisLua)
	}
	if fixed.RLServer >= 0 {
		row.rlserver = count(fixed.RLServer) + " / " + count(log.RLServer)
	}
	return row
}

// headline is INCR+EXPIRE's keys without a TTL beside the most any atomic call
// (script or rlserver command) left: the lesson's 20 and 0.
func (r nonatomicResult) headline() summaryRow {
	row := summaryRow{"nonatomic", fmt.Sprintf("keys without a TTL of %d, crash 1 in 10: INCR+EXPIRE / atomic", r.Users), "-", "-", "20 / 0"}
	split, atomic := -1, map[string]int{}
	for _, a := range r.Rows {
		if strings.HasPrefix(a.Mode, "INCR") {
			split = a.WithoutTTL
			continue
		}
		atomic[a.Side] = max(atomic[a.Side], a.WithoutTTL)
	}
	if n, ok := atomic["redis+lua"]; ok {
		row.redisLua = count(split) + " / " + count(n)
	}
	if n, ok := atomic["rlserver"]; ok {
		row.rlserver = count(n)
	}
	return row
}

func (r memoryResult) headline() summaryRow {
	row := summaryRow{"memory", "rl.log bytes per user, 100 entries (RSS growth, no purge)", "-", "-", "1,499"}
	for _, a := range r.Rows {
		if a.Algorithm == "rl.log" {
			row.redisLua, row.rlserver = perUser(a.RedisRSS), perUser(a.ServerRSS)
		}
	}
	return row
}

// headline is the range of p50 over the algorithms at depth 1, one client: the
// lesson's setting.
func (r benchResult) headline() summaryRow {
	return summaryRow{"bench", "p50 ms of the algorithms, depth 1, 1 client (min–max)",
		p50Range(r.Rows, "redis+lua"), p50Range(r.Rows, "rlserver"), "≈0.08"}
}

// p50Range is "lo–hi", the range of side's p50 over the algorithms at depth 1,
// one client; "-" without such rows.
func p50Range(rows []benchRow, side string) string {
	lo, hi := -1.0, -1.0
	for _, a := range rows {
		if a.Side != side || a.Command == "GET" || a.Depth != 1 || a.Clients != 1 {
			continue
		}
		if lo < 0 || a.P50Ms < lo {
			lo = a.P50Ms
		}
		hi = max(hi, a.P50Ms)
	}
	if lo < 0 {
		return "-"
	}
	return ms(lo) + "–" + ms(hi)
}

func (r overheadResult) headline() summaryRow {
	row := summaryRow{"overhead", "p50 ms added by the middleware to an HTTP endpoint", "-", "-", "+0.04"}
	for _, a := range r.Rows {
		switch a.Endpoint {
		case "middleware, redis+lua":
			row.redisLua = fmt.Sprintf("%+.3f", a.AddedP50Ms)
		case "middleware, rlserver":
			row.rlserver = fmt.Sprintf("%+.3f", a.AddedP50Ms)
		}
	}
	return row
}

func (r e2eResult) headline() summaryRow {
	row := summaryRow{"e2e", fmt.Sprintf("allowed of expected (error), %d replicas, %d/s global", r.Replicas, r.Limit),
		"-", "-", "5,493 of 5,500 (0.127%)"}
	for _, a := range r.Rows {
		cell := fmt.Sprintf("%d of %.0f (%.3f%%)", a.Allowed, a.Expected, a.ErrorPct)
		switch a.Side {
		case "redis+lua":
			row.redisLua = cell
		case "rlserver":
			row.rlserver = cell
		}
	}
	return row
}
