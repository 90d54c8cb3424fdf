package dynamo

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

const fenceTopic = "orders#tc01abc"

// fencedItem is a topic item after 3 batches (the newest one commit of partition 0)
// holding a fence of key "orders#tc01abc#k" attempt 2 set at batch 1.
func fencedItem() item {
	f := store.RequestFence{Key: fenceTopic + "#k", Attempt: 2, At: time.UnixMilli(9)}
	name := fenceName(f.Key)
	return item{attrTP: avS(fenceTopic + topicItemTail), attrTopic: avS(fenceTopic), attrBatches: avN(3),
		prefixNext + "0": avN(4), prefixSeq + "0": avN(3),
		attrBObject: avS("v1/o"), attrBAt: avN(5), attrBExpires: avN(6),
		attrBCommits: &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberL{
			Value: []types.AttributeValue{avN(0), avN(2), avN(0), avN(20), avN(4)}}}},
		name: avFence(f), fenceBatchName(name): avN(1)}
}

// TestFenceImageDecoding: a topic item's fences are decoded onto every state of the
// stream image (Last.Batch the item's batch count, Last.Fences its fences), and a
// malformed fence fails the decode of the whole image instead of being dropped.
func TestFenceImageDecoding(t *testing.T) {
	name := fenceName(fenceTopic + "#k")
	for _, tc := range []struct {
		name   string
		mutate func(it item)
	}{
		{name: "well formed"},
		{"batch attribute missing", func(it item) { delete(it, fenceBatchName(name)) }},
		{"batch attribute alone", func(it item) { delete(it, name) }},
		{"key not naming the attribute", func(it item) {
			it[name].(*types.AttributeValueMemberM).Value[fenceKeyField] = avS(fenceTopic + "#other")
		}},
		{"attempt 0", func(it item) { it[name].(*types.AttributeValueMemberM).Value[fenceAttempt] = avN(0) }},
		{"attempt past int32", func(it item) {
			it[name].(*types.AttributeValueMemberM).Value[fenceAttempt] = avN(1 << 31)
		}},
		{"time before the epoch", func(it item) { it[name].(*types.AttributeValueMemberM).Value[fenceAt] = avN(-1) }},
		{"batch past the item's", func(it item) { it[fenceBatchName(name)] = avN(4) }},
		{"negative batch", func(it item) { it[fenceBatchName(name)] = avN(-1) }},
		{"extra field", func(it item) { it[name].(*types.AttributeValueMemberM).Value["z"] = avN(1) }},
		{"not a map", func(it item) { it[name] = avS("x") }},
		{"key too long", func(it item) {
			k := fenceTopic + "#" + strings.Repeat("k", store.MaxFenceKey)
			f := avFence(store.RequestFence{Key: k, Attempt: 1, At: time.UnixMilli(9)})
			delete(it, name)
			delete(it, fenceBatchName(name))
			it[fenceName(k)], it[fenceBatchName(fenceName(k))] = f, avN(1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := fencedItem()
			if tc.mutate != nil {
				tc.mutate(it)
			}
			sts, err := DecodeSequencerImages(it)
			if tc.mutate != nil {
				if err == nil {
					t.Fatalf("decoded %+v, want an error", sts)
				}
				checkDecodeError(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []store.RequestFence{{Key: fenceTopic + "#k", Attempt: 2, Batch: 1, At: time.UnixMilli(9).UTC()}}
			if len(sts) != 1 || sts[0].Last.Batch != 3 || !reflect.DeepEqual(sts[0].Last.Fences, want) {
				t.Fatalf("decoded %+v, want one state of batch 3 with fences %+v", sts, want)
			}
			if !sts[0].Last.Fences[0].Applies(fenceTopic+"#k", 1, sts[0].Last.Batch) {
				t.Fatalf("the decoded fence does not apply to attempt 1 in the newest batch")
			}
		})
	}
}

// TestExpiredFencesPlan: a commit at now drops the fences seen set more than the
// horizon before it, at most limit of them, and none within the horizon or later.
func TestExpiredFencesPlan(t *testing.T) {
	now := time.UnixMilli(10_000_000)
	f := func(key string, age time.Duration) store.RequestFence {
		return store.RequestFence{Key: key, Attempt: 1, At: now.Add(-age)}
	}
	for _, tc := range []struct {
		name  string
		seen  []store.RequestFence
		limit int
		want  []string
	}{
		{"none seen", nil, 4, nil},
		{"within the horizon", []store.RequestFence{f("a", time.Minute), f("b", store.FenceHorizon)}, 4, nil},
		{"past the horizon", []store.RequestFence{f("a", store.FenceHorizon+time.Millisecond), f("b", time.Minute)}, 4, []string{"a"}},
		{"set after now (another host's clock)", []store.RequestFence{f("a", -time.Hour)}, 4, nil},
		{"limit", []store.RequestFence{f("a", time.Hour), f("b", time.Hour), f("c", time.Hour)}, 2, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, x := range expiredFences(tc.seen, now, tc.limit) {
				got = append(got, x.Key)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("expiredFences = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFenceOutcome: how a fence whose condition failed, or whose answer was lost, is
// decided from the topic item read back.
func TestFenceOutcome(t *testing.T) {
	mine := store.RequestFence{Key: fenceTopic + "#k", Attempt: 2, At: time.UnixMilli(9)}
	withBatch := func(batches int64) item {
		it := fencedItem()
		it[attrBatches] = avN(batches)
		return it
	}
	collided := fencedItem()
	collided[fenceName(mine.Key)].(*types.AttributeValueMemberM).Value[fenceKeyField] = avS("orders#tc01abc#other")
	for _, tc := range []struct {
		name      string
		f         store.RequestFence
		it        item
		lost      bool
		done      bool
		wantErr   error
		anyErr    bool
		wantBatch int64
	}{
		{name: "no item", f: mine, it: nil},
		{name: "lost answer, applied, no batch since", f: mine, it: withBatch(1), lost: true, done: true, wantBatch: 1},
		{name: "lost answer, applied, batches since", f: mine, it: withBatch(3), lost: true, done: true, wantErr: store.ErrCommitUnknown},
		{name: "same attempt, not a lost answer", f: mine, it: withBatch(1), done: true, wantErr: store.ErrSuperseded},
		{name: "lower attempt", f: store.RequestFence{Key: mine.Key, Attempt: 1, At: time.UnixMilli(20)}, it: fencedItem(), done: true, wantErr: store.ErrSuperseded},
		{name: "higher attempt not applied", f: store.RequestFence{Key: mine.Key, Attempt: 3, At: time.UnixMilli(20)}, it: fencedItem(), lost: true},
		{name: "other key absent", f: store.RequestFence{Key: fenceTopic + "#new", Attempt: 1, At: time.UnixMilli(20)}, it: fencedItem(), lost: true},
		{name: "another key under the name: a malformed item", f: mine, it: collided, anyErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &MetaStore{}
			fp, done, err := s.fenceOutcome("fence", fenceTopic, tc.f, tc.it, tc.lost)
			switch {
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("fenceOutcome: %v, want %v", err, tc.wantErr)
			case tc.wantErr == nil && tc.anyErr != (err != nil):
				t.Fatalf("fenceOutcome: %v, want error %v", err, tc.anyErr)
			case done != tc.done:
				t.Fatalf("fenceOutcome done %v, want %v", done, tc.done)
			case done && err == nil && (fp.Batch != tc.wantBatch || !maps.Equal(fp.Next, map[int32]int64{0: 4})):
				t.Fatalf("fence point %+v, want batch %d, next {0: 4}", fp, tc.wantBatch)
			}
		})
	}
}
