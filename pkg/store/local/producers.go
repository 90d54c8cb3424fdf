package local

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

// bucketProducers holds the Kafka front's producer id counter (under producerCounterKey)
// and its producer rows ("r" + key → producerRec).
const bucketProducers = "kafka_producers"

// producerCounterKey is the counter's key: every row's key starts with 'r'.
const producerCounterKey = "c"

func producerRowKey(key string) []byte { return []byte("r" + key) }

var _ store.ProducerStore = (*MetaStore)(nil)

// producerRec is a stored producer row. Rows are not swept here: each is a few hundred
// bytes per producer and partition, and Expires is kept for a later sweep.
type producerRec struct {
	Data    []byte    `json:"d"`
	Version int64     `json:"v"`
	Expires time.Time `json:"e,omitzero"`
}

// NextProducerID raises the counter by one in one transaction.
func (m *MetaStore) NextProducerID(ctx context.Context) (int64, error) {
	var id int64
	err := m.update(ctx, func(tx *bolt.Tx) error {
		n, _, err := getRec[int64](tx, bucketProducers, []byte(producerCounterKey))
		if err != nil {
			return err
		}
		id = n + 1
		return putRec(tx, bucketProducers, []byte(producerCounterKey), id)
	})
	return id, err
}

// GetProducerRow reads the row under key.
func (m *MetaStore) GetProducerRow(ctx context.Context, key string) ([]byte, int64, error) {
	var rec producerRec
	var ok bool
	err := m.view(ctx, func(tx *bolt.Tx) error {
		var err error
		rec, ok, err = getRec[producerRec](tx, bucketProducers, producerRowKey(key))
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, fmt.Errorf("local: producer row %q: %w", key, store.ErrNotFound)
	}
	return rec.Data, rec.Version, nil
}

// PutProducerRow writes the row at prev+1 when it is stored at prev, in one transaction.
func (m *MetaStore) PutProducerRow(ctx context.Context, key string, data []byte, prev int64, expires time.Time) error {
	if len(data) > store.MaxProducerRowBytes {
		return fmt.Errorf("local: producer row %q: %d bytes, at most %d", key, len(data), store.MaxProducerRowBytes)
	}
	return m.update(ctx, func(tx *bolt.Tx) error {
		old, ok, err := getRec[producerRec](tx, bucketProducers, producerRowKey(key))
		if err != nil {
			return err
		}
		if !ok {
			old.Version = 0
		}
		if old.Version != prev {
			return fmt.Errorf("local: producer row %q is at version %d, not %d: %w", key, old.Version, prev, store.ErrVersionMismatch)
		}
		return putRec(tx, bucketProducers, producerRowKey(key), producerRec{Data: data, Version: prev + 1, Expires: expires.UTC()})
	})
}
