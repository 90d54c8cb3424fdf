package consumer_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/httpconsumer"
	"github.com/stratalog/strata/pkg/log"
)

// TestCommitLargerThanWorkerQueuesUnderRunMember is issue 18.1: a binary poll answers
// whole commits, so one 10,000-record commit arrives in one answer although the
// consumer asks for 100 records. The run loop used to push every polled record into
// worker queues and block when they were full — the same loop that renews the lease.
// Once the local deadline passed the workers waited for a renewal the blocked loop
// never sent, while RunMember's heartbeats kept the lease alive at the server: handled
// a fraction, committed nothing, forever. Every record must be handled and committed.
func TestCommitLargerThanWorkerQueuesUnderRunMember(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		const records = 10000
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CreateTopic(ctx, "orders", 1, 0); err != nil {
			t.Fatal(err)
		}
		p := int32(0)
		recs := make([]log.Record, records)
		for i := range recs {
			recs[i] = log.Record{Value: fmt.Appendf(nil, "event-%d", i), Partition: &p}
		}
		if _, err := l.Append(ctx, "orders", recs, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		coord := group.New(s.Meta, l, nil)
		srv := httptest.NewServer(httpapi.New(httpapi.Config{Log: l, Groups: coord}))
		t.Cleanup(srv.Close)
		c, err := client.New(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		ad := httpconsumer.NewConsumerAdapter(c)
		const ttl = time.Second
		var handled atomic.Int64
		h := func(ctx context.Context, r consumer.Record) error {
			select { // a slow handler: the queues fill long before the lease's deadline
			case <-time.After(500 * time.Microsecond):
				handled.Add(1)
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		cons, err := consumer.New(ad, ad, consumer.Config{Group: "billing", Topic: "orders", Member: "m-0", Handler: h,
			Workers: 2, PollRecords: 100, LeaseTTL: ttl, PollWait: 50 * time.Millisecond, CommitInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- cons.RunMember(runCtx, httpconsumer.NewMemberBalancer(c, "billing", "orders", "m-0", ttl), ttl/3)
		}()
		defer func() {
			stop()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		committed := func() int64 {
			got, err := coord.Committed(ctx, "billing", "orders", 0)
			if err != nil || got == nil {
				return -1
			}
			return *got
		}
		// A stall is no handler progress for many lease TTLs (the old loop never moved
		// again); progress, however slow on a loaded machine, keeps the test waiting.
		const stall = 15 * time.Second
		last, lastMoved := int64(-1), time.Now()
		for committed() < records {
			if n := handled.Load(); n != last {
				last, lastMoved = n, time.Now()
			} else if time.Since(lastMoved) > stall {
				t.Fatalf("stalled: handled %d of %d, committed %d, no progress for %s", n, records, committed(), stall)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n := handled.Load(); n < records {
			t.Fatalf("committed %d with only %d handled", committed(), n)
		}
	})
}
