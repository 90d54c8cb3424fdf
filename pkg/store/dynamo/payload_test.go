package dynamo

import (
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

// TestCommitPayloadOnBothItems: a partition item (c_*) and a topic item (b_* and its
// commit list) carrying the same commit decode to the same SeqCommit — object, times,
// block, idempotency key and members table — and a members table that is not
// "offset:length" fails either decode.
func TestCommitPayloadOnBothItems(t *testing.T) {
	const topic = "orders#tc01abc"
	partItem := func(members string) item {
		it := item{attrTP: avS(tpKey(topic, 1)), attrTopic: avS(topic), attrPartition: avN(1),
			attrNextOffset: avN(7), attrNextSeq: avN(2), attrLogStart: avN(0),
			attrCCount: avN(3), attrCObject: avS("v1/o"), attrCByteOff: avN(10), attrCByteLen: avN(20),
			attrCMaxTs: avN(4), attrCAt: avN(5), attrCExpires: avN(6), attrCIdem: avS("k"), attrCHash: avS("h")}
		if members != "" {
			it[attrCMembers] = avS(members)
		}
		return it
	}
	topicItem := func(members string) item {
		it := item{attrTP: avS(topic + topicItemTail), attrTopic: avS(topic), attrBatches: avN(1),
			prefixNext + "1": avN(7), prefixSeq + "1": avN(2),
			attrBObject: avS("v1/o"), attrBAt: avN(5), attrBExpires: avN(6),
			attrBCommits: &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberL{
				Value: []types.AttributeValue{avN(1), avN(3), avN(10), avN(20), avN(4), avS("k"), avS("h")}}}}}
		if members != "" {
			it[attrBMembers] = avS(members)
		}
		return it
	}
	want := func(mo, ml int64) store.SeqCommit {
		return store.SeqCommit{Entry: store.IndexEntry{Topic: topic, Partition: 1, BaseOffset: 4, Count: 3,
			ObjectKey: "v1/o", ByteOffset: 10, ByteLength: 20, MaxTimestamp: time.UnixMilli(4).UTC(),
			AppendedAt: time.UnixMilli(5).UTC(), ExpiresAt: time.UnixMilli(6).UTC(), MembersOffset: mo, MembersLength: ml},
			IdempotencyKey: "k", BodyHash: "h", Seq: 2, MembersOffset: mo, MembersLength: ml}
	}
	for _, tc := range []struct {
		name    string
		members string
		want    store.SeqCommit
		bad     bool
	}{
		{name: "members table", members: "100:42", want: want(100, 42)},
		{name: "no members table", want: want(0, 0)},
		{name: "members not offset:length", members: "100", bad: true},
		{name: "members of no length", members: "100:0", bad: true},
		{name: "members at a negative offset", members: "-1:5", bad: true},
	} {
		for kind, it := range map[string]item{"partition item": partItem(tc.members), "topic item": topicItem(tc.members)} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				sts, err := DecodeSequencerImages(it)
				if tc.bad {
					if err == nil {
						t.Fatalf("decoded %+v, want an error", sts)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				want := tc.want
				if kind == "topic item" {
					want.Batch = 1 // the item's batch count: its newest batch's number
					want.Entry.Batch = 1
				}
				if len(sts) != 1 || sts[0].Last == nil || !reflect.DeepEqual(*sts[0].Last, want) {
					t.Fatalf("decoded %+v, want one state with Last %+v", sts, want)
				}
			})
		}
	}
}
