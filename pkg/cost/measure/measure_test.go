package measure

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/awscount"
	"github.com/stratalog/strata/pkg/cost"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store/awstest"
)

// TestCountsPerAppend runs the tiny workload on the emulator and checks the requests
// counted per append against docs/DESIGN.md §4: one PUT per append, and per partition
// touched one sequencer UpdateItem and one index PutItem; a tail poll GETs its block.
func TestCountsPerAppend(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(ctx, t)
	res, err := Run(ctx, cfg, Options{Appends: 3, RecordsPerAppend: 4, ValueBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 4 {
		t.Fatalf("%d cases, want 4", len(res.Cases))
	}
	for _, c := range res.Cases {
		t.Logf("%s: append ops %v; retry ops %v; poll ops %v (%d polls)", c.Name, c.AppendOps, c.RetryOps, c.PollOps, c.Polls)
		if c.Idempotent {
			checkFirstAttemptAndRetry(t, c)
			continue
		}
		// One topic commit (UpdateItem) per append whatever its partitions (issue 20),
		// one index entry per partition.
		want := map[string]float64{"S3.PutObject": 1, "DynamoDB.UpdateItem": 1,
			"DynamoDB.PutItem": float64(c.Partitions)}
		for op, w := range want {
			if got := c.PerAppend(op); got != w {
				t.Errorf("%s: %s per append = %v, want %v", c.Name, op, got, w)
			}
		}
		if c.Blocks != c.Appends*c.Partitions {
			t.Errorf("%s: %d blocks read, want %d", c.Name, c.Blocks, c.Appends*c.Partitions)
		}
		if got := c.PollOps["S3.GetObject"].Answered(); got != int64(c.Blocks) {
			t.Errorf("%s: %d GETs for %d blocks", c.Name, got, c.Blocks)
		}
	}
	p := res.Profile
	if p.PutsPerAppend != 1 || p.UpdatesPerBlock != 0 || p.PutItemsPerBlock != 1 || p.TopicCommitsPerAppend != 1 || p.WritesPerAppend != 0 || p.GetsPerBlock != 1 {
		t.Errorf("profile %+v, want 1 PUT and 1 UpdateItem (the topic commit) per append, 1 PutItem per block, 1 GET per block", p)
	}
	if p.StoredBytesPerByte < 1 || p.StoredBytesPerByte > 2 {
		t.Errorf("stored bytes per value byte = %v, want within [1, 2] for 100-byte values", p.StoredBytesPerByte)
	}
}

// checkFirstAttemptAndRetry: an idempotent first attempt (a producer request, Strata-Attempt
// 0: fenced idempotency) reads no claim and writes none, only its entries; a retry of an
// acknowledged request (Strata-Attempt 1) fences the earlier attempts on the topic item
// (one UpdateItem), searches the index (at least one Query per partition) and the members
// tables (at least one GET over the retries; a Log caches the tables it read), answers
// the first attempt's offsets (runCase checks them) and appends nothing: no PUT, no
// other DynamoDB write. The GetItem bound leaves room for one re-read of the topic's
// configuration (cached 5 s, which a loaded machine may pass mid-case), not for a claim
// read per append.
func checkFirstAttemptAndRetry(t *testing.T, c Case) {
	t.Helper()
	if got := c.PerAppend("DynamoDB.GetItem"); got >= 0.5 {
		t.Errorf("%s: %v GetItem per first attempt, want 0 (no claim can precede it)", c.Name, got)
	}
	if got, want := c.PerAppend("DynamoDB.PutItem"), float64(c.Partitions); got != want {
		t.Errorf("%s: %v PutItem per first attempt, want %v (an entry per partition, no claim)", c.Name, got, want)
	}
	retry := func(op string) float64 { return float64(c.RetryOps[op].Requests) / float64(c.Appends) }
	if got := retry("DynamoDB.UpdateItem"); got != 1 {
		t.Errorf("%s: %v UpdateItem per retry, want 1 (the fence on the topic item)", c.Name, got)
	}
	if got := retry("DynamoDB.Query"); got < float64(c.Partitions) {
		t.Errorf("%s: %v Query per retry, want at least %d (the index of each partition searched)", c.Name, got, c.Partitions)
	}
	if got := c.RetryOps["S3.GetObject"].Requests; got < 1 {
		t.Errorf("%s: %d GETs over the retries, want at least 1 (the members tables searched)", c.Name, got)
	}
	for _, op := range append([]string{"S3.PutObject"}, dynamoWrites...) {
		if got, want := retry(op), map[bool]float64{false: 0, true: 1}[op == "DynamoDB.UpdateItem"]; got != want {
			t.Errorf("%s: %v %s per retry of an acknowledged append, want %v (nothing appended twice)", c.Name, got, op, want)
		}
	}
}

func TestEmulatorConfigLoopbackOnly(t *testing.T) {
	for _, ep := range []string{"https://dynamodb.us-east-1.amazonaws.com", "http://10.0.0.1:4566", "127.0.0.1:4566", ""} {
		if _, err := EmulatorConfig(ep); !errors.Is(err, ErrNotLoopback) {
			t.Errorf("EmulatorConfig(%q) = %v, want ErrNotLoopback", ep, err)
		}
	}
	for _, ep := range []string{"http://127.0.0.1:4576", "http://localhost:4566", "http://[::1]:4566"} {
		if _, err := EmulatorConfig(ep); err != nil {
			t.Errorf("EmulatorConfig(%q) = %v", ep, err)
		}
	}
}

// TestGroupCommitCounts runs the group-commit cases on the emulator (8 appenders × 2
// rounds, a 200 ms window) and checks what group.go shares: the members of a batch share
// its object (fewer than 0.5 PUTs per acknowledged append); members without a key share
// one commit and index entry per partition of the batch; an idempotent member keeps its
// own commit per partition and makes the very DynamoDB requests it makes alone. The
// profile carries these counts and the CPU per append.
func TestGroupCommitCounts(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(ctx, t)
	res, err := Run(ctx, cfg, Options{Appends: 2, RecordsPerAppend: 4, ValueBytes: 100,
		Appenders: 8, GroupRounds: 2, GroupWindow: 200 * time.Millisecond, Idempotent: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Group) != 4 {
		t.Fatalf("%d group cases, want 4", len(res.Group))
	}
	alone := map[bool]map[int]Case{false: {}, true: {}}
	for _, c := range res.Cases {
		alone[c.Idempotent][c.Partitions] = c
	}
	for _, c := range res.Group {
		t.Logf("%s: %d appends in %d batches, CPU %s; ops %v", c.Name, c.Appends, c.Batches(), c.CPU, c.Ops)
		if c.Appends != 16 {
			t.Errorf("%s: %d acknowledged appends, want 16", c.Name, c.Appends)
		}
		if got := c.PerAppend("S3.PutObject"); got >= 0.5 {
			t.Errorf("%s: %.2f PUTs per acknowledged append, want < 0.5 (members share an object)", c.Name, got)
		}
		if !c.Idempotent {
			if got := c.PerBatchBlock("DynamoDB.PutItem"); got != 1 {
				t.Errorf("%s: PutItem per partition of a batch = %v, want 1 (one shared entry)", c.Name, got)
			}
			if got := float64(c.Ops["DynamoDB.UpdateItem"].Answered()) / float64(c.Batches()); got != 1 {
				t.Errorf("%s: UpdateItem per batch = %v, want 1 (one topic commit)", c.Name, got)
			}
			continue
		}
		// Fenced idempotency: producer members share the batch's entry per partition and
		// write no claim (a first attempt reads none either).
		if got, want := c.Ops["DynamoDB.PutItem"].Answered(), c.Batches()*int64(c.Partitions); got != want {
			t.Errorf("%s: %d PutItems, want %d (an entry per partition of a batch, no claim)", c.Name, got, want)
		}
		if got := c.PerAppend("DynamoDB.GetItem"); got != 0 {
			t.Errorf("%s: GetItem per append = %v, want 0 (first attempts read no claim)", c.Name, got)
		}
		if got := float64(c.Ops["DynamoDB.UpdateItem"].Answered()) / float64(c.Batches()); got != 1 {
			t.Errorf("%s: UpdateItem per batch = %v, want 1 (its members' commits in one topic commit)", c.Name, got)
		}
	}
	g := res.Profile.Group
	if !g.Measured || g.SharedCommitsPerBlock != 1 || !g.IdempotentShare || g.Appenders != 8 {
		t.Errorf("group profile %+v, want 1 shared commit per batch partition, idempotent members sharing it, 8 appenders", g)
	}
	if g.PutsPerAppend >= 0.5 || g.PutsPerAppend <= 0 {
		t.Errorf("group profile: %.3f PUTs per append, want in (0, 0.5)", g.PutsPerAppend)
	}
	if g.CPUPerAppend <= 0 {
		t.Errorf("group profile: CPU per append %s, want > 0", g.CPUPerAppend)
	}
	p := res.Profile
	if !p.Idempotent || p.PutItemsPerBlock != 1 || p.ClaimsPerBlock != 0 || p.WritesPerAppend != 0 || p.TopicCommitsPerAppend != 1 {
		t.Errorf("profile %+v, want per block 1 index PutItem and no claim, no claim and 1 topic commit per append", p)
	}
}

// TestModelShapesMatchTheCode (issue 20 items 1 and 2): the request shapes the cost tool
// prices for the built configuration (cost.DesignProfile without a key,
// cost.IdempotentDesignProfile with the SDK's producer requests, fenced idempotency) are
// what the append path sends, as pkg/awscount counts it on the emulator: PUTs, DynamoDB
// writes and reads per append and per partition block — the claim per request among
// them (WritesPerAppend, none priced) — the topic commit per append and per group-commit
// batch, GETs per block read, and group commit's sharing. A change to the append path
// that adds (or drops) a request, a claim write per request among them, fails here until
// the model says so. Retries are not priced, so not run (Options.NoRetry).
func TestModelShapesMatchTheCode(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(ctx, t)
	res, err := Run(ctx, cfg, Options{Appends: 2, RecordsPerAppend: 4, ValueBytes: 100,
		Appenders: 4, GroupRounds: 1, GroupWindow: 200 * time.Millisecond, Idempotent: true, NoRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	// The reads compared leave out the topic cache's refreshes (Case.ConfigReads), which
	// a slow run on a loaded machine makes more of; the cache bounds them, so a read of
	// the topics table added to every append still fails here.
	for _, c := range res.Cases {
		if bound := 1 + float64(c.AppendTime/log.TopicCacheTTL); c.ConfigReads > bound {
			t.Errorf("%s: %.0f reads of the topics table in %v of appends, the topic cache allows at most %.0f",
				c.Name, c.ConfigReads, c.AppendTime, bound)
		}
	}
	for _, c := range []struct {
		name          string
		counted, want cost.Profile
	}{
		{"no key", derive(res.Cases, false), cost.DesignProfile()},
		{"producer requests (Idempotency-Key, fenced)", res.Profile, cost.IdempotentDesignProfile()},
	} {
		for _, m := range shapeMismatches(c.counted, c.want) {
			t.Errorf("%s: %s", c.name, m)
		}
	}
	for _, m := range groupMismatches(res.Profile.Group, cost.IdempotentDesignProfile().Group) {
		t.Errorf("group commit: %s", m)
	}
}

// shape is every request the model prices per append and per partition block: the
// request's claim (Writes), the topic commit (one UpdateItem per append whatever its
// partitions, since issue 20 item 2), per block the sequencer UpdateItem (none now), the
// index entry and a partition's claim, the reads, and GETs per block read.
type shape struct {
	Puts, Writes, TopicCommits, Updates, Entries, Claims, Reads, ReadsPerBlock, Gets float64
}

func shapeOf(p cost.Profile) shape {
	return shape{p.PutsPerAppend, p.WritesPerAppend, p.TopicCommitsPerAppend, p.UpdatesPerBlock, p.PutItemsPerBlock,
		p.ClaimsPerBlock, p.ReadsPerAppend, p.ReadsPerAppendBlk, p.GetsPerBlock}
}

// shapeMismatches says how counted's shape differs from the priced one; none when equal.
func shapeMismatches(counted, priced cost.Profile) []string {
	if got, want := shapeOf(counted), shapeOf(priced); got != want {
		return []string{fmt.Sprintf("counted %+v, the model prices %+v", got, want)}
	}
	return nil
}

// groupMismatches says how a counted group profile's sharing differs from the priced one.
func groupMismatches(g, want cost.GroupProfile) []string {
	if g.SharedCommitsPerBlock != want.SharedCommitsPerBlock || g.IdempotentShare != want.IdempotentShare ||
		g.TopicCommitsPerBatch != want.TopicCommitsPerBatch {
		return []string{fmt.Sprintf("counted %.2f commits per batch partition, idempotent members sharing %t, %.2f topic commits per batch; "+
			"the model prices %.2f, %t, %.2f", g.SharedCommitsPerBlock, g.IdempotentShare, g.TopicCommitsPerBatch,
			want.SharedCommitsPerBlock, want.IdempotentShare, want.TopicCommitsPerBatch)}
	}
	return nil
}

// TestShapesCatchAClaimPerRequest: the shapes test's comparison fails for an append path
// that writes a claim per request (as folded claims did: one PutItem per append beside
// the entries, WritesPerAppend 1) against the fenced profile the model prices, and for
// one whose group-commit members keep their own commits; it passes the priced profile
// itself. No emulator: the counted profiles are made here as derive would read them.
func TestShapesCatchAClaimPerRequest(t *testing.T) {
	priced := cost.IdempotentDesignProfile()
	if m := shapeMismatches(priced, priced); m != nil {
		t.Errorf("the priced profile against itself: %v", m)
	}
	folded := priced
	folded.WritesPerAppend = 1
	if m := shapeMismatches(folded, priced); m == nil {
		t.Error("a claim write per request passes the shapes comparison")
	}
	perPartition := priced
	perPartition.ClaimsPerBlock = 1
	if m := shapeMismatches(perPartition, priced); m == nil {
		t.Error("a claim write per partition passes the shapes comparison")
	}
	own := priced.Group
	own.IdempotentShare = false
	if m := groupMismatches(own, priced.Group); m == nil {
		t.Error("idempotent members keeping their own commits pass the shapes comparison")
	}
	// derive reads a claim per request off the counts as WritesPerAppend.
	cases := []Case{
		{Idempotent: true, Partitions: 1, Appends: 1, Records: 4, ValueBytes: 1, AppendOps: ops(1, 1, 2), PollOps: ops(0, 0, 0), Polls: 1, Blocks: 1},
		{Idempotent: true, Partitions: 4, Appends: 1, Records: 4, ValueBytes: 1, AppendOps: ops(1, 1, 5), PollOps: ops(0, 0, 0), Polls: 1, Blocks: 1},
		{Partitions: 1, Appends: 1, Records: 4, ValueBytes: 1, AppendOps: ops(1, 1, 1), PollOps: ops(0, 0, 0), Polls: 1, Blocks: 1},
		{Partitions: 4, Appends: 1, Records: 4, ValueBytes: 1, AppendOps: ops(1, 1, 4), PollOps: ops(0, 0, 0), Polls: 1, Blocks: 1},
	}
	if p := derive(cases, true); p.WritesPerAppend != 1 || p.ClaimsPerBlock != 0 || shapeMismatches(p, priced) == nil {
		t.Errorf("derived %+v from a claim per request: want WritesPerAppend 1, a mismatch", shapeOf(p))
	}
}

// ops is the counts of an append: PUTs, UpdateItems and PutItems.
func ops(puts, updates, putItems int64) map[string]awscount.Op {
	return map[string]awscount.Op{"S3.PutObject": {Requests: puts}, "DynamoDB.UpdateItem": {Requests: updates},
		"DynamoDB.PutItem": {Requests: putItems}}
}
