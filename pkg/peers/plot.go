package peers

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot draws the medians' records/s as grouped bars, one group per producer count.
func Plot(meds []Median, producers []int, path string) error {
	p := plot.New()
	p.Title.Text = "Local throughput on loopback, 1 KB records (median of runs)"
	p.Y.Label.Text = "records/s"
	var systems []string
	seen := map[string]bool{}
	for _, m := range meds {
		if !seen[m.System] {
			seen[m.System] = true
			systems = append(systems, m.System)
		}
	}
	w := vg.Points(22)
	top := 0.0
	for _, m := range meds {
		top = max(top, m.RecordsPerSec)
	}
	for i, s := range systems {
		vals := make(plotter.Values, len(producers))
		for j, n := range producers {
			for _, m := range meds {
				if m.System == s && m.Producers == n {
					vals[j] = m.RecordsPerSec
				}
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(i)
		bars.Offset = w * vg.Length(float64(i)-float64(len(systems)-1)/2)
		p.Add(bars)
		p.Legend.Add(s, bars)
	}
	names := make([]string, len(producers))
	for i, n := range producers {
		names[i] = fmt.Sprintf("P = %d", n)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(producers))-0.4
	p.Y.Min, p.Y.Max = 0, top*1.45 // room for the legend above the bars
	p.Legend.Top = true
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}
