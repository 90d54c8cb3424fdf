// Package soak drives a Strata node under load and injected faults and audits what
// came out: the soak test (soak_test.go, 60 s in CI, longer with SOAK_DURATION through
// scripts/soak.sh) and the audit it ends with (docs/RELIABILITY.md).
package soak

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Ack is a record the server acknowledged: where it landed and what it holds.
type Ack struct {
	ID         string
	Partition  int32
	Offset     int64
	Key, Value []byte
	// Idempotent: appended with an Idempotency-Key.
	Idempotent bool
}

// Stored is a record read back from the log.
type Stored struct {
	Partition  int32
	Offset     int64
	Key, Value []byte
}

// Grant is a lease generation a member was granted (the acquire returned).
type Grant struct {
	Group      string
	Partition  int32
	Generation int64
	At         time.Time
}

// CommitCall is one commit call of a consumer and its outcome.
type CommitCall struct {
	Group      string
	Partition  int32
	Member     string
	Generation int64
	Next       int64
	Start      time.Time
	Accepted   bool
}

// Delivery is one record handed to a group member's handler.
type Delivery struct {
	Group     string
	Partition int32
	Offset    int64
	ID        string
}

// Input is everything the audit looks at.
type Input struct {
	Acks []Ack
	// Failed counts, per record ID, the append attempts carrying it that were not
	// acknowledged (an error, a lost answer): the only allowed source of a duplicate.
	Failed map[string]int
	// IdempotentIDs are the IDs of records sent with an Idempotency-Key.
	IdempotentIDs map[string]bool
	Log           []Stored
	Grants        []Grant
	Commits       []CommitCall
	Deliveries    []Delivery
	// Groups are the consumer groups whose deliveries must cover the log.
	Groups []string
	// Committed is each group's final committed offset per partition; HighWatermarks
	// each partition's high watermark at the end.
	Committed      map[string]map[int32]int64
	HighWatermarks map[int32]int64
}

// Report is the audit's figures and the violations it found (none is a pass).
type Report struct {
	AckedRecords      int // distinct records acknowledged
	LostAcked         int // acknowledged records not readable at their offset, byte-identical
	ReusedOffsets     int // two acknowledgements or two stored records at one offset
	StoredRecords     int
	Duplicates        int // stored copies of a record beyond its first
	UnexplainedDups   int // duplicates of a record with no failed attempt to explain them
	IdempotentDups    int // duplicates of a record sent with an Idempotency-Key
	CommitsAccepted   int
	CommitsRefused    int
	ObsoleteAccepted  int // commits accepted at a generation older than one already granted
	Grants            int
	Deliveries        int
	Redeliveries      int // deliveries of an offset a group had already delivered
	Undelivered       int // stored records some group never delivered
	PhantomDeliveries int // deliveries of offsets that are not in the log as read
	Violations        []string
}

// RecordID is the ID a soak record carries at the start of its value, up to '|'.
func RecordID(value []byte) string {
	id, _, _ := bytes.Cut(value, []byte("|"))
	return string(id)
}

// Audit checks the run: 0 acknowledged records lost, 0 offsets reused, duplicates only
// of records with a failed attempt and never of idempotent ones, 0 commits accepted
// from an obsolete generation, every stored record delivered to every group, and every
// group committed up to the high watermark.
func Audit(in Input) Report {
	var r Report
	violate := func(format string, args ...any) {
		if len(r.Violations) < 50 {
			r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
		}
	}
	type pos struct {
		p   int32
		off int64
	}
	stored := map[pos]Stored{}
	copies := map[string]int{}
	for _, s := range in.Log {
		k := pos{s.Partition, s.Offset}
		if _, dup := stored[k]; dup {
			r.ReusedOffsets++
			violate("offset %d@%d read twice", s.Partition, s.Offset)
		}
		stored[k] = s
		copies[RecordID(s.Value)]++
	}
	r.StoredRecords = len(stored)

	acked := map[pos]Ack{}
	ackedIDs := map[string]bool{}
	ackedAt := map[string]pos{}
	for _, a := range in.Acks {
		k := pos{a.Partition, a.Offset}
		if prev, dup := acked[k]; dup && prev.ID != a.ID {
			r.ReusedOffsets++
			violate("offset %d@%d acknowledged for %s and for %s", a.Partition, a.Offset, prev.ID, a.ID)
		}
		acked[k] = a
		if first, ok := ackedAt[a.ID]; ok {
			switch {
			case !a.Idempotent:
				violate("record %s acknowledged twice", a.ID)
			case first != k:
				r.ReusedOffsets++
				violate("idempotent retry of %s acknowledged %d@%d, the first attempt %d@%d", a.ID, a.Partition, a.Offset, first.p, first.off)
			}
		} else {
			ackedAt[a.ID] = k
		}
		ackedIDs[a.ID] = true
		s, ok := stored[k]
		switch {
		case !ok:
			r.LostAcked++
			violate("acknowledged record %s at %d@%d is not in the log", a.ID, a.Partition, a.Offset)
		case !bytes.Equal(s.Key, a.Key) || !bytes.Equal(s.Value, a.Value):
			r.LostAcked++
			violate("record at %d@%d differs from acknowledged %s (holds %s)", a.Partition, a.Offset, a.ID, RecordID(s.Value))
		}
	}
	r.AckedRecords = len(ackedAt)
	for id, n := range copies {
		if n <= 1 {
			continue
		}
		r.Duplicates += n - 1
		allowed := in.Failed[id]
		if !ackedIDs[id] {
			allowed-- // one copy may be the never-acknowledged record itself
		}
		if n-1 > allowed {
			r.UnexplainedDups += n - 1 - max(allowed, 0)
			violate("record %s stored %d times, with %d failed attempts (acknowledged %v)", id, n, in.Failed[id], ackedIDs[id])
		}
		if in.IdempotentIDs[id] {
			r.IdempotentDups += n - 1
			violate("record %s sent with an Idempotency-Key is stored %d times", id, n)
		}
	}

	// A commit accepted at generation g is obsolete when a grant of a later generation
	// of that group and partition had returned before the commit was sent.
	type gp struct {
		g string
		p int32
	}
	grants := map[gp][]Grant{}
	for _, g := range in.Grants {
		grants[gp{g.Group, g.Partition}] = append(grants[gp{g.Group, g.Partition}], g)
	}
	r.Grants = len(in.Grants)
	for _, c := range in.Commits {
		if !c.Accepted {
			r.CommitsRefused++
			continue
		}
		r.CommitsAccepted++
		for _, g := range grants[gp{c.Group, c.Partition}] {
			if g.Generation > c.Generation && g.At.Before(c.Start) {
				r.ObsoleteAccepted++
				violate("commit of %s/%d by %s at generation %d (next %d) accepted although generation %d was granted %s earlier",
					c.Group, c.Partition, c.Member, c.Generation, c.Next, g.Generation, c.Start.Sub(g.At).Round(time.Millisecond))
				break
			}
		}
	}

	delivered := map[string]map[pos]int{}
	for _, g := range in.Groups {
		delivered[g] = map[pos]int{}
	}
	for _, d := range in.Deliveries {
		r.Deliveries++
		m := delivered[d.Group]
		if m == nil {
			m = map[pos]int{}
			delivered[d.Group] = m
		}
		k := pos{d.Partition, d.Offset}
		m[k]++
		if m[k] > 1 {
			r.Redeliveries++
		}
		s, ok := stored[k]
		if !ok || RecordID(s.Value) != d.ID {
			r.PhantomDeliveries++
			violate("group %s was handed %s at %d@%d, which the log does not hold there", d.Group, d.ID, d.Partition, d.Offset)
		}
	}
	for _, g := range in.Groups {
		for k := range stored {
			if delivered[g][k] == 0 {
				r.Undelivered++
				violate("group %s never handled %d@%d", g, k.p, k.off)
			}
		}
		for p, hw := range in.HighWatermarks {
			if c := in.Committed[g][p]; c != hw {
				violate("group %s committed %d on partition %d, high watermark %d", g, c, p, hw)
			}
		}
	}
	return r
}

// String prints the figures, one per line.
func (r Report) String() string {
	var b strings.Builder
	rows := [][2]any{
		{"acknowledged records", r.AckedRecords}, {"records in the log", r.StoredRecords},
		{"acknowledged records lost", r.LostAcked}, {"offsets reused", r.ReusedOffsets},
		{"duplicates in the log", r.Duplicates}, {"  of them unexplained by a failed attempt", r.UnexplainedDups},
		{"  of them of idempotent appends", r.IdempotentDups},
		{"lease grants (rebalances included)", r.Grants}, {"commits accepted", r.CommitsAccepted},
		{"commits refused", r.CommitsRefused}, {"commits accepted from an obsolete generation", r.ObsoleteAccepted},
		{"deliveries", r.Deliveries}, {"redeliveries (at-least-once after a rebalance)", r.Redeliveries},
		{"stored records a group never handled", r.Undelivered}, {"deliveries of records not in the log", r.PhantomDeliveries},
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "%-48s %v\n", row[0], row[1])
	}
	return b.String()
}

// SortedCounts formats a count map as "k=v" pairs in key order.
func SortedCounts(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}
