package local

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// rowCodec is one stored-row type: decode as getRec does, then re-encode as the store
// writes that row.
type rowCodec struct {
	bucket string
	decode func(v []byte) (any, error)
	encode func(row any) ([]byte, error)
}

func codecOf[R any, S any](bucket string, toStore func(R) S, toRec func(S) R) rowCodec {
	return rowCodec{
		bucket: bucket,
		decode: func(v []byte) (any, error) {
			var r R
			if err := decodeRec(bucket, []byte("k"), v, &r); err != nil {
				return nil, err
			}
			return toStore(r), nil
		},
		encode: func(row any) ([]byte, error) { return json.Marshal(toRec(row.(S))) },
	}
}

// rowCodecs lists every stored row. The encoders are the ones meta.go writes with:
// the *ToRec functions, or the literal it builds (times in UTC).
var rowCodecs = []rowCodec{
	codecOf(bucketTopics, topicRec.toStore, topicToRec),
	codecOf(bucketIndex, indexRec.toStore, indexToRec),
	codecOf(bucketIdempotency, idempotencyRec.toStore, idempotencyToRec),
	codecOf(bucketCommits, commitRec.toStore, commitToRec),
	codecOf(bucketGroups, groupRec.toStore, groupToRec),
	codecOf(bucketAssignments, assignmentRec.toStore, func(a store.Assignment) assignmentRec {
		return assignmentRec{Group: a.Group, Topic: a.Topic, Partition: a.Partition, Owner: a.Owner,
			Generation: a.Generation, ExpiresAt: a.ExpiresAt.UTC()}
	}),
	codecOf(bucketMembers, memberRec.toStore, func(m store.Member) memberRec {
		return memberRec{Group: m.Group, ID: m.ID, ExpiresAt: m.ExpiresAt.UTC()}
	}),
	codecOf(bucketPartitions, func(r partitionRec) partitionRec { return r }, func(r partitionRec) partitionRec { return r }),
}

// FuzzDecodeRows feeds arbitrary bytes to every stored-row decoder: each either fails
// with an error or yields a row that, written back the way the store writes it,
// decodes to the same row.
func FuzzDecodeRows(f *testing.F) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6789, time.UTC)
	for _, rec := range []any{
		topicToRec(store.Topic{Name: "orders", Partitions: 8, Retention: 36 * time.Hour, CreatedAt: at}),
		indexToRec(store.IndexEntry{Topic: "t", Partition: 3, BaseOffset: 41, Count: 2, ObjectKey: "t/3/x.seg",
			ByteOffset: 10, ByteLength: 99, MaxTimestamp: at, AppendedAt: at, ExpiresAt: at.Add(time.Hour)}),
		idempotencyToRec(store.IdempotencyRecord{Key: "k#1", Partition: 1, BodyHash: "abc", BaseOffset: 7, Count: 3, ExpiresAt: at}),
		commitToRec(store.CommitRow{Group: "g", Topic: "t", Partition: 0, NextOffset: 5, Generation: 2, CommittedAt: at, Metadata: "m",
			Completed: []store.OffsetRange{{From: 7, To: 9}, {From: 12, To: 13}}}),
		groupToRec(store.GroupConfig{Name: "g", ResetPolicy: "earliest", MaxAttempts: 3, DeadLetterTopic: "dlq", CreatedAt: at}),
		assignmentRec{Group: "g", Topic: "t", Partition: 1, Owner: "m-1", Generation: 4, ExpiresAt: at},
		memberRec{Group: "g", ID: "m-1", ExpiresAt: at},
		partitionRec{LogStartOffset: 12},
		topicRec{},
	} {
		b, err := json.Marshal(rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"name": "t", "partitions": 2147483648}`,
		`{"retention_ns": 1e3}`,
		`{"created_at": "2026-01-02T03:04:05+01:00"}`,
		`{"created_at": "0000-01-01T00:00:00+00:01"}`,
		`{"created_at": "9999-12-31T23:59:59-00:01"}`,
		`{"expires_at": "2026-13-01T00:00:00Z"}`,
		`{"expires_at": "2026-01-01T00:00:00.1234567891Z"}`,
		`{"max_attempts": -9223372036854775808, "name": "\ud800"}`,
		`{"base_offset": 9223372036854775808}`,
		`{"owner": "\xff"}`,
		`{"group": "g"} {}`,
		`{"topic": null, "count": null}`,
		`null`,
		`[]`,
		`"x"`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		for _, c := range rowCodecs {
			row, err := c.decode(v)
			if err != nil {
				continue
			}
			enc, err := c.encode(row)
			if err != nil {
				// A time outside years 0–9999 in UTC has no JSON form, so the store cannot
				// write it back; that must be an error, and only for such a time.
				if !outOfRangeTime(row) {
					t.Fatalf("%s row %+v decoded from %q does not re-encode: %v", c.bucket, row, v, err)
				}
				continue
			}
			again, err := c.decode(enc)
			if err != nil {
				t.Fatalf("%s row re-encoded as %s does not decode: %v", c.bucket, enc, err)
			}
			if !sameRow(row, again) {
				t.Fatalf("%s row %+v re-encoded as %s decodes to %+v", c.bucket, row, enc, again)
			}
		}
	})
}

// sameRow compares two rows of one type field by field, times by instant.
func sameRow(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Type() != vb.Type() {
		return false
	}
	for i := range va.NumField() {
		fa, fb := va.Field(i).Interface(), vb.Field(i).Interface()
		if ta, ok := fa.(time.Time); ok {
			if !ta.Equal(fb.(time.Time)) {
				return false
			}
			continue
		}
		if !reflect.DeepEqual(fa, fb) {
			return false
		}
	}
	return true
}

// outOfRangeTime reports whether a time field of row falls outside years 0–9999 in UTC.
func outOfRangeTime(row any) bool {
	v := reflect.ValueOf(row)
	for i := range v.NumField() {
		if tm, ok := v.Field(i).Interface().(time.Time); ok {
			if y := tm.UTC().Year(); y < 0 || y > 9999 {
				return true
			}
		}
	}
	return false
}
