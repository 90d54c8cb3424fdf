package scale

import (
	"fmt"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Use is the share of a hard limit the tuned configurations may take.
const Use = 0.8

// Row is one line of the report: a configuration at a scale.
type Row struct {
	Label  string
	Result Result
	Fits   bool
}

// Rows returns, per scale, the stack's default shape and the two tunings: one topic
// (partitions and linger only) and the load spread over up to 64 topics.
func Rows() []Row {
	var rows []Row
	for _, s := range Scales {
		d := Evaluate(Default(s))
		rows = append(rows, Row{"default", d, d.Fits(1)})
		one, ok := Tune(s, Use, 1)
		rows = append(rows, Row{"tuned, one topic", one, ok})
		many, ok := Tune(s, Use, 64)
		rows = append(rows, Row{"tuned, ≤ 64 topics", many, ok})
	}
	return rows
}

// Markdown writes the rows as the table docs/BENCHMARKS.md shows.
func Markdown(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| events/s | configuration | fits | saturates first (use) | the knob | quotas to request | $/day | ack floor |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		f := r.Result.First()
		var quotas []string
		for _, l := range r.Result.Limits {
			if l.Quota && l.Use() > Use {
				quotas = append(quotas, fmt.Sprintf("%s ≥ %.0f", l.Name, math.Ceil(l.Rate/Use)))
			}
		}
		q := "none"
		if len(quotas) > 0 {
			q = strings.Join(quotas, "; ")
		}
		fits := "yes"
		if !r.Fits {
			fits = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s: %s | %s | %s (%.0f%%) | %s | %s | $%s | %s |\n",
			thousands(r.Result.Config.EventsPerSec), r.Label, r.Result.Config.Describe(), fits, f.Name, 100*f.Use(), f.Knob, q,
			thousands(r.Result.CostPerDay), r.Result.AckFloor.Round(1e6))
	}
}

// Plot draws the use of every limit that grows with the rate against events/s at the
// stack's default shape (producers growing with the rate) into path.
func Plot(path string) error {
	p := plot.New()
	p.Title.Text = "Use of AWS limits at the default shape (8 partitions, 1 topic, linger 1 s, 1 producer per 5,000 events/s)"
	p.X.Label.Text = "events/s of 1 KB"
	p.Y.Label.Text = "rate / limit"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	var rates []float64
	for r := 10000.0; r <= 1e7; r *= math.Pow(10, 0.125) {
		rates = append(rates, r)
	}
	names := []string{}
	series := map[string]plotter.XYs{}
	for _, rate := range rates {
		for _, l := range Evaluate(Default(rate)).Limits {
			if l.Static {
				continue
			}
			if _, ok := series[l.Name]; !ok {
				names = append(names, l.Name)
			}
			series[l.Name] = append(series[l.Name], plotter.XY{X: rate, Y: math.Max(l.Use(), 1e-4)})
		}
	}
	var lines []any
	for _, n := range names {
		lines = append(lines, n, series[n])
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return err
	}
	one, err := plotter.NewLine(plotter.XYs{{X: rates[0], Y: 1}, {X: rates[len(rates)-1], Y: 1}})
	if err != nil {
		return err
	}
	one.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	p.Add(one)
	p.Legend.Add("saturated (rate = limit)", one)
	return p.Save(11*vg.Inch, 7*vg.Inch, path)
}

// thousands formats n with thousands separators and no decimals.
func thousands(n float64) string {
	s := fmt.Sprintf("%.0f", n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
