package dynamo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

// item is a DynamoDB item or key.
type item = map[string]types.AttributeValue

func avS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func avN(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// Composite key values (docs/DESIGN.md §3). Topic names cannot contain '#' (API.md:
// [A-Za-z0-9._-]{1,249}), a group id may hold any character but NUL, so gtKey escapes
// it (escapeGroup) and its first '#' ends the group; in "key#partition" the partition
// is the decimal number after the last '#'. Every composite value names one row.
func tpKey(topic string, partition int32) string { return topic + "#" + strconv.Itoa(int(partition)) }
func gtKey(group, topic string) string           { return escapeGroup(group) + "#" + topic }
func kpKey(key string, partition int32) string   { return key + "#" + strconv.Itoa(int(partition)) }

// groupEscaper percent-encodes the two characters a group id's part of a composite key
// must not hold raw: '#', the separator, and '%', the escape itself.
var groupEscaper = strings.NewReplacer("%", "%25", "#", "%23")

// escapeGroup is the group's part of a composite key: the id itself unless it holds '#'
// or '%' (so every group of the earlier name rule, which had neither, keeps its rows),
// else those two percent-encoded. It is injective and never holds '#'; its longest
// value (MaxGroupLength four-byte characters, 996 bytes; an id of '#' escapes to 747)
// keeps "group#topic#incarnation" under DynamoDB's 2048-byte partition key.
func escapeGroup(group string) string {
	if !strings.ContainsAny(group, "#%") {
		return group
	}
	return groupEscaper.Replace(group)
}

// setTime stores t as epoch milliseconds under name; the zero time is stored as absence.
func setTime(it item, name string, t time.Time) {
	if !t.IsZero() {
		it[name] = avN(t.UnixMilli())
	}
}

// setExpiry stores a row's expiry as epoch milliseconds and, for DynamoDB TTL, as epoch
// seconds rounded up, so TTL never deletes a row before it expires.
func setExpiry(it item, name string, t time.Time) {
	if !t.IsZero() {
		it[name] = avN(t.UnixMilli())
		it[attrTTL] = avN(ttlSeconds(t))
	}
}

func ttlSeconds(t time.Time) int64 {
	ms := t.UnixMilli()
	s := ms / 1000
	if ms%1000 > 0 {
		s++
	}
	return s
}

// durationMillis formats d as a number of milliseconds, with a decimal fraction when d
// is not a whole number of them, so a Duration round-trips exactly.
func durationMillis(d time.Duration) string {
	ms, ns := int64(d/time.Millisecond), int64(d%time.Millisecond)
	sign := ""
	if d < 0 {
		// Negate the parts, not d: -math.MinInt64 overflows, its parts do not.
		sign, ms, ns = "-", -ms, -ns
	}
	if ns == 0 {
		return fmt.Sprintf("%s%d", sign, ms)
	}
	return strings.TrimRight(fmt.Sprintf("%s%d.%06d", sign, ms, ns), "0")
}

// parseDurationMillis is the inverse of durationMillis.
func parseDurationMillis(s string) (time.Duration, error) {
	digits, neg := strings.CutPrefix(s, "-")
	whole, frac, hasFrac := strings.Cut(digits, ".")
	if hasFrac && (frac == "" || len(frac) > 6 || strings.Trim(frac, "0123456789") != "") {
		return 0, fmt.Errorf("bad millisecond fraction in %q", s)
	}
	ms, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) || neg && strings.IndexAny(whole, "+-") == 0 {
		return 0, fmt.Errorf("bad milliseconds %q", s)
	}
	var ns int64
	if hasFrac {
		if ns, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64); err != nil || ns < 0 {
			return 0, fmt.Errorf("bad millisecond fraction in %q", s)
		}
	}
	msPart := time.Duration(ms) * time.Millisecond
	if neg {
		// Subtract the parts one by one: their sum can exceed math.MaxInt64 (for math.MinInt64).
		if -int64(msPart) < math.MinInt64+ns {
			return 0, fmt.Errorf("milliseconds %q overflow a duration", s)
		}
		return -msPart - time.Duration(ns), nil
	}
	if ns > math.MaxInt64-int64(msPart) {
		return 0, fmt.Errorf("milliseconds %q overflow a duration", s)
	}
	return msPart + time.Duration(ns), nil
}

// decoder reads attributes of one item; the first missing or malformed one is kept in
// err and later reads return zero values, so a codec checks err once at the end.
type decoder struct {
	it  item
	err error
}

func (d *decoder) fail(name, format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("dynamo: attribute %q: %s", name, fmt.Sprintf(format, args...))
	}
}

// str returns the string attribute name; required makes its absence an error.
func (d *decoder) str(name string, required bool) string {
	switch v := d.it[name].(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case nil:
		if required {
			d.fail(name, "missing")
		}
	default:
		d.fail(name, "not a string (%T)", v)
	}
	return ""
}

// num returns the number attribute name; required makes its absence an error.
func (d *decoder) num(name string, required bool) int64 {
	switch v := d.it[name].(type) {
	case *types.AttributeValueMemberN:
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			d.fail(name, "%v", err)
		}
		return n
	case nil:
		if required {
			d.fail(name, "missing")
		}
	default:
		d.fail(name, "not a number (%T)", v)
	}
	return 0
}

func (d *decoder) int32(name string, required bool) int32 {
	n := d.num(name, required)
	if int64(int32(n)) != n {
		d.fail(name, "%d overflows int32", n)
	}
	return int32(n)
}

// time returns the epoch-milliseconds attribute name as a UTC time, zero when absent.
func (d *decoder) time(name string) time.Time {
	if _, ok := d.it[name]; !ok {
		return time.Time{}
	}
	return time.UnixMilli(d.num(name, true)).UTC()
}

func (d *decoder) duration(name string) time.Duration {
	switch v := d.it[name].(type) {
	case *types.AttributeValueMemberN:
		dur, err := parseDurationMillis(v.Value)
		if err != nil {
			d.fail(name, "%v", err)
		}
		return dur
	case nil:
		d.fail(name, "missing")
	default:
		d.fail(name, "not a number (%T)", v)
	}
	return 0
}

// avRanges encodes offset ranges as a list of numbers, from and to of each in turn.
func avRanges(rs []store.OffsetRange) types.AttributeValue {
	l := make([]types.AttributeValue, 0, 2*len(rs))
	for _, r := range rs {
		l = append(l, avN(r.From), avN(r.To))
	}
	return &types.AttributeValueMemberL{Value: l}
}

// ranges returns the offset ranges attribute name (avRanges), nil when absent.
func (d *decoder) ranges(name string) []store.OffsetRange {
	switch v := d.it[name].(type) {
	case *types.AttributeValueMemberL:
		if len(v.Value)%2 != 0 {
			d.fail(name, "odd number of range bounds (%d)", len(v.Value))
			return nil
		}
		var out []store.OffsetRange
		for i := 0; i < len(v.Value); i += 2 {
			sub := decoder{it: item{"from": v.Value[i], "to": v.Value[i+1]}}
			r := store.OffsetRange{From: sub.num("from", true), To: sub.num("to", true)}
			if sub.err != nil {
				d.fail(name, "range %d: %v", i/2, sub.err)
				return nil
			}
			out = append(out, r)
		}
		return out
	case nil:
	default:
		d.fail(name, "not a list (%T)", v)
	}
	return nil
}

// boolean returns the boolean attribute name, false when absent.
func (d *decoder) boolean(name string) bool {
	switch v := d.it[name].(type) {
	case *types.AttributeValueMemberBOOL:
		return v.Value
	case nil:
	default:
		d.fail(name, "not a boolean (%T)", v)
	}
	return false
}

// bin returns the binary attribute name, empty (not nil) when absent.
func (d *decoder) bin(name string) []byte {
	switch v := d.it[name].(type) {
	case *types.AttributeValueMemberB:
		return v.Value
	case nil:
	default:
		d.fail(name, "not binary (%T)", v)
	}
	return []byte{}
}
