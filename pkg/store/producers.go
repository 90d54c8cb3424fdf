package store

import (
	"context"
	"errors"
	"time"
)

// ErrVersionMismatch: a versioned put found another version stored than the one it was
// made from (ProducerStore.PutProducerRow); nothing was changed.
var ErrVersionMismatch = errors.New("store: stored version differs")

// ProducerStore keeps the state of the Kafka front's idempotent producers: a counter
// that hands out producer ids, and small versioned rows (a producer's epoch, a
// producer's sequence state on one partition) that any number of gateways move by
// conditional writes. Backends implement it beside MetaStore.
type ProducerStore interface {
	// NextProducerID must return a number from 1 up that no earlier call on the same
	// tables returned, atomically across concurrent callers on any host.
	NextProducerID(ctx context.Context) (int64, error)
	// GetProducerRow must return the data and version of the row under key, strongly
	// consistently; ErrNotFound when there is none.
	GetProducerRow(ctx context.Context, key string) (data []byte, version int64, err error)
	// PutProducerRow must store data as the row under key at version prev+1 only if
	// the stored row is at version prev (0: no row), else return ErrVersionMismatch and
	// change nothing. A non-zero expires lets the backend remove the row after it (a
	// producer idle that long is forgotten, as Kafka forgets producer ids).
	PutProducerRow(ctx context.Context, key string, data []byte, prev int64, expires time.Time) error
}

// MaxProducerRowBytes bounds a producer row's data.
const MaxProducerRowBytes = 4 << 10
