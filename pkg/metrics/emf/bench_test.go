package emf_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/metrics/emf"
)

// countingWriter counts the lines and bytes written to it.
type countingWriter struct{ lines, bytes int }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.lines++ // the sink writes one line per Write
	c.bytes += len(p)
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)

// BenchmarkAppendRequestMetrics reports the EMF lines and bytes one append request
// costs (the log's Appended and the HTTP handler's Request, as the api function emits
// them), a line per observation and aggregated at DefaultFlushInterval, for an
// environment serving rate requests a second with ack latencies spread over 10–300 ms.
func BenchmarkAppendRequestMetrics(b *testing.B) {
	for _, rate := range []int{1, 10, 100, 1000} {
		for _, aggregated := range []bool{false, true} {
			name := fmt.Sprintf("rate=%d/aggregated=%v", rate, aggregated)
			b.Run(name, func(b *testing.B) {
				now := time.UnixMilli(1796092200000)
				clock := func() time.Time { return now }
				var w countingWriter
				s := emf.New(&w, deploy.MetricsNamespace, clock)
				if aggregated {
					s = emf.NewAggregated(&w, deploy.MetricsNamespace, clock, emf.DefaultFlushInterval)
				}
				rng := rand.New(rand.NewPCG(1, 2))
				step := time.Second / time.Duration(rate)
				b.ResetTimer()
				for range b.N {
					lat := 10*time.Millisecond + time.Duration(rng.Int64N(int64(290*time.Millisecond)))
					s.Appended("orders", 10, 10_000, lat)
					s.Request("POST /v1/topics/{topic}/records", 200, lat+time.Millisecond)
					s.FlushIfDue()
					now = now.Add(step)
				}
				s.Flush()
				b.ReportMetric(float64(w.lines)/float64(b.N), "lines/req")
				b.ReportMetric(float64(w.bytes)/float64(b.N), "logB/req")
			})
		}
	}
}
