package main

import (
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// sides are the two sides in the order charts show them.
var sides = []string{"redis+lua", "rlserver"}

// writeCharts draws res's chart as dir/name.png, next to its JSON: boundary and
// bench get a panel per side, memory and scale one panel with both, overload three
// panels of its configurations against the load. Other experiments have no chart and
// write nothing.
func writeCharts(dir, name string, res any) error {
	if dir == "" {
		return nil
	}
	var panels []*plot.Plot
	var err error
	switch r := res.(type) {
	case boundaryResult:
		panels, err = boundaryPanels(r)
	case benchResult:
		panels, err = benchPanels(r)
	case memoryResult:
		panels, err = memoryPanels(r)
	case scaleResult:
		panels, err = scalePanels(r)
	case []overloadCell:
		panels, err = overloadPanels(r)
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s chart: %w", name, err)
	}
	if len(panels) == 0 {
		return fmt.Errorf("%s: nothing to chart", name)
	}
	return savePanels(filepath.Join(dir, name+".png"), panels)
}

// savePanels writes panels side by side as one PNG.
func savePanels(path string, panels []*plot.Plot) error {
	const panelWidth, height = 6 * vg.Inch, 4 * vg.Inch
	img := vgimg.New(vg.Length(len(panels))*panelWidth, height)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Centimeter, PadTop: vg.Millimeter * 2,
		PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, draw.New(img))
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// newPanel is an empty plot with a title, axis labels and the legend top left.
func newPanel(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p
}

// addLine adds a line through xys to p in the i-th colour and dash, with legend name.
func addLine(p *plot.Plot, i int, name string, xys plotter.XYs, step plotter.StepKind) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	l.Color = plotutil.Color(i)
	l.Dashes = plotutil.Dashes(i)
	l.Width = vg.Points(1.5)
	l.StepStyle = step
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// boundaryPanels is, per side, each algorithm's admissions so far against time
// from the window boundary: the fixed window's second step is the boundary burst.
func boundaryPanels(r boundaryResult) ([]*plot.Plot, error) {
	var panels []*plot.Plot
	for _, side := range sides {
		if _, ok := r.Series[side+" "+boundaryKinds[0].Command()]; !ok {
			continue
		}
		p := newPanel(fmt.Sprintf("%s: limit %d per %d ms", side, r.Limit, r.WindowMs),
			"ms from the window boundary", "admitted so far")
		for i, k := range boundaryKinds {
			if err := addLine(p, i, k.Command(), cumulative(r.Series[side+" "+k.Command()], -300, 500), plotter.PostStep); err != nil {
				return nil, err
			}
		}
		panels = append(panels, p)
	}
	return panels, nil
}

// cumulative is the running total of admissions from 0 at fromMs to toMs.
func cumulative(s []admitted, fromMs, toMs float64) plotter.XYs {
	xys := plotter.XYs{{X: fromMs}}
	total := 0
	for _, a := range s {
		total += a.Count
		xys = append(xys, plotter.XY{X: a.AtMs, Y: float64(total)})
	}
	return append(xys, plotter.XY{X: max(toMs, xys[len(xys)-1].X), Y: float64(total)})
}

// benchPanels is, per side, each command's latency CDF in the first cell (by
// default depth 1, one client: the lesson's setting), latency on a log scale.
func benchPanels(r benchResult) ([]*plot.Plot, error) {
	var panels []*plot.Plot
	for _, side := range sides {
		var p *plot.Plot
		i := 0
		for _, row := range r.Rows {
			if row.Side != side || row.Depth != r.Rows[0].Depth || row.Clients != r.Rows[0].Clients {
				continue
			}
			if p == nil {
				p = newPanel(fmt.Sprintf("%s: pipeline depth %d, %d client(s)", side, row.Depth, row.Clients),
					"latency (ms)", "fraction of commands")
				p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
				p.Legend.Left = false // the curves rise on the left
				p.Legend.Top = false
			}
			if xys := cdfXYs(row.CDF); len(xys) > 0 {
				if err := addLine(p, i, row.Command, xys, plotter.NoStep); err != nil {
					return nil, err
				}
				i++
			}
		}
		if p != nil && i > 0 { // a log scale cannot draw an empty plot
			panels = append(panels, p)
		}
	}
	return panels, nil
}

// cdfXYs is a CDF's points above 0 ms, which a log scale cannot show.
func cdfXYs(cdf []cdfPoint) plotter.XYs {
	var xys plotter.XYs
	for _, c := range cdf {
		if c.Ms > 0 {
			xys = append(xys, plotter.XY{X: c.Ms, Y: c.Fraction})
		}
	}
	return xys
}

// memoryPanels is RL.LOG's bytes per user against its limit, both sides, log-log:
// Redis's sorted set grows with every entry, a straight line of slope 1. It plots
// Redis's used_memory and rlserver's store rather than RSS: the series fills fewer
// users the longer the logs (20 at 10,000 entries), and a few MB that any process's
// RSS grows by while serving would swamp their share.
func memoryPanels(r memoryResult) ([]*plot.Plot, error) {
	p := newPanel("rl.log memory as the limit grows (log full)", "limit (entries per user)", "bytes per user (used, store)")
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	var redisLua, server plotter.XYs
	for _, g := range r.LogGrowth {
		if g.RedisUsed > 0 {
			redisLua = append(redisLua, plotter.XY{X: float64(g.Limit), Y: g.RedisUsed})
		}
		if g.ServerStore > 0 {
			server = append(server, plotter.XY{X: float64(g.Limit), Y: g.ServerStore})
		}
	}
	if len(redisLua)+len(server) == 0 {
		return nil, nil // a log scale cannot draw an empty plot
	}
	for i, line := range []plotter.XYs{redisLua, server} {
		if len(line) == 0 {
			continue
		}
		if err := addLine(p, i, sides[i], line, plotter.NoStep); err != nil {
			return nil, err
		}
	}
	return []*plot.Plot{p}, nil
}

// overloadPanels is, against the offered load, each configuration's critical success,
// goodput, and critical p99 over its own p99 at the lowest load: the three targets
// that separate the configurations.
func overloadPanels(res []overloadCell) ([]*plot.Plot, error) {
	crit := newPanel("critical requests answered within the SLO", "offered load (× capacity)", "critical success (%)")
	good := newPanel("goodput", "offered load (× capacity)", "answered within the SLO (% of capacity)")
	p99 := newPanel("critical p99 against its p99 at the lowest load", "offered load (× capacity)", "×")
	for i, conf := range overloadConfs {
		name := overloadConfNames[conf]
		lo, _, ok := overloadEnds(res, name)
		if !ok {
			continue
		}
		var c, g, q plotter.XYs
		for _, r := range res {
			if r.Conf != name {
				continue
			}
			c = append(c, plotter.XY{X: r.Load, Y: r.Critical * 100})
			g = append(g, plotter.XY{X: r.Load, Y: r.Goodput * 100})
			if r.CriticalP99 > 0 && lo.CriticalP99 > 0 { // nothing succeeded: no p99
				q = append(q, plotter.XY{X: r.Load, Y: r.CriticalP99 / lo.CriticalP99})
			}
		}
		for _, pl := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{crit, c}, {good, g}, {p99, q}} {
			if len(pl.xys) == 0 {
				continue
			}
			if err := addLine(pl.p, i, name, pl.xys, plotter.NoStep); err != nil {
				return nil, err
			}
		}
	}
	crit.Legend.Top, good.Legend.Top = false, false // the lines fall to the bottom right
	return []*plot.Plot{crit, good, p99}, nil
}
