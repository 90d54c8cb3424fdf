// Package clocktest is a manually advanced clock for tests of protocol logic that takes
// time as an input (leases, balancing), so scenarios run without sleeping.
package clocktest

import (
	"sync"
	"time"
)

// Clock is safe for concurrent use; pass its Now method where a clock is expected.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock reading start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
