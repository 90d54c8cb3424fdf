package local

import (
	"context"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// seedIndex writes entries [from, from+n) of t/0 expiring at exp in one transaction.
func seedIndex(b *testing.B, m *MetaStore, from, n int64, exp time.Time) {
	b.Helper()
	err := m.db.Update(func(tx *bolt.Tx) error {
		for base := from; base < from+n; base++ {
			e := entry("t", 0, base, 1)
			e.ExpiresAt = exp
			if err := putIndexIfAbsent(tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDeleteExpired sweeps 1,000 expired index entries beside a growing number of
// retained ones: the sweep's cost follows what expires. FullScan is the former sweep
// (decode every row in one write transaction) on the same data, for comparison.
func BenchmarkDeleteExpired(b *testing.B) {
	const expired = 1000
	for _, retained := range []int64{10_000, 100_000} {
		for _, sweep := range []string{"ExpiryKeys", "FullScan"} {
			b.Run(fmt.Sprintf("%s/retained=%d", sweep, retained), func(b *testing.B) {
				ctx := context.Background()
				m, _ := openMeta(b)
				seedIndex(b, m, expired, retained, t0.Add(time.Hour))
				next := int64(0)
				for b.Loop() {
					b.StopTimer()
					// Fresh expired rows below the retained ones each round.
					seedIndex(b, m, -next-expired, expired, t0)
					next += expired
					b.StartTimer()
					var n int
					var err error
					if sweep == "FullScan" {
						n, err = fullScanSweep(m, t0.Add(time.Minute))
					} else {
						n, err = m.DeleteExpired(ctx, t0.Add(time.Minute))
					}
					if err != nil || n != expired {
						b.Fatalf("sweep = %d, %v; want %d", n, err, expired)
					}
				}
			})
		}
	}
}

// BenchmarkDeleteIndexRange deletes 1,000 expired entries below the cut of a partition
// that retains a growing number after it.
func BenchmarkDeleteIndexRange(b *testing.B) {
	const expired = 1000
	for _, retained := range []int64{10_000, 100_000} {
		b.Run(fmt.Sprintf("retained=%d", retained), func(b *testing.B) {
			ctx := context.Background()
			m, _ := openMeta(b)
			seedIndex(b, m, 0, retained, t0.Add(time.Hour))
			next := int64(0)
			for b.Loop() {
				b.StopTimer()
				next -= expired
				seedIndex(b, m, next, expired, t0)
				b.StartTimer()
				n, err := m.DeleteIndexRange(ctx, "t", 0, next+expired)
				if err != nil || n != expired {
					b.Fatalf("DeleteIndexRange = %d, %v; want %d", n, err, expired)
				}
			}
		})
	}
}

// fullScanSweep is the sweep this package had before the expiry bucket: every index row
// decoded inside one write transaction.
func fullScanSweep(m *MetaStore, now time.Time) (int, error) {
	deleted := 0
	err := m.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucketIndex))
		var doomed [][]byte
		err := b.ForEach(func(k, v []byte) error {
			exp, err := rowExpiry(bucketIndex, k, v)
			if err != nil {
				return err
			}
			if !exp.IsZero() && exp.Before(now) {
				doomed = append(doomed, append([]byte(nil), k...))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		deleted = len(doomed)
		return nil
	})
	return deleted, err
}
