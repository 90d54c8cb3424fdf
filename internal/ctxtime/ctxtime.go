// Package ctxtime holds time helpers that honour a context.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits for d or until ctx ends, returning ctx's error in that case.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
