package local

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/store"
)

// TestSweepReadsOnlyExpiredRows (issue 18 item 15): the TTL sweep must not decode the
// rows it keeps. Retained rows hold bytes that do not decode, so a sweep scanning them
// (as the full-bucket sweep did, inside one write transaction that every append waited
// on) fails; one reading only the expired keys deletes the expired rows.
func TestSweepReadsOnlyExpiredRows(t *testing.T) {
	ctx := context.Background()
	m, _ := openMeta(t)
	for base := int64(0); base < 6; base++ {
		e := entry("t", 0, base, 1)
		e.ExpiresAt = t0.Add(time.Duration(base) * time.Hour) // 0 and 1 expire by t0+90m
		rec := store.IdempotencyRecord{Key: fmt.Sprint(base), BaseOffset: base, Count: 1, ExpiresAt: e.ExpiresAt}
		if err := m.PutIndexEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
		if err := m.ClaimIdempotency(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	err := m.db.Update(func(tx *bolt.Tx) error {
		for base := int64(2); base < 6; base++ {
			if err := tx.Bucket([]byte(bucketIndex)).Put(indexKey("t", 0, base), []byte("{")); err != nil {
				return err
			}
			if err := tx.Bucket([]byte(bucketIdempotency)).Put(idempotencyKey(fmt.Sprint(base), 0), []byte("{")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := m.DeleteExpired(ctx, t0.Add(90*time.Minute))
	if err != nil || n != 4 {
		t.Fatalf("DeleteExpired = %d, %v; want the 4 expired rows deleted and the retained ones unread", n, err)
	}
}

// TestSweepInChunks: a sweep larger than one chunk deletes every expired row over
// several transactions, and nothing retained.
func TestSweepInChunks(t *testing.T) {
	ctx := context.Background()
	m, _ := openMeta(t)
	m.sweepChunk = 3
	for base := int64(0); base < 12; base++ {
		e := entry("t", 0, base, 1)
		e.ExpiresAt = t0.Add(time.Duration(base) * time.Second) // 0..9 expire by t0+10s
		if err := m.PutIndexEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	n, err := m.DeleteExpired(ctx, t0.Add(10*time.Second))
	if err != nil || n != 10 {
		t.Fatalf("DeleteExpired = %d, %v; want 10", n, err)
	}
	got, err := m.IndexEntries(ctx, "t", 0, 0, 100)
	if err != nil || !slices.Equal(bases(got), []int64{10, 11}) {
		t.Fatalf("entries left = %v, %v; want [10 11]", bases(got), err)
	}
	if k := expiryKeys(t, m); k != 2 {
		t.Fatalf("%d expiry keys left, want 2", k)
	}
}

// TestSweepKeepsRewrittenRow: an entry deleted and written again at the same base with a
// later expiry leaves its old expiry key behind; the sweep drops that key and keeps the
// row.
func TestSweepKeepsRewrittenRow(t *testing.T) {
	ctx := context.Background()
	m, _ := openMeta(t)
	e := entry("t", 0, 0, 1)
	e.ExpiresAt = t0.Add(time.Second)
	if err := m.PutIndexEntry(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteIndexEntry(ctx, "t", 0, 0); err != nil {
		t.Fatal(err)
	}
	e.ExpiresAt = t0.Add(time.Hour)
	if err := m.PutIndexEntry(ctx, e); err != nil {
		t.Fatal(err)
	}
	if n, err := m.DeleteExpired(ctx, t0.Add(time.Minute)); err != nil || n != 0 {
		t.Fatalf("DeleteExpired = %d, %v; want 0", n, err)
	}
	if got, err := m.IndexEntries(ctx, "t", 0, 0, 10); err != nil || len(got) != 1 {
		t.Fatalf("entries = %v, %v; want the rewritten one", bases(got), err)
	}
	if k := expiryKeys(t, m); k != 1 {
		t.Fatalf("%d expiry keys left, want 1", k)
	}
}

// TestSweepSparesClearedEntry: an entry whose expiry ClearIndexExpiry removed (a topic
// altered to compact) has no expiry key left, so the sweep never deletes it, while an
// entry beside it that kept its expiry goes.
func TestSweepSparesClearedEntry(t *testing.T) {
	ctx := context.Background()
	m, _ := openMeta(t)
	kept, other := entry("t", 0, 0, 1), entry("t", 0, 1, 1)
	kept.ExpiresAt, other.ExpiresAt = t0.Add(time.Second), t0.Add(time.Second)
	for _, e := range []store.IndexEntry{kept, other} {
		if err := m.PutIndexEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.ClearIndexExpiry(ctx, kept); err != nil {
		t.Fatal(err)
	}
	if k := expiryKeys(t, m); k != 1 {
		t.Fatalf("%d expiry keys after the clear, want 1", k)
	}
	if n, err := m.DeleteExpired(ctx, t0.Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("DeleteExpired = %d, %v; want 1", n, err)
	}
	got, err := m.IndexEntries(ctx, "t", 0, 0, 10)
	if err != nil || len(got) != 1 || got[0].BaseOffset != 0 || !got[0].ExpiresAt.IsZero() {
		t.Fatalf("entries = %+v, %v; want the cleared one alone, without an expiry", got, err)
	}
}

// TestOpenBuildsExpiryKeys: a data directory written before the expiry bucket existed
// gets it on open, so the sweep still finds its expired rows.
func TestOpenBuildsExpiryKeys(t *testing.T) {
	ctx := context.Background()
	m, path := openMeta(t)
	for base := int64(0); base < 3; base++ {
		e := entry("t", 0, base, 1)
		e.ExpiresAt = t0.Add(time.Duration(base) * time.Hour)
		rec := store.IdempotencyRecord{Key: fmt.Sprint(base), BaseOffset: base, Count: 1, ExpiresAt: e.ExpiresAt}
		if err := m.PutIndexEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
		if err := m.ClaimIdempotency(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte(bucketExpiry)) }); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := OpenMetaStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if n, err := m.DeleteExpired(ctx, t0.Add(90*time.Minute)); err != nil || n != 4 {
		t.Fatalf("DeleteExpired after the upgrade = %d, %v; want 4", n, err)
	}
}

// TestDeleteIndexRangeDropsExpiryKeys: a range delete removes its entries' expiry keys
// too, so the sweep does not revisit them.
func TestDeleteIndexRangeDropsExpiryKeys(t *testing.T) {
	ctx := context.Background()
	m, _ := openMeta(t)
	for base := int64(0); base < 5; base++ {
		e := entry("t", 0, base, 1)
		e.ExpiresAt = t0.Add(time.Hour)
		if err := m.PutIndexEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := m.DeleteIndexRange(ctx, "t", 0, 3); err != nil || n != 3 {
		t.Fatalf("DeleteIndexRange = %d, %v; want 3", n, err)
	}
	if k := expiryKeys(t, m); k != 2 {
		t.Fatalf("%d expiry keys left, want 2", k)
	}
}

func expiryKeys(t *testing.T, m *MetaStore) int {
	t.Helper()
	n := 0
	if err := m.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket([]byte(bucketExpiry)).Stats().KeyN
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSweepMatchesModel: over random writes, deletes, rewrites and range deletes, a
// sweep at any time and chunk size leaves exactly the rows a full scan would: those
// without an expiry or not expired before now.
func TestSweepMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		m, _ := openMeta(t)
		defer m.Close()
		m.sweepChunk = rapid.IntRange(1, 5).Draw(rt, "chunk")
		model := map[int64]time.Time{} // index base -> expiry (zero: none)
		idem := map[string]time.Time{}
		for i, n := 0, rapid.IntRange(0, 30).Draw(rt, "ops"); i < n; i++ {
			base := rapid.Int64Range(0, 15).Draw(rt, "base")
			var exp time.Time
			if s := rapid.IntRange(-1, 20).Draw(rt, "exp"); s >= 0 {
				exp = t0.Add(time.Duration(s) * time.Second)
			}
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0:
				e := entry("t", 0, base, 1)
				e.ExpiresAt = exp
				if err := m.PutIndexEntry(ctx, e); err == nil {
					model[base] = exp
				}
			case 1:
				if err := m.DeleteIndexEntry(ctx, "t", 0, base); err != nil {
					rt.Fatal(err)
				}
				delete(model, base)
			case 2:
				if _, err := m.DeleteIndexRange(ctx, "t", 0, base); err != nil {
					rt.Fatal(err)
				}
				for b := range model {
					if b+1 <= base {
						delete(model, b)
					}
				}
			case 3:
				k := fmt.Sprint(base)
				if err := m.ClaimIdempotency(ctx, store.IdempotencyRecord{Key: k, Count: 1, ExpiresAt: exp}); err == nil {
					idem[k] = exp
				}
			}
		}
		now := t0.Add(time.Duration(rapid.IntRange(0, 21).Draw(rt, "now")) * time.Second)
		want := 0
		for b, exp := range model {
			if !exp.IsZero() && exp.Before(now) {
				delete(model, b)
				want++
			}
		}
		for k, exp := range idem {
			if !exp.IsZero() && exp.Before(now) {
				delete(idem, k)
				want++
			}
		}
		n, err := m.DeleteExpired(ctx, now)
		if err != nil || n != want {
			rt.Fatalf("DeleteExpired = %d, %v; want %d", n, err, want)
		}
		got, err := m.IndexEntries(ctx, "t", 0, 0, 100)
		if err != nil {
			rt.Fatal(err)
		}
		var wantBases []int64
		for b := range model {
			wantBases = append(wantBases, b)
		}
		slices.Sort(wantBases)
		if !slices.Equal(bases(got), wantBases) {
			rt.Fatalf("entries left = %v, want %v", bases(got), wantBases)
		}
		for k := range idem {
			if _, err := m.GetIdempotency(ctx, k, 0); err != nil {
				rt.Fatalf("idempotency record %s: %v", k, err)
			}
		}
	})
}
