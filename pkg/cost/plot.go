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

// Plot draws cost-producers.png ($/day against producers: every configuration of the
// targets table, built or modelled, and the alternatives, Kinesis with the KPL at the
// same linger) and cost-linger.png ($/day and ack
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
	var lines []any
	for _, c := range Configurations() {
		status := "modelled"
		if c.Built(base.Built) {
			status = "built"
		}
		pts := make(plotter.XYs, len(ns))
		for i, n := range ns {
			pts[i] = plotter.XY{X: float64(n), Y: PriceTarget(base, c, n, 1, base.Producers.Linger).PerDay}
		}
		lines = append(lines, "Strata SDK, "+c.Name+" ("+status+")", pts)
	}
	if err := plotutil.AddLinePoints(p, lines...); err != nil {
		return err
	}
	for i, a := range Alternatives(o) {
		// The KPL's cost depends on the producers at the same linger; the others do not.
		pts := make(plotter.XYs, len(ns))
		for j, n := range ns {
			o.Producers.Count = n
			pts[j] = plotter.XY{X: float64(n), Y: Alternatives(o)[i].PerDay()}
		}
		l, err := plotter.NewLine(pts)
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
	// Kinesis with the KPL at the same linger (RecordMaxBufferedTime), per producer count.
	for i, n := range []int{10, 100, 1000} {
		pts := make(plotter.XYs, len(lingers))
		for j, l := range lingers {
			o.Producers.Count, o.Producers.Linger = n, l
			pts[j] = plotter.XY{X: float64(l.Milliseconds()), Y: KinesisProvisioned(o, true).PerDay()}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.Color = []color.Color{color.RGBA{255, 120, 120, 255}, color.RGBA{200, 0, 0, 255}, color.RGBA{120, 0, 0, 255}}[i]
		q.Add(l)
		q.Legend.Add(fmt.Sprintf("Kinesis KPL, %d producers, same linger", n), l)
	}
	return q.Save(9*vg.Inch, 6*vg.Inch, filepath.Join(dir, "cost-linger.png"))
}
