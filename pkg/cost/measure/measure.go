// Package measure counts, on an AWS emulator, the requests Strata's AWS backend makes
// per append and per poll — alone, and with concurrent appenders sharing group-commit
// batches — and turns them into a cost.Profile. It creates its own bucket and tables
// (random names) and removes them when done. It only ever talks to a loopback endpoint,
// so it can never reach (or bill) a real AWS account.
package measure

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/stratalog/strata/pkg/awscount"
	"github.com/stratalog/strata/pkg/cost"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/store/dynamo"
	s3store "github.com/stratalog/strata/pkg/store/s3"
	"github.com/stratalog/strata/pkg/wire"
)

// ErrNotLoopback is returned for an endpoint that is not a loopback http(s) URL.
var ErrNotLoopback = errors.New("measure: the emulator endpoint must be an http(s) URL on a loopback address")

// EmulatorConfig returns an SDK configuration for the emulator at endpoint: static test
// credentials (no profile or environment credentials are read), us-east-1, and a
// standard retryer without a client-side retry quota.
func EmulatorConfig(endpoint string) (aws.Config, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return aws.Config{}, fmt.Errorf("%w: %q", ErrNotLoopback, endpoint)
	}
	if h := u.Hostname(); h != "localhost" {
		if ip := net.ParseIP(h); ip == nil || !ip.IsLoopback() {
			return aws.Config{}, fmt.Errorf("%w: %q", ErrNotLoopback, endpoint)
		}
	}
	return aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 5
				o.MaxBackoff = 500 * time.Millisecond
				o.RateLimiter = ratelimit.None
			})
		},
	}, nil
}

// Case is one measured workload.
type Case struct {
	Name       string
	Idempotent bool
	Partitions int // partitions each append touches
	Appends    int
	Records    int // records appended
	AppendOps  map[string]awscount.Op
	// ConfigReads are the reads of the topics table among AppendOps: the log's topic
	// cache refreshing a configuration older than log.TopicCacheTTL (warm when the
	// appends start), which depends on how long the appends took (AppendTime), not on
	// the append path. The profile leaves them out of the reads per append.
	ConfigReads float64
	AppendTime  time.Duration
	// RetryOps are the requests of a retry (Strata-Attempt 1, its RetryElapsed the time
	// since the first attempt was sent) of each acknowledged idempotent append, a
	// producer request's as the SDK sends it: it fences the earlier attempts on the
	// topic item and searches the index and the batches' members tables, finds the
	// first attempt and appends nothing. Reported, not priced (retries are rare); none
	// when Options.NoRetry.
	RetryOps       map[string]awscount.Op
	Polls, Blocks  int // polls made, blocks they returned
	PollOps        map[string]awscount.Op
	ValueBytes     int
	RecordsPerPoll int
}

// PerAppend returns requests of op per append: those answered (awscount.Op.Answered),
// so that an attempt the SDK retried on a loaded emulator is not taken for the code's.
func (c Case) PerAppend(op string) float64 {
	return float64(c.AppendOps[op].Answered()) / float64(c.Appends)
}

// Result is every case and the profile derived from them.
type Result struct {
	Cases   []Case
	Group   []GroupCase
	Profile cost.Profile
}

// Options size the measurement; keep them small, the emulator serialises requests.
type Options struct {
	Appends          int // per case (default 8)
	RecordsPerAppend int // default 8
	ValueBytes       int // default 1024
	// Idempotent makes the profile's appends carry an Idempotency-Key, as pkg/client's
	// producer always does.
	Idempotent bool
	// Appenders (default 16) concurrent appenders each make GroupRounds appends (default
	// 3) through one Log with a GroupCommitWindow of GroupWindow (default 50ms).
	Appenders   int
	GroupRounds int
	GroupWindow time.Duration
	// NoRetry skips the retries of the idempotent cases (Case.RetryOps), which the
	// profile does not price.
	NoRetry bool
}

var (
	dynamoReads  = []string{"DynamoDB.GetItem", "DynamoDB.Query", "DynamoDB.BatchGetItem", "DynamoDB.Scan"}
	dynamoWrites = []string{"DynamoDB.PutItem", "DynamoDB.UpdateItem", "DynamoDB.DeleteItem",
		"DynamoDB.TransactWriteItems", "DynamoDB.BatchWriteItem"}
)

// Run measures four cases (one and four partitions per append, with and without
// idempotency keys, keyed ones as the SDK's producer requests) on a fresh bucket and
// tables, each once by one appender (its keyed appends then retried once, unless
// opt.NoRetry) and once by opt.Appenders concurrent appenders through a group-committing
// Log, and derives the profile from the cases with opt.Idempotent: the per-block requests
// are the difference between four and one partition over three, the rest is per append;
// the group cases give Profile.Group. The retries are reported, not profiled.
func Run(ctx context.Context, cfg aws.Config, opt Options) (Result, error) {
	if opt.Appends == 0 {
		opt.Appends = 8
	}
	if opt.RecordsPerAppend == 0 {
		opt.RecordsPerAppend = 8
	}
	if opt.ValueBytes == 0 {
		opt.ValueBytes = 1024
	}
	if opt.Appenders == 0 {
		opt.Appenders = 16
	}
	if opt.GroupRounds == 0 {
		opt.GroupRounds = 3
	}
	if opt.GroupWindow == 0 {
		opt.GroupWindow = 50 * time.Millisecond
	}
	if opt.Appends < 1 || opt.RecordsPerAppend < 4 || opt.ValueBytes < 1 {
		return Result{}, fmt.Errorf("measure: need at least 1 append of 4 records of 1 byte")
	}
	if opt.Appenders < 2 || opt.GroupRounds < 1 || opt.GroupWindow < 0 {
		return Result{}, fmt.Errorf("measure: the group cases need at least 2 appenders, 1 round and a window")
	}
	counter := awscount.New()
	cfg.APIOptions = append(append([]func(*middleware.Stack) error(nil), cfg.APIOptions...), counter.Middleware)
	s3c := awss3.NewFromConfig(cfg, func(o *awss3.Options) { o.UsePathStyle = true })
	ddb := dynamodb.NewFromConfig(cfg)
	id := randomID()
	dcfg := dynamo.Config{TablePrefix: "cost" + id + "-", Bucket: "strata-cost-" + id}
	if err := dynamo.Bootstrap(ctx, ddb, s3c, dcfg); err != nil {
		return Result{}, fmt.Errorf("measure: bootstrap: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = s3store.DeleteBucket(cctx, s3c, dcfg.Bucket)
		_ = dynamo.Teardown(cctx, ddb, dcfg)
	}()
	// Two nodes on the same stores, through the composition root the functions use:
	// one writing every append on its own, one group-committing.
	open := func(window time.Duration) (*log.Log, error) {
		n, err := node.Open(ctx, node.Config{Backend: node.BackendAWS, GroupCommitWindow: window,
			AWS: node.AWSConfig{SDK: &cfg, Bucket: dcfg.Bucket, TablePrefix: dcfg.TablePrefix}}, node.PartLog)
		if err != nil {
			return nil, fmt.Errorf("measure: %w", err)
		}
		return n.Log(), nil
	}
	lg, err := open(0)
	if err != nil {
		return Result{}, err
	}
	glg, err := open(opt.GroupWindow)
	if err != nil {
		return Result{}, err
	}
	var res Result
	for _, idem := range []bool{false, true} {
		for _, parts := range []int{1, 4} {
			c, err := runCase(ctx, lg, counter, dcfg.TablePrefix+dynamo.TopicsTable, opt, idem, parts)
			if err != nil {
				return Result{}, err
			}
			res.Cases = append(res.Cases, c)
			g, err := runGroupCase(ctx, glg, counter, opt, idem, parts)
			if err != nil {
				return Result{}, err
			}
			res.Group = append(res.Group, g)
		}
	}
	res.Profile = derive(res.Cases, opt.Idempotent)
	res.Profile.Group = deriveGroup(res.Group, res.Cases, opt.Idempotent)
	return res, nil
}

// runCase measures one case; topics is the topics table's name (ConfigReads).
func runCase(ctx context.Context, lg *log.Log, counter *awscount.Counter, topics string, opt Options, idem bool, parts int) (Case, error) {
	topic := fmt.Sprintf("cost-%d-%t", parts, idem)
	if _, err := lg.CreateTopic(ctx, topic, int32(parts), 24*time.Hour); err != nil {
		return Case{}, fmt.Errorf("measure: create topic: %w", err)
	}
	if _, err := lg.Topic(ctx, topic); err != nil {
		return Case{}, err
	}
	c := Case{Name: fmt.Sprintf("%d partition(s) per append, idempotent=%t", parts, idem), Idempotent: idem,
		Partitions: parts, Appends: opt.Appends, ValueBytes: opt.ValueBytes, RecordsPerPoll: opt.RecordsPerAppend / parts}
	value := make([]byte, opt.ValueBytes)
	records := func() []log.Record {
		recs := make([]log.Record, opt.RecordsPerAppend)
		for i := range recs {
			p := int32(i % parts)
			recs[i] = log.Record{Value: value, Partition: &p}
		}
		return recs
	}
	counter.Reset()
	start := time.Now()
	sent := make([]time.Time, opt.Appends)
	floors := make([]wire.BatchMark, opt.Appends)
	firsts := make([][]log.Result, opt.Appends)
	for a := range opt.Appends {
		recs := records()
		sent[a] = time.Now()
		floors[a], _ = lg.BatchMark(topic) // the mark the SDK had from the answer before
		res, err := lg.Append(ctx, topic, recs, firstAttempt(idem, fmt.Sprintf("k%d", a)))
		if err != nil {
			return Case{}, fmt.Errorf("measure: append: %w", err)
		}
		firsts[a] = res
		c.Records += len(recs)
	}
	c.AppendTime = time.Since(start)
	c.AppendOps, _ = counter.Snapshot()
	for _, op := range dynamoReads {
		c.ConfigReads += float64(counter.Table(op, topics).Requests)
	}
	if idem && !opt.NoRetry {
		// Each append again as a retry whose first answer was lost, the topic's
		// configuration freshly cached (its read is not the retry's).
		if _, err := lg.Topic(ctx, topic); err != nil {
			return Case{}, err
		}
		counter.Reset()
		for a := range opt.Appends {
			key := fmt.Sprintf("k%d", a)
			res, err := lg.Append(ctx, topic, records(), secondAttempt(key, time.Since(sent[a]), floors[a]))
			if err != nil {
				return Case{}, fmt.Errorf("measure: retry: %w", err)
			}
			if !slices.Equal(res, firsts[a]) {
				return Case{}, fmt.Errorf("measure: the retry of %s answered %v, its first attempt %v", key, res, firsts[a])
			}
		}
		c.RetryOps, _ = counter.Snapshot()
	}

	// A tail reader: every poll returns the one block appended since the last.
	counter.Reset()
	for p := range parts {
		for off := int64(0); ; {
			r, err := lg.Poll(ctx, topic, int32(p), off, log.PollOptions{MaxRecords: c.RecordsPerPoll})
			if err != nil {
				return Case{}, fmt.Errorf("measure: poll: %w", err)
			}
			if len(r.Records) == 0 {
				break
			}
			c.Polls++
			c.Blocks++
			off = r.NextOffset
		}
	}
	c.PollOps, _ = counter.Snapshot()
	return c, nil
}

// firstAttempt is the options of the first attempt of the request key when idem, as
// pkg/client's producer sends it (a producer session's request, Strata-Attempt 0: fenced
// idempotency); none without idem.
func firstAttempt(idem bool, key string) log.AppendOptions {
	if !idem {
		return log.AppendOptions{}
	}
	return log.AppendOptions{IdempotencyKey: key, Producer: true, Attempt: 0, FirstAttempt: true}
}

// secondAttempt is the options of the producer's second attempt of request key, elapsed after
// its first was sent (Strata-Attempt 1, Strata-Retry-Elapsed-Ms, at most
// wire.MaxRetryElapsed), with the batch floor its client had at the first send
// (Strata-Batch-Floor).
func secondAttempt(key string, elapsed time.Duration, floor wire.BatchMark) log.AppendOptions {
	return log.AppendOptions{IdempotencyKey: key, Producer: true, Attempt: 1, RetryElapsed: min(elapsed, wire.MaxRetryElapsed),
		BatchFloor: &floor}
}

func sum(ops map[string]awscount.Op, names ...string) (n float64) {
	for _, k := range names {
		n += float64(ops[k].Answered())
	}
	return n
}

// derive reads the profile of the cases with idem off the counts: per block the
// difference between four partitions and one over three, the rest per append; the
// idempotency claims per block are the PutItems per block beyond those of the cases
// without a key (the index entries). Reads leave out the topic cache's refreshes
// (Case.ConfigReads): one per process per log.TopicCacheTTL, not per append.
func derive(cases []Case, idem bool) cost.Profile {
	var one, four, plain1, plain4 Case
	for _, c := range cases {
		switch {
		case c.Idempotent == idem && c.Partitions == 1:
			one = c
		case c.Idempotent == idem && c.Partitions == 4:
			four = c
		}
		switch {
		case !c.Idempotent && c.Partitions == 1:
			plain1 = c
		case !c.Idempotent && c.Partitions == 4:
			plain4 = c
		}
	}
	perBlock := func(one, four Case, op string) float64 { return (four.PerAppend(op) - one.PerAppend(op)) / 3 }
	updBlock, putBlock := perBlock(one, four, "DynamoDB.UpdateItem"), perBlock(one, four, "DynamoDB.PutItem")
	topic := one.PerAppend("DynamoDB.UpdateItem") - updBlock // the topic commit: UpdateItems not per block
	entryBlock := perBlock(plain1, plain4, "DynamoDB.PutItem")
	w1 := sum(one.AppendOps, dynamoWrites...) / float64(one.Appends)
	putOp := one.AppendOps["DynamoDB.PutItem"]
	r1 := (sum(one.AppendOps, dynamoReads...) - one.ConfigReads) / float64(one.Appends)
	r4 := (sum(four.AppendOps, dynamoReads...) - four.ConfigReads) / float64(four.Appends)
	readBlock := max(0, (r4-r1)/3)
	p := cost.Profile{
		Idempotent:            idem,
		PutsPerAppend:         one.PerAppend("S3.PutObject"),
		UpdatesPerBlock:       updBlock,
		TopicCommitsPerAppend: topic,
		PutItemsPerBlock:      entryBlock,
		ClaimsPerBlock:        putBlock - entryBlock,
		WritesPerAppend:       w1 - topic - updBlock - putBlock,
		ReadsPerAppend:        max(0, r1-readBlock),
		ReadsPerAppendBlk:     readBlock,
		ReadsPerPoll:          sum(one.PollOps, dynamoReads...) / float64(one.Polls),
		GetsPerBlock:          sum(one.PollOps, "S3.GetObject") / float64(one.Blocks),
		StoredBytesPerByte:    float64(one.AppendOps["S3.PutObject"].BytesSent) / float64(one.Records*one.ValueBytes),
		IndexItemBytes:        300,
		Measured:              true,
	}
	if putOp.Requests > 0 {
		p.IndexItemBytes = float64(putOp.BytesSent) / float64(putOp.Requests)
	}
	return p
}

func randomID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
