package dynamo

import (
	"math/big"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

// fuzzAttrs is every attribute name an item decoder reads.
var fuzzAttrs = []string{
	attrTopic, "partitions", "retention_ms", "created_at", attrTP, attrBaseOffset, attrPartition,
	"count", "object_key", "byte_offset", "byte_length", "max_timestamp", "appended_at", "expires_at",
	attrKP, "key", "body_hash", attrTTL, attrGT, attrGroup, attrOwner, attrGeneration, attrLeaseExp,
	attrNextOffset, "committed_at", "metadata", "reset_policy", "max_attempts", "dead_letter_topic",
	attrMember, "log_start_offset",
	attrNextSeq, attrLogStart, attrCCount, attrCObject, attrCByteOff, attrCByteLen, attrCMaxTs, attrCAt,
	attrCExpires, attrCIdem, attrCHash, attrCompleted, attrLagVersion, attrLagHistory, attrRetentionPin,
	attrMembersOff, attrMembersLen, attrOverwrites, attrRemoved, attrRequestedAt,
}

// fuzzItem builds an item from fuzz bytes: kinds[i] picks the type of attribute i (absent
// past the end of kinds), and values, split at NUL, gives the contents in turn.
func fuzzItem(kinds []byte, values string) item {
	vals := strings.Split(values, "\x00")
	it := item{}
	for i, name := range fuzzAttrs {
		if i >= len(kinds) {
			break
		}
		v := vals[i%len(vals)]
		var av types.AttributeValue
		switch kinds[i] % 13 {
		case 0:
			continue
		case 1:
			av = &types.AttributeValueMemberS{Value: v}
		case 2:
			av = &types.AttributeValueMemberN{Value: v}
		case 3:
			// A number made of the value's sign, digits and point, so most parse.
			av = &types.AttributeValueMemberN{Value: strings.Map(func(r rune) rune {
				if r == '-' || r == '.' || r >= '0' && r <= '9' {
					return r
				}
				return -1
			}, v)}
		case 4:
			av = &types.AttributeValueMemberBOOL{Value: len(v)%2 == 0}
		case 5:
			av = &types.AttributeValueMemberNULL{Value: true}
		case 6:
			av = &types.AttributeValueMemberB{Value: []byte(v)}
		case 7:
			av = &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: v}}}
		case 8:
			av = &types.AttributeValueMemberM{Value: item{"x": &types.AttributeValueMemberN{Value: v}}}
		case 9:
			av = &types.AttributeValueMemberSS{Value: []string{v}}
		case 10:
			av = &types.AttributeValueMemberNS{Value: []string{v}}
		case 11:
			av = nil // present but empty
		case 12:
			// A list of numbers, the value split at commas (offset ranges).
			l := &types.AttributeValueMemberL{}
			for _, n := range strings.Split(v, ",") {
				l.Value = append(l.Value, &types.AttributeValueMemberN{Value: n})
			}
			av = l
		}
		it[name] = av
	}
	return it
}

func FuzzDecodeItem(f *testing.F) {
	at := time.UnixMilli(1767322245123).UTC()
	e := store.IndexEntry{Topic: "t", Partition: 3, BaseOffset: 41, Count: 2, ObjectKey: "t/3/x.seg",
		ByteOffset: 10, ByteLength: 99, MaxTimestamp: at, AppendedAt: at, ExpiresAt: at.Add(time.Hour)}
	r := store.IdempotencyRecord{Key: "k#1", Partition: 1, BodyHash: "abc", BaseOffset: 7, Count: 3, ExpiresAt: at}
	members := e
	members.MembersOffset, members.MembersLength = 1<<33, 77
	for _, it := range []item{
		indexItem(e),
		indexItem(members),
		idemItem(r),
		{attrTopic: avS("orders"), "partitions": avN(8), "retention_ms": &types.AttributeValueMemberN{Value: "86400000.5"}, "created_at": avN(at.UnixMilli())},
		{attrTopic: avS("orders"), "partitions": avN(8), "retention_ms": avN(3600000), attrRetentionPin: avN(21600000), "created_at": avN(at.UnixMilli())},
		{attrGT: avS("g#t"), attrGroup: avS("g"), attrTopic: avS("t"), attrPartition: avN(1), attrOwner: avS("m"), attrGeneration: avN(4), attrLeaseExp: avN(at.UnixMilli())},
		{attrGT: avS("g#t"), attrGroup: avS("g"), attrTopic: avS("t"), attrPartition: avN(1), attrNextOffset: avN(5), attrGeneration: avN(4), "committed_at": avN(at.UnixMilli()), "metadata": avS("m")},
		{attrGT: avS("g#t"), attrGroup: avS("g"), attrTopic: avS("t"), attrPartition: avN(1), attrNextOffset: avN(5), attrGeneration: avN(4),
			attrCompleted: avRanges([]store.OffsetRange{{From: 7, To: 9}, {From: 12, To: 13}})},
		{attrGroup: avS("g"), "reset_policy": avS("earliest"), "max_attempts": avN(3), "dead_letter_topic": avS("dlq"), "created_at": avN(at.UnixMilli())},
		{attrGroup: avS("g"), attrMember: avS("m-1"), "expires_at": avN(at.UnixMilli())},
		{attrTP: avS("t#3"), attrTopic: avS("t"), attrPartition: avN(3), attrNextOffset: avN(43), attrNextSeq: avN(9),
			attrLogStart: avN(2), attrCCount: avN(2), attrCObject: avS("v1/t/x"), attrCByteOff: avN(10), attrCByteLen: avN(99),
			attrCMaxTs: avN(at.UnixMilli()), attrCAt: avN(at.UnixMilli()), attrCExpires: avN(at.UnixMilli()), attrCIdem: avS("t#k"), attrCHash: avS("h")},
	} {
		kinds, values := encodeFuzzItem(it)
		f.Add(kinds, values)
	}
	for _, s := range []string{
		"-9223372036854.775808", "9223372036854.775807", "-9223372036854775808", "9223372036854775807",
		"-9223372036854.775809", "-9223372036854.999999", "9223372036854.775808", "-+1", "1.+5", "1.-0",
		"2147483648", "-2147483649", "1.", "1.1234567", ".5", "-", "--1", "+1", "1e3", "0x10", " 1", "",
	} {
		kinds := make([]byte, len(fuzzAttrs))
		for i := range kinds {
			kinds[i] = 2
		}
		f.Add(kinds, s)
		f.Add(kinds[:5], s+"\x00"+s)
	}
	f.Add([]byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, "s")
	f.Add([]byte{4, 5, 6, 7, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10}, "1")
	f.Add([]byte{}, "")

	f.Fuzz(func(t *testing.T, kinds []byte, values string) {
		it := fuzzItem(kinds, values)
		for _, v := range strings.Split(values, "\x00") {
			checkDurationMillis(t, v)
		}

		if tp, err := decodeTopic(it); err == nil {
			again := item{attrTopic: avS(tp.Name), "partitions": avN(int64(tp.Partitions)),
				"retention_ms": &types.AttributeValueMemberN{Value: durationMillis(tp.Retention)}}
			if tp.RetentionPin != 0 {
				again[attrRetentionPin] = &types.AttributeValueMemberN{Value: durationMillis(tp.RetentionPin)}
			}
			setTime(again, "created_at", tp.CreatedAt)
			roundTrip(t, "topic", tp, again, decodeTopic)
		} else {
			checkDecodeError(t, err)
		}
		if e, err := decodeIndex(it); err == nil {
			roundTrip(t, "index entry", e, indexItem(e), decodeIndex)
		} else {
			checkDecodeError(t, err)
		}
		if r, err := decodeIdem(it); err == nil {
			roundTrip(t, "idempotency record", r, idemItem(r), decodeIdem)
		} else {
			checkDecodeError(t, err)
		}
		if a, err := decodeAssignment(it); err == nil {
			again := gtpKey(a.Group, a.Topic, a.Partition)
			again[attrGroup], again[attrTopic], again[attrGeneration] = avS(a.Group), avS(a.Topic), avN(a.Generation)
			if a.Owner != "" {
				again[attrOwner] = avS(a.Owner)
			}
			setTime(again, attrLeaseExp, a.ExpiresAt)
			roundTrip(t, "assignment", a, again, decodeAssignment)
		} else {
			checkDecodeError(t, err)
		}
		if c, err := decodeCommit(it); err == nil {
			again := gtpKey(c.Group, c.Topic, c.Partition)
			again[attrGroup], again[attrTopic], again[attrNextOffset] = avS(c.Group), avS(c.Topic), avN(c.NextOffset)
			again[attrGeneration], again["metadata"] = avN(c.Generation), avS(c.Metadata)
			if c.Completed != nil {
				again[attrCompleted] = avRanges(c.Completed)
			}
			setTime(again, "committed_at", c.CommittedAt)
			roundTrip(t, "commit", c, again, decodeCommit)
		} else {
			checkDecodeError(t, err)
		}
		if g, err := decodeGroup(it); err == nil {
			if int64(g.MaxAttempts) != decodedNum(it, "max_attempts") {
				t.Fatalf("max_attempts %v decoded as %d", it["max_attempts"], g.MaxAttempts)
			}
		} else {
			checkDecodeError(t, err)
		}
		if st, err := DecodeSequencerImage(it); err == nil {
			if st.LogStart < 0 || st.LogStart > st.NextOffset || (st.Last != nil && (st.Last.Entry.BaseOffset < 0 || st.Last.Entry.End() != st.NextOffset)) {
				t.Fatalf("sequencer image decoded out of bounds: %+v", st)
			}
		} else {
			checkDecodeError(t, err)
		}
		if c, err := decodeDirty(it); err == nil {
			again := item{attrOverwrites: avN(c.Overwrites), attrRemoved: avN(c.Removed)}
			setTime(again, attrRequestedAt, c.RequestedAt)
			roundTrip(t, "dirty counter", c, again, decodeDirty)
		} else {
			checkDecodeError(t, err)
		}
		if h, _, err := decodeLagItem(it); err == nil {
			if again, err := store.DecodeLagHistory(store.EncodeLagHistory(h)); err != nil || !reflect.DeepEqual(again, h) {
				t.Fatalf("lag history %+v re-decoded as %+v, %v", h, again, err)
			}
		} else {
			checkDecodeError(t, err)
		}
		// The inline decoders of ListTopics, LogStart and LiveMembers.
		d := decoder{it: it}
		_ = d.str(attrTopic, true)
		_ = d.num("log_start_offset", false)
		_, _, exp := d.str(attrGroup, true), d.str(attrMember, true), d.time("expires_at")
		if d.err != nil {
			checkDecodeError(t, d.err)
		} else if exp.Location() != time.UTC {
			t.Fatalf("expires_at decoded in %v", exp.Location())
		}
	})
}

// encodeFuzzItem is the inverse of fuzzItem for items of S and N attributes and lists of N.
func encodeFuzzItem(it item) ([]byte, string) {
	kinds := make([]byte, len(fuzzAttrs))
	vals := make([]string, len(fuzzAttrs))
	for i, name := range fuzzAttrs {
		switch v := it[name].(type) {
		case *types.AttributeValueMemberS:
			kinds[i], vals[i] = 1, v.Value
		case *types.AttributeValueMemberN:
			kinds[i], vals[i] = 2, v.Value
		case *types.AttributeValueMemberL:
			ns := make([]string, len(v.Value))
			for j, e := range v.Value {
				ns[j] = e.(*types.AttributeValueMemberN).Value
			}
			kinds[i], vals[i] = 12, strings.Join(ns, ",")
		}
	}
	return kinds, strings.Join(vals, "\x00")
}

// roundTrip checks that v, encoded as the store writes it, decodes to itself.
func roundTrip[T any](t *testing.T, what string, v T, it item, decode func(item) (T, error)) {
	t.Helper()
	again, err := decode(it)
	if err != nil {
		t.Fatalf("%s %+v re-encoded does not decode: %v", what, v, err)
	}
	if !reflect.DeepEqual(v, again) {
		t.Fatalf("%s %+v re-encoded decodes to %+v", what, v, again)
	}
}

func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	if !strings.HasPrefix(err.Error(), "dynamo: attribute ") {
		t.Fatalf("decode error does not name the attribute: %v", err)
	}
}

func decodedNum(it item, name string) int64 {
	if n, ok := it[name].(*types.AttributeValueMemberN); ok {
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return v
	}
	return 0
}

// millisRE is a decimal number of milliseconds as durationMillis writes it (or with a
// '+', which DynamoDB numbers and strconv.ParseInt allow): a sign, digits, and up to six
// fraction digits.
var millisRE = regexp.MustCompile(`^[-+]?[0-9]+(\.[0-9]{1,6})?$`)

// checkDurationMillis checks parseDurationMillis against exact arithmetic: it accepts s
// iff s is a decimal number of milliseconds whose nanoseconds fit a Duration, and then
// returns exactly that many nanoseconds.
func checkDurationMillis(t *testing.T, s string) {
	t.Helper()
	d, err := parseDurationMillis(s)
	var want *big.Int
	if millisRE.MatchString(s) {
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("big.Rat refuses %q", s)
		}
		r.Mul(r, big.NewRat(int64(time.Millisecond), 1))
		if r.IsInt() && r.Num().IsInt64() {
			want = r.Num()
		}
	}
	switch {
	case want == nil && err == nil:
		t.Fatalf("parseDurationMillis(%q) = %d, want an error", s, d)
	case want != nil && err != nil:
		t.Fatalf("parseDurationMillis(%q): %v, want %s ns", s, err, want)
	case want != nil && int64(d) != want.Int64():
		t.Fatalf("parseDurationMillis(%q) = %d, want %s", s, d, want)
	}
}
