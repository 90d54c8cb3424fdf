package local

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketExpiry orders the rows that expire (index entries, idempotency records and
// effect markers) by
// expiry time: its keys are expiry (UnixNano, order-preserving), one byte naming the
// row's bucket, then the row's key; values are empty. The TTL sweep reads only the keys
// already expired instead of decoding every row, so its cost grows with what expires,
// not with what is retained.
const bucketExpiry = "expiry"

// Row kinds in an expiry key.
const (
	expiryIndex        byte = 'i'
	expiryIdempotency  byte = 'd'
	expiryEffectMarker byte = 'e'
)

// defaultSweepChunk bounds the rows one sweep transaction deletes, so the sweep holds
// bbolt's single writer (and so every append's commit) for a few milliseconds at a time.
const defaultSweepChunk = 1000

func expiryBucketOf(kind byte) (string, bool) {
	switch kind {
	case expiryIndex:
		return bucketIndex, true
	case expiryIdempotency:
		return bucketIdempotency, true
	case expiryEffectMarker:
		return bucketEffectMarkers, true
	}
	return "", false
}

func expiryKey(exp time.Time, kind byte, row []byte) []byte {
	k := appendInt64(make([]byte, 0, 9+len(row)), exp.UnixNano())
	k = append(k, kind)
	return append(k, row...)
}

// parseExpiryKey splits an expiry key; ok is false for bytes that are not one.
func parseExpiryKey(k []byte) (expNano int64, kind byte, row []byte, ok bool) {
	if len(k) < 9 {
		return 0, 0, nil, false
	}
	expNano = int64(binary.BigEndian.Uint64(k[:8]) ^ (1 << 63))
	return expNano, k[8], k[9:], true
}

// putExpiring writes rec at key of the index or idempotency bucket and, when exp is set,
// its expiry key.
func putExpiring(tx *bolt.Tx, kind byte, key []byte, rec any, exp time.Time) error {
	bucket, _ := expiryBucketOf(kind)
	if err := putRec(tx, bucket, key, rec); err != nil {
		return err
	}
	return addExpiry(tx, kind, key, exp)
}

func addExpiry(tx *bolt.Tx, kind byte, key []byte, exp time.Time) error {
	if exp.IsZero() {
		return nil
	}
	if err := tx.Bucket([]byte(bucketExpiry)).Put(expiryKey(exp, kind, key), nil); err != nil {
		return fmt.Errorf("local: write expiry key: %w", err)
	}
	return nil
}

// buildExpiry fills a new expiry bucket from the rows already stored: the one full scan
// a data directory written before the bucket existed needs, done once, when it is opened
// and nothing waits on it.
func buildExpiry(tx *bolt.Tx) error {
	build := func(kind byte, bucket string, expiry func([]byte, []byte) (time.Time, error)) error {
		return tx.Bucket([]byte(bucket)).ForEach(func(k, v []byte) error {
			exp, err := expiry(k, v)
			if err != nil {
				return fmt.Errorf("local: build expiry keys: %w", err)
			}
			return addExpiry(tx, kind, k, exp)
		})
	}
	err := build(expiryIndex, bucketIndex, func(k, v []byte) (time.Time, error) {
		var r indexRec
		err := decodeRec(bucketIndex, k, v, &r)
		return r.ExpiresAt, err
	})
	if err != nil {
		return err
	}
	return build(expiryIdempotency, bucketIdempotency, func(k, v []byte) (time.Time, error) {
		var r idempotencyRec
		err := decodeRec(bucketIdempotency, k, v, &r)
		return r.ExpiresAt, err
	})
}

// rowExpiry decodes the expiry of a stored index, idempotency or effect marker row.
func rowExpiry(bucket string, k, v []byte) (time.Time, error) {
	switch bucket {
	case bucketEffectMarkers:
		if len(v) != 8 {
			return time.Time{}, nil // a marker written before markers expired: kept
		}
		return time.Unix(0, int64(binary.BigEndian.Uint64(v)^(1<<63))), nil
	case bucketIndex:
		var r indexRec
		err := decodeRec(bucket, k, v, &r)
		return r.ExpiresAt, err
	}
	var r idempotencyRec
	err := decodeRec(bucket, k, v, &r)
	return r.ExpiresAt, err
}

// DeleteExpired deletes the index entries, idempotency records and effect markers whose
// expiry is set and before now, standing in for DynamoDB's TTL deletion; it returns how many it
// deleted. It reads only the expiry keys before now, and deletes them in transactions
// of at most defaultSweepChunk rows, so appends interleave with a long sweep. Callers keep
// the newest entry of a partition alive by extending its expiry, exactly as they must
// on DynamoDB.
func (m *MetaStore) DeleteExpired(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n, seen int
		err := m.db.Update(func(tx *bolt.Tx) error {
			var err error
			n, seen, err = sweepOnce(tx, now.UnixNano(), m.sweepChunk)
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
		if seen < m.sweepChunk {
			return total, nil
		}
	}
}

// sweepOnce deletes the rows of at most limit expiry keys before nowNano, and those
// keys. A key whose row is gone (deleted by retention) or carries another expiry (the
// row was rewritten and has its own key) is dropped without touching the row. It
// returns the rows deleted and the keys consumed.
func sweepOnce(tx *bolt.Tx, nowNano int64, limit int) (deleted, seen int, err error) {
	eb := tx.Bucket([]byte(bucketExpiry))
	end := appendInt64(nil, nowNano) // keys below this expired strictly before now
	var doomed [][]byte
	c := eb.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k, end) < 0 && len(doomed) < limit; k, _ = c.Next() {
		doomed = append(doomed, append([]byte(nil), k...))
	}
	for _, k := range doomed {
		expNano, kind, row, ok := parseExpiryKey(k)
		if bucket, known := expiryBucketOf(kind); ok && known {
			// The markers' bucket is made at the first effect (b nil before: no key).
			if b := tx.Bucket([]byte(bucket)); b != nil {
				if v := b.Get(row); v != nil {
					exp, err := rowExpiry(bucket, row, v)
					if err != nil {
						return 0, 0, err
					}
					if !exp.IsZero() && exp.UnixNano() == expNano {
						if err := b.Delete(row); err != nil {
							return 0, 0, fmt.Errorf("local: delete expired %s row: %w", bucket, err)
						}
						deleted++
					}
				}
			}
		}
		if err := eb.Delete(k); err != nil {
			return 0, 0, fmt.Errorf("local: delete expiry key: %w", err)
		}
	}
	return deleted, len(doomed), nil
}
