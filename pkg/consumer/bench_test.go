package consumer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
)

// BenchmarkRunUntilCaughtUp measures the run loop's own cost: one run of a new group
// through 20,000 records (20 commits of 1,000) on the embedded backend with a handler
// that does nothing, 1 and 4 workers. Reports records/s.
func BenchmarkRunUntilCaughtUp(b *testing.B) {
	ctx := context.Background()
	s := backendtest.Local(ctx, b)
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := l.CreateTopic(ctx, "orders", 1, 0); err != nil {
		b.Fatal(err)
	}
	const commits, per = 20, 1000
	p := int32(0)
	for c := range commits {
		recs := make([]log.Record, per)
		for i := range recs {
			recs[i] = log.Record{Key: fmt.Appendf(nil, "k%d", i%16), Value: make([]byte, 100), Partition: &p}
		}
		if _, err := l.Append(ctx, "orders", recs, log.AppendOptions{}); err != nil {
			b.Fatal(c, err)
		}
	}
	coord := group.New(s.Meta, l, nil)
	runs := 0
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for range b.N {
				runs++ // a new group each run: it starts at the log start
				cons, err := consumer.New(l, coord, consumer.Config{Group: fmt.Sprintf("bench-%d", runs), Topic: "orders", Member: "m",
					Handler: func(context.Context, consumer.Record) error { return nil }, Workers: workers, OrderedKeys: true,
					PollWait: time.Millisecond, CommitInterval: 100 * time.Millisecond})
				if err != nil {
					b.Fatal(err)
				}
				st, err := cons.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
				if err != nil || st.Handled != commits*per {
					b.Fatalf("%+v, %v", st, err)
				}
			}
			b.ReportMetric(float64(commits*per*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
