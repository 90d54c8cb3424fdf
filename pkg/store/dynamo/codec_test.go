package dynamo

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/store"
)

// Topic retention is stored as (possibly fractional) milliseconds and must read back
// exactly, for every Duration.
func TestDurationMillisRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := time.Duration(rapid.OneOf(
			rapid.Int64(),
			rapid.Int64Range(-5_000_000, 5_000_000),
			rapid.SampledFrom([]int64{-1 << 63, 1<<63 - 1, 0, 1, -1, int64(time.Hour)}),
		).Draw(t, "d"))
		s := durationMillis(d)
		got, err := parseDurationMillis(s)
		if err != nil || got != d {
			t.Fatalf("durationMillis(%d) = %q parses to %d, %v", d, s, got, err)
		}
	})
	for _, bad := range []string{"", "-", "1.", "1.1234567", "x", "1.-5", "9223372036855", "--1"} {
		if d, err := parseDurationMillis(bad); err == nil {
			t.Errorf("parseDurationMillis(%q) = %d, want an error", bad, d)
		}
	}
}

// DynamoDB TTL (epoch seconds) must never delete a row before its millisecond expiry,
// and not keep it a whole second longer than needed.
func TestTTLSecondsNeverEarly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ms := rapid.Int64Range(0, 1<<45).Draw(t, "ms")
		s := ttlSeconds(time.UnixMilli(ms))
		if s*1000 < ms || s*1000 >= ms+1000 {
			t.Fatalf("ttlSeconds(%d ms) = %d s", ms, s)
		}
	})
}

// Composite keys must name one row each: idempotency keys are arbitrary strings and may
// hold '#' and digits, topics never hold '#' (API.md).
func TestCompositeKeysInjective(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Keys sharing a prefix and differing in separators and digits are the risky ones.
		base := rapid.StringOfN(rapid.SampledFrom([]rune{'a', '#', '1'}), 0, 3, -1).Draw(t, "base")
		tail := rapid.StringOfN(rapid.SampledFrom([]rune{'#', '1', '0'}), 0, 2, -1)
		k1, k2 := base+tail.Draw(t, "tail1"), base+tail.Draw(t, "tail2")
		part := rapid.SampledFrom([]int32{0, 1, 10, 11, 101})
		p1, p2 := part.Draw(t, "p1"), part.Draw(t, "p2")
		if (k1 != k2 || p1 != p2) && kpKey(k1, p1) == kpKey(k2, p2) {
			t.Fatalf("kpKey(%q, %d) == kpKey(%q, %d)", k1, p1, k2, p2)
		}
		name := rapid.StringMatching(`[A-Za-z0-9][A-Za-z0-9._-]{0,5}`)
		t1, t2 := name.Draw(t, "t1"), name.Draw(t, "t2")
		if (t1 != t2 || p1 != p2) && tpKey(t1, p1) == tpKey(t2, p2) {
			t.Fatalf("tpKey(%q, %d) == tpKey(%q, %d)", t1, p1, t2, p2)
		}
		g1, g2 := name.Draw(t, "g1"), name.Draw(t, "g2")
		if (g1 != g2 || t1 != t2) && gtKey(g1, t1) == gtKey(g2, t2) {
			t.Fatalf("gtKey(%q, %q) == gtKey(%q, %q)", g1, t1, g2, t2)
		}
	})
}

func TestMapError(t *testing.T) {
	old := item{"tp": avS("t#0")}
	reason := func(code string, it item) types.CancellationReason {
		return types.CancellationReason{Code: aws.String(code), Item: it}
	}
	wrapOp := func(err error) error {
		return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "Op", Err: err}
	}

	err := mapError("op", wrapOp(&types.ConditionalCheckFailedException{Item: old}))
	var cf *conditionFailed
	if !errors.As(err, &cf) || cf.item["tp"] == nil {
		t.Errorf("ConditionalCheckFailedException -> %v, want *conditionFailed holding the item", err)
	}

	err = mapError("op", wrapOp(&types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
		reason("None", nil), reason("ConditionalCheckFailed", old),
	}}))
	var tx *txConditionFailed
	if !errors.As(err, &tx) || tx.failedAt(0) || !tx.failedAt(1) || tx.failedAt(2) || tx.items[1]["tp"] == nil {
		t.Errorf("cancellation at item 1 -> %v, want *txConditionFailed failing at 1 with its item", err)
	}

	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"transaction conflict", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
			reason("None", nil), reason("TransactionConflict", nil)}}, store.ErrUnavailable},
		{"throttled transaction", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
			reason("ThrottlingError", nil)}}, store.ErrUnavailable},
		{"provisioned throughput", &types.ProvisionedThroughputExceededException{}, store.ErrUnavailable},
		{"request limit", &types.RequestLimitExceeded{}, store.ErrUnavailable},
		{"throttling", &smithy.GenericAPIError{Code: "ThrottlingException"}, store.ErrUnavailable},
		{"internal error", &types.InternalServerError{}, store.ErrUnavailable},
		{"missing table", &types.ResourceNotFoundException{}, nil},
		{"validation", &smithy.GenericAPIError{Code: "ValidationException"}, nil},
		{"validation in a transaction", &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
			reason("ValidationError", nil)}}, nil},
	} {
		native := wrapOp(tc.err)
		got := mapError("op", native)
		for _, sentinel := range []error{store.ErrUnavailable, store.ErrNotFound} {
			if errors.Is(got, sentinel) != (sentinel == tc.want) {
				t.Errorf("%s: mapError = %v; errors.Is(%v) = %v", tc.name, got, sentinel, !(sentinel == tc.want))
			}
		}
		if errors.As(got, &cf) || errors.As(got, &tx) {
			t.Errorf("%s: mapError = %v is a condition failure", tc.name, got)
		}
		if !errors.Is(got, native) {
			t.Errorf("%s: mapError dropped the native error: %v", tc.name, got)
		}
	}
}

// TestIndexEntryTTLAttribute: an index entry with an expiry carries it in the table's
// TTL attribute as epoch seconds, rounded up so DynamoDB never deletes it before
// ExpiresAt (the retention pass leaves expired entries to that TTL); one without an
// expiry has none, and the pass deletes it.
func TestIndexEntryTTLAttribute(t *testing.T) {
	var ttlAttr string
	for _, ts := range Tables() {
		if ts.Suffix == IndexTable {
			ttlAttr = ts.TTLAttribute
		}
	}
	if ttlAttr == "" {
		t.Fatal("the index table has no TTL attribute")
	}
	e := store.IndexEntry{Topic: "t", Count: 1, ObjectKey: "k", ByteLength: 1,
		AppendedAt: time.UnixMilli(1_780_000_000_000), ExpiresAt: time.UnixMilli(1_780_259_200_001)}
	n, ok := indexItem(e)[ttlAttr].(*types.AttributeValueMemberN)
	if !ok || n.Value != "1780259201" {
		t.Fatalf("TTL attribute %q = %v, want 1780259201 (ExpiresAt rounded up to the second)", ttlAttr, indexItem(e)[ttlAttr])
	}
	e.ExpiresAt = time.Time{}
	if v, ok := indexItem(e)[ttlAttr]; ok {
		t.Fatalf("an entry without an expiry has TTL attribute %v", v)
	}
}
