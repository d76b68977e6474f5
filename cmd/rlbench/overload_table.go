package main

import (
	"fmt"
	"io"
	"strings"
)

// The targets at the highest load (issue 35): critical success, critical p99 against
// its p99 at the lowest load, health checks, goodput, and the cost of a refusal
// against a served request.
const (
	targetCritical = 0.999
	targetP99Ratio = 2
	targetHealth   = 1
	targetGoodput  = 0.9
	targetCost     = 30
)

// writeOverloadTable prints one row per configuration and load.
func writeOverloadTable(w io.Writer, res []overloadCell) {
	t := newTable("config", "load", "critical", "crit p50", "crit p99", "sheddable", "goodput", "health", "served", "refused", "cost ×", "limit")
	for _, r := range res {
		refused, ratio := "-", "-"
		if r.RefusedUs > 0 {
			refused = fmt.Sprintf("%.0f µs", r.RefusedUs)
			ratio = fmt.Sprintf("%.0f", r.ServedUs/r.RefusedUs)
		}
		limit := "-"
		if r.Limit > 0 {
			limit = fmt.Sprint(r.Limit)
		}
		t.row(r.Conf, fmt.Sprintf("%.1fx", r.Load), overloadPct(r.Critical), overloadMs(r.CriticalP50), overloadMs(r.CriticalP99),
			overloadPct(r.Sheddable), fmt.Sprintf("%.0f%%", r.Goodput*100), overloadPct(r.Health),
			fmt.Sprintf("%.1f ms", r.ServedUs/1e3), refused, ratio, limit)
	}
	t.write(w)
	for _, conf := range overloadConfs {
		lo, hi, ok := overloadEnds(res, overloadConfNames[conf])
		if !ok {
			continue
		}
		if failed := overloadMissed(lo, hi); len(failed) == 0 {
			fmt.Fprintf(w, "targets at %.1fx: %s meets all\n", hi.Load, hi.Conf)
		} else {
			fmt.Fprintf(w, "targets at %.1fx: %s fails %s\n", hi.Load, hi.Conf, strings.Join(failed, ", "))
		}
	}
}

// overloadEnds is conf's cells at the lowest and highest load.
func overloadEnds(res []overloadCell, conf string) (lo, hi overloadCell, ok bool) {
	for _, r := range res {
		if r.Conf != conf {
			continue
		}
		if !ok || r.Load < lo.Load {
			lo = r
		}
		if !ok || r.Load > hi.Load {
			hi = r
		}
		ok = true
	}
	return lo, hi, ok
}

// overloadMissed names the targets hi misses, lo being the same configuration at the lowest
// load. A configuration that refused nothing has no refusal cost to miss.
func overloadMissed(lo, hi overloadCell) []string {
	var m []string
	if hi.Critical < targetCritical {
		m = append(m, "critical "+overloadPct(hi.Critical))
	}
	if lo.CriticalP99 == 0 || hi.CriticalP99 > targetP99Ratio*lo.CriticalP99 {
		m = append(m, fmt.Sprintf("critical p99 %.1fx of %.1fx load's", hi.CriticalP99/lo.CriticalP99, lo.Load))
	}
	if hi.Health < targetHealth {
		m = append(m, "health "+overloadPct(hi.Health))
	}
	if hi.Goodput < targetGoodput {
		m = append(m, fmt.Sprintf("goodput %.0f%%", hi.Goodput*100))
	}
	if hi.RefusedUs > 0 && hi.ServedUs/hi.RefusedUs < targetCost {
		m = append(m, fmt.Sprintf("a refusal only %.0fx cheaper", hi.ServedUs/hi.RefusedUs))
	}
	return m
}

// overloadHeadline is the last line, in issue 35's shape.
func overloadHeadline(res []overloadCell) string {
	lo, hi, _ := overloadEnds(res, overloadConfNames[confShed])
	_, static, _ := overloadEnds(res, overloadConfNames[confStatic])
	_, fs, _ := overloadEnds(res, overloadConfNames[confFailsafe])
	_, none, _ := overloadEnds(res, overloadConfNames[confNone])
	flo, fhi, _ := overloadEnds(res, overloadConfNames[confFleet])
	return fmt.Sprintf("overload: at %.1fx capacity critical %s p99 %.1f ms (%.1fx of %.1fx load), health %s, goodput %.0f%%, a refusal %.0fx cheaper than a serve; no shedding critical %s goodput %.0f%%; static limit critical %s; failsafe-go critical %s; fleet (3 replicas, RL.ACQUIRE RESERVE) critical %s p99 %.1fx, goodput %.0f%%",
		hi.Load, overloadPct(hi.Critical), hi.CriticalP99, hi.CriticalP99/lo.CriticalP99, lo.Load, overloadPct(hi.Health), hi.Goodput*100,
		hi.ServedUs/max(hi.RefusedUs, 1e-3), overloadPct(none.Critical), none.Goodput*100, overloadPct(static.Critical), overloadPct(fs.Critical),
		overloadPct(fhi.Critical), fhi.CriticalP99/flo.CriticalP99, fhi.Goodput*100)
}

// writeFleetChecks prints, per configuration 5 cell, the most leases live against the
// fleet limit and the most sheddable ones against their share, and returns an error
// naming the cells that went over.
func writeFleetChecks(w io.Writer, res []overloadCell) error {
	var over []string
	for _, r := range res {
		if r.Conf != overloadConfNames[confFleet] {
			continue
		}
		share := r.Limit - r.FleetReserve
		fmt.Fprintf(w, "fleet at %.1fx: limit %d, most live %d by RL.ACQUIRE's answers and %d held by the replicas; sheddable held %d, %d allowed (RESERVE %d)\n",
			r.Load, r.Limit, r.FleetMax, r.FleetHeld, r.SheddableHeld, share, r.FleetReserve)
		if r.FleetMax > r.Limit || r.FleetHeld > r.Limit || r.SheddableHeld > share {
			over = append(over, fmt.Sprintf("%.1fx", r.Load))
		}
	}
	if over != nil {
		return fmt.Errorf("overload: the fleet limit was exceeded at %s", strings.Join(over, ", "))
	}
	return nil
}

func overloadPct(v float64) string { return fmt.Sprintf("%.2f%%", v*100) }

func overloadMs(v float64) string { return fmt.Sprintf("%.1f ms", v) }
