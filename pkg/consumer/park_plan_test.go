package consumer

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/wire"
)

func TestPlanRecord(t *testing.T) {
	cases := []struct {
		name            string
		parking, parked bool
		want            recordAction
	}{
		{"not parking", false, false, actHandle},
		{"not parking, a stale parked key", false, true, actHandle},
		{"parking, key not parked", true, false, actHandle},
		{"parking, key parked", true, true, actForward},
	}
	for _, c := range cases {
		if got := planRecord(c.parking, c.parked); got != c.want {
			t.Errorf("%s: planRecord = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPlanFailure(t *testing.T) {
	long := []byte(strings.Repeat("k", 1025))
	cases := []struct {
		name      string
		onFailure string
		key       []byte
		dlq       string
		want      failureAction
	}{
		{"dead letter with a topic", group.OnFailureDeadLetter, []byte("k"), "dlq", failDeadLetter},
		{"dead letter without a topic drops", group.OnFailureDeadLetter, []byte("k"), "", failDrop},
		{"park a key", group.OnFailurePark, []byte("k"), "", failPark},
		{"park an empty key", group.OnFailurePark, []byte{}, "", failPark},
		{"park without a key dead-letters", group.OnFailurePark, nil, "dlq", failDeadLetter},
		{"park without a key or topic drops", group.OnFailurePark, nil, "", failDrop},
		{"park a key too long dead-letters", group.OnFailurePark, long, "dlq", failDeadLetter},
	}
	for _, c := range cases {
		if got := planFailure(c.onFailure, c.key, c.dlq); got != c.want {
			t.Errorf("%s: planFailure = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPlanForward(t *testing.T) {
	first := group.Parked{Key: []byte("k"), FirstOffset: 10, LastOffset: 10, Records: 1, ParkOffset: -1}
	placed := first
	placed.ParkPartition, placed.ParkOffset = 2, 7
	cases := []struct {
		name        string
		row         group.Parked
		offset      int64
		part        int32
		at          int64
		want        group.Parked
		wantChanged bool
	}{
		{"the first record places the key", first, 10, 2, 7,
			group.Parked{Key: []byte("k"), FirstOffset: 10, LastOffset: 10, Records: 1, ParkPartition: 2, ParkOffset: 7}, true},
		{"a later record counts once", placed, 12, 2, 9,
			group.Parked{Key: []byte("k"), FirstOffset: 10, LastOffset: 12, Records: 2, ParkPartition: 2, ParkOffset: 7}, true},
		{"a redelivered record changes nothing", placed, 10, 2, 7, placed, false},
		{"a redelivered earlier record changes nothing", group.Parked{Key: []byte("k"), FirstOffset: 10, LastOffset: 12, Records: 2, ParkPartition: 2, ParkOffset: 7}, 11, 2, 8,
			group.Parked{Key: []byte("k"), FirstOffset: 10, LastOffset: 12, Records: 2, ParkPartition: 2, ParkOffset: 7}, false},
	}
	for _, c := range cases {
		got, changed := planForward(c.row, c.offset, c.part, c.at)
		if changed != c.wantChanged || !bytes.Equal(got.Key, c.want.Key) || got.LastOffset != c.want.LastOffset || got.Records != c.want.Records ||
			got.ParkPartition != c.want.ParkPartition || got.ParkOffset != c.want.ParkOffset || got.FirstOffset != c.want.FirstOffset {
			t.Errorf("%s: planForward = %+v %v, want %+v %v", c.name, got, changed, c.want, c.wantChanged)
		}
	}
}

func TestPlanReleases(t *testing.T) {
	t1, t2 := time.UnixMilli(1000), time.UnixMilli(2000)
	rows := []group.Parked{{Key: []byte("a")}, {Key: []byte("b"), ReleaseRequested: t1}, {Key: []byte("c"), ReleaseRequested: t2}}
	cases := []struct {
		name  string
		tried map[string]time.Time
		want  []string
	}{
		{"none tried", map[string]time.Time{}, []string{"b", "c"}},
		{"a request tried is not tried again", map[string]time.Time{"b": t1}, []string{"c"}},
		{"a newer request is tried", map[string]time.Time{"b": t1, "c": t1}, []string{"c"}},
	}
	for _, c := range cases {
		var got []string
		for _, k := range planReleases(rows, c.tried) {
			got = append(got, string(k))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: planReleases = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestParkedErrorCut: the handler's error a parked row keeps is at most
// wire.MaxParkedError bytes (the HTTP route refuses longer), cut at a character
// boundary, and whole when it fits.
func TestParkedErrorCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  string
		want int // length of the kept text
	}{
		{"short", "card expired", 12},
		{"exactly the bound", strings.Repeat("e", wire.MaxParkedError), wire.MaxParkedError},
		{"one over", strings.Repeat("e", wire.MaxParkedError+1), wire.MaxParkedError},
		{"a rune across the bound", strings.Repeat("e", wire.MaxParkedError-1) + "é", wire.MaxParkedError - 1},
		{"long", strings.Repeat("ü", 10000), wire.MaxParkedError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parkedError(errors.New(tc.msg))
			if len(got) != tc.want || !utf8.ValidString(got) || !strings.HasPrefix(tc.msg, got) {
				t.Fatalf("kept %d bytes (valid UTF-8 %v, a prefix %v), want %d", len(got), utf8.ValidString(got), strings.HasPrefix(tc.msg, got), tc.want)
			}
		})
	}
}
