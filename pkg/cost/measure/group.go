package measure

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/awscount"
	"github.com/stratalog/strata/pkg/cost"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
)

// GroupCase is one counted group-commit workload: Appenders goroutines, each standing
// for one producer, make Rounds appends one after another through one Log with group
// commit on. The appends go as blocks (log.AppendBlocks), the binary form pkg/client's
// producer sends.
type GroupCase struct {
	Name       string
	Idempotent bool
	Partitions int // blocks per append, one per partition
	Appenders  int
	Rounds     int
	Window     time.Duration
	Appends    int // acknowledged
	Records    int
	Ops        map[string]awscount.Op
	// CPU is this process's user + system time while the appends ran: the log and the
	// AWS SDK (marshalling, signing, HTTP over loopback without TLS); the emulator is
	// another process.
	CPU time.Duration
}

// Batches is the batches the case wrote: one segment object each.
func (c GroupCase) Batches() int64 { return c.Ops["S3.PutObject"].Answered() }

// PerAppend returns requests of op per acknowledged append (answered ones, as
// Case.PerAppend).
func (c GroupCase) PerAppend(op string) float64 {
	return float64(c.Ops[op].Answered()) / float64(c.Appends)
}

// PerBatchBlock returns requests of op per partition of a batch (every append of a case
// touches the same partitions, so each batch holds Partitions of them).
func (c GroupCase) PerBatchBlock(op string) float64 {
	return float64(c.Ops[op].Answered()) / float64(c.Batches()*int64(c.Partitions))
}

// runGroupCase runs one group-commit case on lg (a Log with group commit on).
func runGroupCase(ctx context.Context, lg *log.Log, counter *awscount.Counter, opt Options, idem bool, parts int) (GroupCase, error) {
	topic := fmt.Sprintf("cost-group-%d-%t", parts, idem)
	if _, err := lg.CreateTopic(ctx, topic, int32(parts), 24*time.Hour); err != nil {
		return GroupCase{}, fmt.Errorf("measure: create topic: %w", err)
	}
	if _, err := lg.Topic(ctx, topic); err != nil {
		return GroupCase{}, err
	}
	c := GroupCase{Name: fmt.Sprintf("%d appenders, %d partition(s) per append, idempotent=%t", opt.Appenders, parts, idem),
		Idempotent: idem, Partitions: parts, Appenders: opt.Appenders, Rounds: opt.GroupRounds, Window: opt.GroupWindow}
	perBlock := max(1, opt.RecordsPerAppend/parts)
	value := make([]byte, opt.ValueBytes)
	recs := make([]segment.Record, perBlock)
	for i := range recs {
		recs[i] = segment.Record{Timestamp: time.Now().UnixMilli(), Value: value}
	}
	block, err := segment.EncodeBlock(recs)
	if err != nil {
		return GroupCase{}, err
	}
	blocks := make([]log.Block, parts)
	for p := range blocks {
		blocks[p] = log.Block{Partition: int32(p), Data: block}
	}

	counter.Reset()
	cpu := processCPU()
	errs := make([]error, opt.Appenders)
	var wg sync.WaitGroup
	for a := range opt.Appenders {
		wg.Go(func() {
			for r := range opt.GroupRounds {
				res, err := lg.AppendBlocks(ctx, topic, blocks, firstAttempt(idem, fmt.Sprintf("g%d-%d", a, r)))
				if err == nil && len(res) != parts {
					err = fmt.Errorf("%d block results for %d blocks", len(res), parts)
				}
				if err != nil {
					errs[a] = fmt.Errorf("measure: group append: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	c.CPU = processCPU() - cpu
	c.Ops, _ = counter.Snapshot()
	if err := errors.Join(errs...); err != nil {
		return GroupCase{}, err
	}
	c.Appends = opt.Appenders * opt.GroupRounds
	c.Records = c.Appends * parts * perBlock
	return c, nil
}

// deriveGroup reads the group profile off the group cases: commits per partition of a
// batch from the cases without a key, commits per partition of a member from the
// idempotent ones, PUTs and CPU per append from the single-partition case of the
// profile's kind. A commit is counted by its index entry (a PutItem): since the topic
// commit (issue 20) a batch's sequencer write is one UpdateItem for all its commits, so
// UpdateItems no longer count commits; they are the topic commits per batch
// (GroupProfile.TopicCommitsPerBatch). The idempotency claims among an idempotent
// case's PutItems are those its alone case makes per append beyond its entries.
func deriveGroup(cases []GroupCase, alone []Case, idem bool) cost.GroupProfile {
	g := cost.GroupProfile{Measured: true}
	claims := map[int]float64{} // partitions → claim PutItems per idempotent append
	for _, c := range alone {
		if c.Idempotent {
			claims[c.Partitions] = c.PerAppend("DynamoDB.PutItem") - float64(c.Partitions)
		}
	}
	var shared, sharedBlocks, member, memberBlocks, memberBatchBlocks, topics, batches float64
	for _, c := range cases {
		entries := float64(c.Ops["DynamoDB.PutItem"].Answered())
		topics += float64(c.Ops["DynamoDB.UpdateItem"].Answered())
		batches += float64(c.Batches())
		if c.Idempotent {
			member += entries - claims[c.Partitions]*float64(c.Appends)
			memberBlocks += float64(c.Appends * c.Partitions)
			memberBatchBlocks += float64(c.Batches() * int64(c.Partitions))
		} else {
			shared += entries
			sharedBlocks += float64(c.Batches() * int64(c.Partitions))
		}
		if c.Idempotent == idem && c.Partitions == 1 {
			g.Appenders, g.Window = c.Appenders, c.Window
			g.PutsPerAppend = c.PerAppend("S3.PutObject")
			g.CPUPerAppend = c.CPU / time.Duration(c.Appends)
		}
	}
	if batches > 0 {
		g.TopicCommitsPerBatch = topics / batches
	}
	if sharedBlocks > 0 {
		g.SharedCommitsPerBlock = shared / sharedBlocks
	}
	if memberBlocks > 0 {
		g.MemberCommitsPerBlock = member / memberBlocks
		// Shared: one commit per partition of a batch, as without a key.
		g.IdempotentShare = member == memberBatchBlocks
	}
	return g
}
