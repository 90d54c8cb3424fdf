package cost

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot draws cost-producers.png ($/day against producers, every design and the
// alternatives, and the tier with folded claims) and cost-linger.png ($/day and ack
// floor against linger) into dir.
func Plot(base Options, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	o := base
	o.Workload.Groups = 1
	p := plot.New()
	p.Title.Text = fmt.Sprintf("$/day at %.0f events/s of %.0f B, %d partitions, linger %s, 1 group", o.Workload.EventsPerSec, o.Workload.EventBytes, o.Workload.Partitions, o.Producers.Linger)
	p.X.Label.Text = "producers"
	p.Y.Label.Text = "$/day"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	var ns []int
	for x := 1; x <= 10000; x *= 10 {
		ns = append(ns, x, 2*x, 5*x)
	}
	series := []struct {
		name  string
		shape Shape
		d     Design
		fold  bool
	}{
		{"Strata SDK (one request per round)", ShapeSDK, Baseline, false},
		{"Strata SDK + aggregation tier", ShapeSDK, Aggregation, false},
		{"Strata multi-partition appends", ShapeMulti, Baseline, false},
		{"Strata per-topic commit", ShapeMulti, PerTopicCommit, false},
		{"Strata topic commit + manifest", ShapeMulti, TopicManifest, false},
		{"Strata aggregation tier", ShapeMulti, Aggregation, false},
		{"Strata aggregation tier + topic commit + manifest", ShapeMulti, AggTopicManifest, false},
		{"Strata aggregation tier, folded claims (not built)", ShapeMulti, Aggregation, true},
	}
	var lines []any
	for _, s := range series {
		if s.fold && (base.FoldedClaims || !base.Profile.Idempotent) {
			continue // the same as the unfolded line
		}
		pts := make(plotter.XYs, len(ns))
		for i, n := range ns {
			o.Producers.Count, o.Producers.Shape, o.FoldedClaims = n, s.shape, s.fold || base.FoldedClaims
			pts[i] = plotter.XY{X: float64(n), Y: Strata(o, s.d).PerDay()}
		}
		lines = append(lines, s.name, pts)
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return err
	}
	for i, a := range Alternatives(o) {
		y := a.PerDay()
		l, err := plotter.NewLine(plotter.XYs{{X: 1, Y: y}, {X: float64(ns[len(ns)-1]), Y: y}})
		if err != nil {
			return err
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.Color = []color.Color{color.RGBA{200, 0, 0, 255}, color.RGBA{255, 140, 0, 255}, color.RGBA{128, 0, 128, 255}, color.Black}[i%4]
		p.Add(l)
		p.Legend.Add(a.Name, l)
	}
	if err := p.Save(9*vg.Inch, 6*vg.Inch, filepath.Join(dir, "cost-producers.png")); err != nil {
		return err
	}

	// $/day and ack floor against linger, 10 and 100 SDK producers.
	o = base
	o.Workload.Groups = 1
	q := plot.New()
	q.Title.Text = fmt.Sprintf("Strata $/day (SDK producers) against linger; ack floor = min(linger, batch fill) + %s", o.Latency.Service())
	q.X.Label.Text = "linger (ms)"
	q.Y.Label.Text = "$/day"
	q.Y.Scale, q.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	q.Legend.Top = true
	lingers := []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second}
	lines = nil
	for _, n := range []int{10, 100, 1000} {
		for _, b := range []float64{1 << 20, 5 << 20} {
			pts := make(plotter.XYs, len(lingers))
			for i, l := range lingers {
				o.Producers.Count, o.Producers.Linger, o.Producers.BatchBytes = n, l, b
				pts[i] = plotter.XY{X: float64(l.Milliseconds()), Y: Strata(o, Baseline).PerDay()}
			}
			lines = append(lines, fmt.Sprintf("%d producers, batch %.0f MiB", n, b/(1<<20)), pts)
		}
	}
	if err := plotutil.AddLinePoints(q, lines...); err != nil {
		return err
	}
	kin := KinesisProvisioned(o, true).PerDay()
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: kin}, {X: 5000, Y: kin}})
	if err != nil {
		return err
	}
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	l.Color = color.RGBA{200, 0, 0, 255}
	q.Add(l)
	q.Legend.Add("Kinesis provisioned, KPL aggregation", l)
	return q.Save(9*vg.Inch, 6*vg.Inch, filepath.Join(dir, "cost-linger.png"))
}
