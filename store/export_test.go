package store

import (
	"sync"
	"time"
)

// NewCacheAt is NewCache with a clock.
func NewCacheAt(s *Store, ttl time.Duration, now func() time.Time) *Cache {
	return newCache(s, ttl, now)
}

// Clock is a clock tests move by hand.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a Clock showing now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
