package dynamo_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/dynamo"
)

// TestClearIndexExpiryRemovesTTL: the cleared entry's item keeps no TTL attribute, so
// DynamoDB's TTL never deletes it; the entry beside it keeps its own.
func TestClearIndexExpiryRemovesTTL(t *testing.T) {
	ctx := t.Context()
	m, client, cfg := newStore(t, dynamo.Config{})
	exp := time.UnixMilli(4_102_444_800_000) // 2100-01-01
	cleared := store.IndexEntry{Topic: "t", Partition: 0, BaseOffset: 0, Count: 1, ObjectKey: "o", ByteLength: 3, AppendedAt: time.UnixMilli(1), ExpiresAt: exp}
	other := cleared
	other.BaseOffset = 1
	for _, e := range []store.IndexEntry{cleared, other} {
		if err := m.PutIndexEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.ClearIndexExpiry(ctx, cleared); err != nil {
		t.Fatal(err)
	}
	out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(cfg.TablePrefix + dynamo.IndexTable)})
	if err != nil {
		t.Fatal(err)
	}
	ttls := 0
	for _, it := range out.Items {
		_, hasTTL := it["ttl"]
		_, hasExp := it["expires_at"]
		if hasTTL != hasExp {
			t.Errorf("item %v: ttl %v but expires_at %v", it, hasTTL, hasExp)
		}
		if hasTTL {
			ttls++
		}
	}
	if len(out.Items) != 2 || ttls != 1 {
		t.Fatalf("%d items, %d with a TTL; want 2 and 1", len(out.Items), ttls)
	}
}
