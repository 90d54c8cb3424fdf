package dynamo_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/awstest"
	"github.com/stratalog/strata/pkg/store/dynamo"
	"github.com/stratalog/strata/pkg/store/storetest"
)

// harness bootstraps a fresh set of tables under a random prefix for one test and
// deletes them in Close.
type harness struct {
	t      *testing.T
	client *dynamodb.Client
	cfg    dynamo.Config
	made   bool
}

// conformanceFenceLimits are the conformance stores' bounds on a topic's fences: small,
// so that the suite reaches them in a few dozen writes of a small item instead of
// hundreds of an item that grows to the deployment's bound.
var conformanceFenceLimits = store.FenceLimits{Fences: 24, OwnerFences: 8}

func newHarness(ctx context.Context, t *testing.T) (storetest.Harness, error) {
	return &harness{t: t, client: awstest.DynamoDBClient(ctx, t),
		cfg: dynamo.Config{TablePrefix: randomPrefix(t), FenceLimits: conformanceFenceLimits}}, nil
}

func (h *harness) MakeObjectStore(ctx context.Context) (store.ObjectStore, error) {
	return nil, fmt.Errorf("dynamo holds metadata only: %w", errors.ErrUnsupported)
}

func (h *harness) MakeMetaStore(ctx context.Context) (store.MetaStore, error) {
	h.made = true
	if err := dynamo.Bootstrap(ctx, h.client, nil, h.cfg); err != nil {
		return nil, err
	}
	return dynamo.New(h.client, h.cfg), nil
}

func (h *harness) Close() {
	if !h.made {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dynamo.Teardown(ctx, h.client, h.cfg); err != nil {
		h.t.Errorf("harness cleanup: %v", err)
	}
}

func randomPrefix(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "test-" + hex.EncodeToString(b[:]) + "-"
}

// newStore returns a MetaStore on fresh tables that are deleted when t ends.
func newStore(t *testing.T, cfg dynamo.Config) (*dynamo.MetaStore, *dynamodb.Client, dynamo.Config) {
	t.Helper()
	ctx := t.Context()
	client := awstest.DynamoDBClient(ctx, t)
	cfg.TablePrefix = randomPrefix(t)
	if err := dynamo.Bootstrap(ctx, client, nil, cfg); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
	t.Cleanup(func() {
		if err := dynamo.Teardown(context.Background(), client, cfg); err != nil {
			t.Errorf("Teardown: %v", err)
		}
	})
	return dynamo.New(client, cfg), client, cfg
}

func TestConformance(t *testing.T) {
	storetest.RunConformanceTests(t, newHarness)
}

// TestConditionalPutRace races conditional puts at one base offset, round after round. Through the serialising launcher
// (localstack/moto_server.py) exactly one put per round wins, every loser is told the
// winner's entry and nothing of a loser is stored. Against moto's own threaded server
// (moto_server.py --no-lock) this fails within a few rounds: a failed transaction restores
// a snapshot taken before the winner's write, erasing an acknowledged entry, and two
// racers can both win.
func TestConditionalPutRace(t *testing.T) {
	m, client, cfg := newStore(t, dynamo.Config{})
	ctx := t.Context()
	// Ballast in the index table makes moto's per-transaction snapshot slow enough for
	// its request threads to interleave, as they would under real load.
	ballast := make([]types.WriteRequest, 0, 25)
	for i := range 100 {
		e := store.IndexEntry{Topic: "ballast", BaseOffset: int64(i), Count: 1, ObjectKey: fmt.Sprintf("ballast-%d", i)}
		ballast = append(ballast, types.WriteRequest{PutRequest: &types.PutRequest{Item: dynamo.IndexItemForTest(e)}})
		if len(ballast) == 25 {
			if _, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{cfg.TableName(dynamo.IndexTable): ballast},
			}); err != nil {
				t.Fatal(err)
			}
			ballast = ballast[:0]
		}
	}
	const rounds, racers = 10, 8
	for r := range rounds {
		topic := fmt.Sprintf("race-%d", r)
		entries := make([]store.IndexEntry, racers)
		errs := make([]error, racers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range racers {
			entries[i] = store.IndexEntry{Topic: topic, Count: int64(i + 1), ObjectKey: fmt.Sprintf("racer-%d", i), ByteLength: 1}
			wg.Go(func() {
				<-start
				errs[i] = m.PutIndexEntry(ctx, entries[i])
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			if err != nil {
				continue
			}
			if winner >= 0 {
				t.Fatalf("round %d: racers %d and %d both won the conditional put (is the emulator serialising requests?)", r, winner, i)
			}
			winner = i
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody won: %v", r, errs)
		}
		for i, err := range errs {
			var ce *store.ConflictError
			if i != winner && (!errors.As(err, &ce) || ce.Existing.ObjectKey != entries[winner].ObjectKey) {
				t.Fatalf("round %d: loser %d got %v, want a conflict naming %s", r, i, err, entries[winner].ObjectKey)
			}
		}
		last, ok, err := m.LastIndexEntry(ctx, topic, 0)
		if err != nil || !ok || last.ObjectKey != entries[winner].ObjectKey {
			t.Fatalf("round %d: stored entry %+v, %v, %v; want the winner's %s (an acknowledged write was lost)",
				r, last, ok, err, entries[winner].ObjectKey)
		}
	}
}

// TestResetCommitsInChunks: a reset larger than one transaction still sets every row,
// and a live lease refuses it before anything is written.
func TestResetCommitsInChunks(t *testing.T) {
	m, _, _ := newStore(t, dynamo.Config{MaxTransactItems: 4})
	ctx := t.Context()
	now := time.UnixMilli(1_732_870_000_000)
	offsets := map[int32]int64{}
	for p := range int32(7) {
		offsets[p] = int64(100 + p)
	}
	if err := m.ResetCommits(ctx, "g", "t", offsets, now); err != nil {
		t.Fatalf("ResetCommits over 7 partitions in 4-item transactions: %v", err)
	}
	for p, want := range offsets {
		c, err := m.GetCommit(ctx, "g", "t", p)
		if err != nil || c.NextOffset != want {
			t.Fatalf("GetCommit(%d) = %+v, %v; want next offset %d", p, c, err, want)
		}
	}
	if _, err := m.AcquireLease(ctx, "g", "t", 6, "m-1", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	again := map[int32]int64{}
	for p := range offsets {
		again[p] = 1
	}
	if err := m.ResetCommits(ctx, "g", "t", again, now); !errors.Is(err, store.ErrGroupActive) {
		t.Fatalf("ResetCommits with a live lease: %v, want ErrGroupActive", err)
	}
	for p, want := range offsets {
		if c, err := m.GetCommit(ctx, "g", "t", p); err != nil || c.NextOffset != want {
			t.Fatalf("after a refused reset GetCommit(%d) = %+v, %v; want next offset %d unchanged", p, c, err, want)
		}
	}
}

// TestBootstrapMatchesSchema: Bootstrap is idempotent and creates exactly what Tables()
// describes (keys and types, stream, TTL).
func TestBootstrapMatchesSchema(t *testing.T) {
	_, client, cfg := newStore(t, dynamo.Config{})
	ctx := t.Context()
	if err := dynamo.Bootstrap(ctx, client, nil, cfg); err != nil {
		t.Fatalf("second Bootstrap: %v", err)
	}
	for _, ts := range dynamo.Tables() {
		name := cfg.TableName(ts.Suffix)
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatalf("DescribeTable %s: %v", name, err)
		}
		d := out.Table
		if d.TableStatus != types.TableStatusActive {
			t.Errorf("%s: status %s", name, d.TableStatus)
		}
		types_ := map[string]string{}
		for _, ad := range d.AttributeDefinitions {
			types_[aws.ToString(ad.AttributeName)] = string(ad.AttributeType)
		}
		want := []dynamo.KeyAttr{ts.PartitionKey}
		if ts.SortKey.Name != "" {
			want = append(want, ts.SortKey)
		}
		if len(d.KeySchema) != len(want) {
			t.Fatalf("%s: key schema %+v, want %+v", name, d.KeySchema, want)
		}
		for i, k := range want {
			if aws.ToString(d.KeySchema[i].AttributeName) != k.Name || types_[k.Name] != string(k.Type) {
				t.Errorf("%s: key %d is %s (%s), want %s (%s)", name, i, aws.ToString(d.KeySchema[i].AttributeName), types_[k.Name], k.Name, k.Type)
			}
		}
		streamed := d.StreamSpecification != nil && aws.ToBool(d.StreamSpecification.StreamEnabled)
		if streamed != (ts.Stream != "") || (streamed && string(d.StreamSpecification.StreamViewType) != string(ts.Stream)) {
			t.Errorf("%s: stream %+v, want %q", name, d.StreamSpecification, ts.Stream)
		}
		ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		enabled := ttl.TimeToLiveDescription.TimeToLiveStatus == types.TimeToLiveStatusEnabled
		if enabled != (ts.TTLAttribute != "") || (enabled && aws.ToString(ttl.TimeToLiveDescription.AttributeName) != ts.TTLAttribute) {
			t.Errorf("%s: TTL %+v, want attribute %q", name, ttl.TimeToLiveDescription, ts.TTLAttribute)
		}
	}
}

// TestMissingTableIsNotNotFound: a store pointed at tables that do not exist must not
// answer "no such row".
func TestMissingTableIsNotNotFound(t *testing.T) {
	ctx := t.Context()
	m := dynamo.New(awstest.DynamoDBClient(ctx, t), dynamo.Config{TablePrefix: randomPrefix(t)})
	if _, err := m.GetTopic(ctx, "x"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetTopic without tables: %v, want an error other than ErrNotFound", err)
	}
}

// TestEmulatorReturnsOldItem pins what the conflict paths rely on to avoid a second read:
// a failed condition hands back the existing item (ReturnValuesOnConditionCheckFailure
// ALL_OLD), from PutItem and from inside a transaction. The store falls back to a
// consistent read when an emulator does not; this says whether the one in use does.
func TestEmulatorReturnsOldItem(t *testing.T) {
	m, client, cfg := newStore(t, dynamo.Config{})
	ctx := t.Context()
	e := store.IndexEntry{Topic: "t", Count: 3, ObjectKey: "first", ByteLength: 1}
	if err := m.PutIndexEntry(ctx, e); err != nil {
		t.Fatal(err)
	}
	second := e
	second.ObjectKey = "second"
	put := &types.Put{
		TableName:                           aws.String(cfg.TableName(dynamo.IndexTable)),
		Item:                                dynamo.IndexItemForTest(second),
		ConditionExpression:                 aws.String("attribute_not_exists(base_offset)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	_, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: put.TableName, Item: put.Item, ConditionExpression: put.ConditionExpression,
		ReturnValuesOnConditionCheckFailure: put.ReturnValuesOnConditionCheckFailure,
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || len(ccf.Item) == 0 {
		t.Fatalf("conditional PutItem: %v, want ConditionalCheckFailedException with the old item", err)
	}
	_, err = client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: put}}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != 1 || len(tce.CancellationReasons[0].Item) == 0 {
		t.Fatalf("conditional transaction: %v, want a cancellation reason with the old item", err)
	}
}

// TestMigrationFromIndexFormat: a table set written by the release whose index was the
// sequencer (index entries, a log start in the partitions table, no sequencer items) is
// upgraded on first use: the counter continues after the newest entry, the log start
// carries over, and a second read changes nothing.
func TestMigrationFromIndexFormat(t *testing.T) {
	m, client, cfg := newStore(t, dynamo.Config{})
	ctx := t.Context()
	for _, e := range []store.IndexEntry{
		{Topic: "old", Partition: 3, BaseOffset: 0, Count: 4, ObjectKey: "v1/old/a", ByteLength: 10},
		{Topic: "old", Partition: 3, BaseOffset: 4, Count: 2, ObjectKey: "v1/old/b", ByteLength: 10},
	} {
		if err := m.PutIndexEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	_, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(cfg.TableName(dynamo.PartitionsTable)),
		Item: map[string]types.AttributeValue{
			"topic": &types.AttributeValueMemberS{Value: "old"}, "partition": &types.AttributeValueMemberN{Value: "3"},
			"log_start_offset": &types.AttributeValueMemberN{Value: "4"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		st, err := m.Sequencer(ctx, "old", 3)
		if err != nil || st.NextOffset != 6 || st.LogStart != 4 || st.Last != nil {
			t.Fatalf("migrated sequencer = %+v, %v; want next 6, log start 4", st, err)
		}
	}
	c, err := m.Sequence(ctx, store.SeqCommit{Entry: store.IndexEntry{Topic: "old", Partition: 3, Count: 1, ObjectKey: "v1/old/c", ByteLength: 5}})
	if err != nil || c.Entry.BaseOffset != 6 || c.Seq != 1 {
		t.Fatalf("first commit after migration = base %d seq %d, %v; want 6 and 1", c.Entry.BaseOffset, c.Seq, err)
	}
}

// TestDeleteIndexRangeInBatches: a range wider than one BatchWriteItem (25) is deleted
// in several parallel calls, wholly and only below the cut.
func TestDeleteIndexRangeInBatches(t *testing.T) {
	m, _, _ := newStore(t, dynamo.Config{})
	ctx := t.Context()
	for base := range int64(80) {
		e := store.IndexEntry{Topic: "t", Partition: 0, BaseOffset: base, Count: 1,
			ObjectKey: fmt.Sprintf("v1/t/%d", base), ByteLength: 10}
		if err := m.PutIndexEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	n, err := m.DeleteIndexRange(ctx, "t", 0, 77)
	if err != nil || n != 77 {
		t.Fatalf("DeleteIndexRange(below 77) = %d, %v; want 77", n, err)
	}
	es, err := m.IndexEntries(ctx, "t", 0, 0, 100)
	if err != nil || len(es) != 3 || es[0].BaseOffset != 77 {
		t.Fatalf("entries left = %d from %v (%v); want 3 from 77", len(es), es, err)
	}
}

func TestEffectConformance(t *testing.T) {
	storetest.RunEffectTests(t, func(ctx context.Context, t *testing.T) (store.MetaStore, store.EffectStore) {
		m, client, cfg := newStore(t, dynamo.Config{})
		table := cfg.TablePrefix + "orders-applied"
		if err := dynamo.CreateEffectsTable(ctx, client, table); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table})
		})
		return m, ttlEffects{m.Effects(table), client, table}
	})
}

// ttlEffects is an EffectStore whose DeleteExpired does what DynamoDB's TTL does (the
// emulator does not): it deletes the business table's items whose TTL attribute
// (dynamo.EffectTTLAttribute, epoch seconds) is before now. So the conformance suite
// sees a marker expire exactly when the attribute ApplyEffect wrote says.
type ttlEffects struct {
	*dynamo.EffectStore
	client *dynamodb.Client
	table  string
}

func (e ttlEffects) DeleteExpired(ctx context.Context, now time.Time) (int, error) {
	out, err := e.client.Scan(ctx, &dynamodb.ScanInput{
		TableName:                 &e.table,
		FilterExpression:          aws.String("#ttl < :now"),
		ExpressionAttributeNames:  map[string]string{"#ttl": dynamo.EffectTTLAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": &types.AttributeValueMemberN{Value: fmt.Sprint(now.Unix())}},
	})
	if err != nil {
		return 0, err
	}
	for _, it := range out.Items {
		key := map[string]types.AttributeValue{dynamo.EffectKeyAttribute: it[dynamo.EffectKeyAttribute]}
		if _, err := e.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &e.table, Key: key}); err != nil {
			return 0, err
		}
	}
	return len(out.Items), nil
}

// TestFencesOnTheStream: the sequencer stream's states carry, for every record of a
// topic item, the item's batch number and fences, so the materialiser decides as the
// appender did: a batch's record carries the fences that applied to it, a fence's own
// record (which re-carries the newest batch) carries it without it applying there.
func TestFencesOnTheStream(t *testing.T) {
	m, client, cfg := newStore(t, dynamo.Config{})
	ctx := t.Context()
	topic := store.TopicID("orders", store.TopicCommitPrefix+"01stream")
	batch := func(object string) store.SeqCommit {
		out, errs := m.SequenceBatch(ctx, []store.SeqCommit{{Entry: store.IndexEntry{Topic: topic, Partition: 0, Count: 1,
			ObjectKey: object, ByteLength: 10, AppendedAt: time.UnixMilli(1_000), ExpiresAt: time.UnixMilli(2_000)}}})
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	batch("v1/o/a")
	f := store.RequestFence{Key: topic + "#k", Attempt: 1, At: time.UnixMilli(1_500)}
	fp, err := m.FenceRequest(ctx, topic, f)
	if err != nil {
		t.Fatal(err)
	}
	appended := batch("v1/o/b")
	f.Batch, f.At = fp.Batch, f.At.UTC()

	var got []store.SeqState
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	stream := dynamo.NewCommitStream(client, awstest.StreamsClient(ctx, t), cfg)
	stream.Interval = 20 * time.Millisecond
	err = stream.Run(sctx, func(_ context.Context, sts []store.SeqState) error {
		got = append(got, sts...)
		if len(got) >= 3 {
			cancel()
		}
		return nil
	})
	if err != nil || len(got) < 3 {
		t.Fatalf("read %d states of the stream (%v), want 3: the batch, the fence, the batch", len(got), err)
	}
	for i, want := range []struct {
		object string
		batch  int64
		fences []store.RequestFence
	}{{"v1/o/a", 1, nil}, {"v1/o/a", 1, []store.RequestFence{f}}, {"v1/o/b", 2, []store.RequestFence{f}}} {
		c := got[i].Last
		if c == nil || c.Entry.ObjectKey != want.object || c.Batch != want.batch || !reflect.DeepEqual(c.Fences, want.fences) {
			t.Fatalf("stream state %d = %+v, want %s of batch %d with fences %+v", i, c, want.object, want.batch, want.fences)
		}
	}
	if c := got[2].Last; !reflect.DeepEqual(c.Fences, appended.Fences) || c.Batch != appended.Batch {
		t.Fatalf("the stream's state %+v differs from the appender's result %+v", c, appended)
	}
	if got[1].Last.Fences[0].Applies(f.Key, 0, got[1].Last.Batch) || !got[2].Last.Fences[0].Applies(f.Key, 0, got[2].Last.Batch) {
		t.Fatal("the fence applies to the batch before it, or not to the one after")
	}
}

// TestFencePrunedByAnotherHost: a store that never saw a fence learns it from its
// first commit's answer and removes it at its next commit past the fence's horizon; a
// fence within the horizon stays.
func TestFencePrunedByAnotherHost(t *testing.T) {
	fencer, client, cfg := newStore(t, dynamo.Config{})
	committer := dynamo.New(client, cfg)
	ctx := t.Context()
	topic := store.TopicID("orders", store.TopicCommitPrefix+"01prune")
	set := time.UnixMilli(1_800_000_000_000)
	late := set.Add(store.FenceHorizon + time.Minute)
	for _, f := range []store.RequestFence{{Key: topic + "#old", Attempt: 1, At: set}, {Key: topic + "#new", Attempt: 1, At: late}} {
		if _, err := fencer.FenceRequest(ctx, topic, f); err != nil {
			t.Fatal(err)
		}
	}
	var keys [][]string
	for i := range 2 {
		out, errs := committer.SequenceBatch(ctx, []store.SeqCommit{{Entry: store.IndexEntry{Topic: topic, Partition: 0, Count: 1,
			ObjectKey: fmt.Sprintf("v1/o/%d", i), ByteLength: 10, AppendedAt: late, ExpiresAt: late.Add(time.Hour)}}})
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, f := range out[0].Fences {
			ks = append(ks, f.Key)
		}
		keys = append(keys, ks)
	}
	if want := [][]string{{topic + "#new", topic + "#old"}, {topic + "#new"}}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("the two batches past the old fence's horizon carry %v, want %v", keys, want)
	}
}
