package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
)

// parkResult is what the parking scene did, for the summary.
type parkResult struct {
	key                       string
	parked, others, replayed  int64
	replayedInOrder, unparked bool
}

// showParking runs group "refunds" (on_failure park) over one partition with one
// poisoned order: that order's records are parked in refunds.parked while every other
// order passes; once released, its parked records are replayed in order and it is
// unparked.
func (d *demo) showParking(ctx context.Context) (parkResult, error) {
	const grp, partition = "refunds", int32(5)
	var res parkResult
	if _, err := d.c.SetGroupSettings(ctx, grp, client.GroupSettings{ResetPolicy: "earliest", MaxAttempts: 1, OnFailure: "park"}); err != nil {
		return res, err
	}
	first, err := d.c.Poll(ctx, demoTopic, partition, 0, client.PollOptions{MaxRecords: 1})
	if err != nil || len(first.Records) == 0 {
		return res, fmt.Errorf("demo: parking: nothing on partition %d: %v", partition, err)
	}
	res.key = string(first.Records[0].Key)
	var poisoned atomic.Bool
	poisoned.Store(true)
	var mu sync.Mutex
	var replayed []int64
	var others atomic.Int64
	run := func(member string) (consumer.Stats, error) {
		c, err := consumer.New(d.rt.Log(), d.rt.Coordinator(), consumer.Config{Group: grp, Topic: demoTopic, Member: member,
			Workers: 4, PollWait: 100 * time.Millisecond, LeaseTTL: demoLeaseTTL,
			Handler: func(_ context.Context, r consumer.Record) error {
				if string(r.Key) != res.key {
					others.Add(1)
					return nil
				}
				if poisoned.Load() {
					return errors.New("refund service: account frozen")
				}
				mu.Lock()
				replayed = append(replayed, r.Offset)
				mu.Unlock()
				return nil
			}})
		if err != nil {
			return consumer.Stats{}, err
		}
		return c.Run(ctx, partition, consumer.RunOptions{UntilCaughtUp: true})
	}
	st, err := run("refunds-1")
	if err != nil {
		return res, err
	}
	res.parked, res.others = st.Parked, others.Load()
	fmt.Fprintf(d.w, "refunds (on_failure park): order %s failed on partition %d; %d of its records parked in %s.parked while %d records of other orders passed\n",
		res.key, partition, res.parked, grp, res.others)
	if _, err := d.c.ReleaseParkedKey(ctx, grp, demoTopic, []byte(res.key)); err != nil {
		return res, err
	}
	poisoned.Store(false)
	st, err = run("refunds-2")
	if err != nil {
		return res, err
	}
	res.replayed = st.Replayed
	mu.Lock()
	res.replayedInOrder = len(replayed) > 0 && slices.IsSorted(replayed)
	mu.Unlock()
	left, err := d.c.ParkedKeys(ctx, grp)
	if err != nil {
		return res, err
	}
	res.unparked = len(left) == 0
	fmt.Fprintf(d.w, "released order %s: %d parked records replayed in order (%v), key unparked (%v)\n", res.key, res.replayed, res.replayedInOrder, res.unparked)
	if res.parked == 0 || res.replayed != res.parked || !res.replayedInOrder || !res.unparked {
		return res, fmt.Errorf("demo: parking: %+v", res)
	}
	return res, nil
}
