package dynamo

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// avBytes is a value's size as DynamoDB bills it: a string its UTF-8 length, a number
// one byte per two significant digits plus one, a list 3 bytes plus 1 per element plus
// the elements, a map the same plus its names.
func avBytes(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		digits := strings.TrimLeft(strings.TrimPrefix(v.Value, "-"), "0")
		return (len(digits)+1)/2 + 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + avBytes(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + avBytes(e)
		}
		return n
	}
	return 0
}

func itemBytes(it item) int {
	n := 0
	for k, v := range it {
		n += len(k) + avBytes(v)
	}
	return n
}

// TestTopicItemSize measures the topic item as DynamoDB bills a batch's write (the
// larger of the old and new item, per started KB): a topic whose P partitions all hold
// millions of records, after a batch touching k of them. It fails if the item of a
// batch touching every one of 16 partitions outgrows 2 KB (2 write units).
func TestTopicItemSize(t *testing.T) {
	id := "orders#tc01jdz8w6q3n4v5x7y9z0a1b2c3"
	at := time.UnixMilli(1796092200123)
	for _, c := range []struct{ partitions, touched int }{{1, 1}, {16, 1}, {16, 16}, {64, 1}, {64, 16}, {64, 64}, {256, 16}, {256, 256}} {
		it := topicItemKey(id)
		it[attrTopic], it[attrBatches] = avS(id), avN(12_345_678)
		for p := range c.partitions {
			ps := strconv.Itoa(p)
			it[prefixNext+ps], it[prefixSeq+ps], it[prefixStart+ps] = avN(123_456_789), avN(1_234_567), avN(23_456_789)
		}
		var cs []store.SeqCommit
		for p := range c.touched {
			cs = append(cs, store.SeqCommit{Entry: store.IndexEntry{Partition: int32(p), Count: 1000, ByteOffset: int64(p) * 120_000,
				ByteLength: 120_000, MaxTimestamp: at}})
		}
		it[attrBObject] = avS("v1/orders/tc01jdz8w6q3n4v5x7y9z0a1b2c3/01JDZ8W7R8S9T0U1V2W3X4Y5Z6")
		it[attrBAt], it[attrBExpires], it[attrBCommits] = avN(at.UnixMilli()), avN(at.UnixMilli()), encodeBatch(cs)
		n := itemBytes(it)
		wru := (n + 1023) / 1024
		t.Logf("%3d partitions, batch touching %3d: %6d bytes, %d write units", c.partitions, c.touched, n, wru)
		if c.partitions == 16 && c.touched == 16 && wru > 2 {
			t.Errorf("a 16-partition batch writes %d bytes (%d units), want at most 2 units", n, wru)
		}
		if _, err := decodeBatchItem(it); err != nil {
			t.Fatal(fmt.Errorf("the measured item does not decode: %w", err))
		}
	}
}

// TestFenceSize measures a request fence on the topic item (its two attributes, which
// every batch's write pays for while the fence is there): a producer request's scoped
// key of a topic ID and a 26-character producer id with a sequence number. It fails if
// a fence takes more than 64 bytes beside its key.
func TestFenceSize(t *testing.T) {
	id := "orders#tc01jdz8w6q3n4v5x7y9z0a1b2c3"
	f := store.RequestFence{Key: id + "#01JDZ8W7R8S9T0U1V2W3X4Y5Z6:123456789", Attempt: 3, At: time.UnixMilli(1796092200123)}
	name := fenceName(f.Key)
	it := item{name: avFence(f), fenceBatchName(name, f.Attempt): avN(12_345_678)}
	n := itemBytes(it)
	t.Logf("a fence of a %d-byte key: %d bytes on the topic item", len(f.Key), n)
	if n > len(f.Key)+64 {
		t.Errorf("a fence takes %d bytes, want at most %d", n, len(f.Key)+64)
	}
}

// TestFencedTopicItemBound is the largest the fences can make a topic item: store.MaxFences
// keys of the longest scoped key (a principal's scope, a 249-character name, a
// 64-character incarnation, a 128-character Idempotency-Key), each of an owner of
// store.MaxFenceOwner bytes with all store.MaxFenceAttempts attempts fenced. It must
// stay well below DynamoDB's 400 KB item limit, or a full topic could no longer commit.
func TestFencedTopicItemBound(t *testing.T) {
	it := item{}
	key := "@" + strings.Repeat("f", 16) + "#" + strings.Repeat("n", wire.MaxNameLength) + "#" + strings.Repeat("i", 64) + "#" + strings.Repeat("k", 128)
	for i := range store.MaxFences {
		f := store.RequestFence{Key: fmt.Sprintf("%s%03d", key[:len(key)-3], i), Owner: strings.Repeat("o", store.MaxFenceOwner),
			Attempt: store.MaxFenceAttempts, At: time.UnixMilli(1796092200123)}
		name := fenceName(f.Key)
		it[name] = avFence(f)
		for a := int32(1); a <= store.MaxFenceAttempts; a++ {
			it[fenceBatchName(name, a)] = avN(12_345_678_901)
		}
	}
	n := itemBytes(it)
	t.Logf("fences at every bound: %d bytes on the topic item (%d KB)", n, n/1024)
	if n > 300<<10 {
		t.Errorf("the fences at their bounds take %d bytes, want at most 300 KB (DynamoDB's item limit is 400 KB)", n)
	}
}
