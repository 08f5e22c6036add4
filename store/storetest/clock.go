package storetest

import (
	"sync"
	"time"
)

// Clock is a manually driven clock for expiry tests. Its Now method is what
// a Factory hands to the Store under test, so a test decides exactly when a
// row expires. A Clock is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock that reads start until moved.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t, which may be earlier than the current time:
// tests move it back to show that a row was physically deleted rather than
// merely hidden by read-resolved expiry.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
