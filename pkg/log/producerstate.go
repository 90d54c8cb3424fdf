package log

import (
	"fmt"

	"github.com/stratalog/strata/pkg/store"
)

// ProducerStore returns the metadata store's producer state (store.ProducerStore), which
// the Kafka front keeps its producer ids and per-partition sequences in, or
// ErrUnavailable when the store keeps none.
func (l *Log) ProducerStore() (store.ProducerStore, error) {
	ps, ok := l.meta.(store.ProducerStore)
	if !ok {
		return nil, fmt.Errorf("log: the metadata store keeps no producer state: %w", ErrUnavailable)
	}
	return ps, nil
}
