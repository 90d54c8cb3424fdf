package backendtest

import (
	"context"
	"sync/atomic"

	"github.com/stratalog/strata/pkg/store"
)

// CountingGets is an object store that counts its ranged reads: what a reader's GETs
// of segment objects cost.
type CountingGets struct {
	store.ObjectStore
	Gets atomic.Int64
}

// GetRange counts the read and passes it on.
func (c *CountingGets) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	c.Gets.Add(1)
	return c.ObjectStore.GetRange(ctx, key, offset, length)
}
