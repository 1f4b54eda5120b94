// Package ttlcache is a small read-through cache of values loaded from a
// database or another slow source, each kept for a while.
package ttlcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Cache is a small read-through cache, safe for concurrent use, of
// values loaded from the database. An entry is served until it is ttl old
// (a negative ttl: until evicted; 0: nothing is kept), and at most max
// entries are kept: a new one first drops the expired ones, else a tenth
// of the entries, arbitrary ones. Local writes call Forget or Clear; a
// load that overlapped one is returned but not kept, so the cache never
// holds a value older than the last write through it.
type Cache[K comparable, V any] struct {
	ttl time.Duration
	max int
	now func() time.Time

	loads singleflight.Group // concurrent misses of a key share one load

	mu      sync.Mutex
	gen     uint64 // bumped by forget and clear
	entries map[K]entry[V]
}

type entry[V any] struct {
	value  V
	loaded time.Time
}

func New[K comparable, V any](ttl time.Duration, max int, now func() time.Time) *Cache[K, V] {
	return &Cache[K, V]{ttl: ttl, max: max, now: now, entries: map[K]entry[V]{}}
}

// Get returns key's value, calling load when it is missing or expired.
// Concurrent misses of one key share one load, so an expiry under load is
// one query, not a stampede on the database. The load runs in the
// goroutine and under the context (deadline included) of the caller that
// began it, and the others wait for it; one whose load ended with that
// caller's context, while its own goes on, loads again. A load that
// panics panics in every caller. Errors are not kept.
func (c *Cache[K, V]) Get(ctx context.Context, key K, load func(context.Context) (V, error)) (V, error) {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok && c.fresh(e) {
		c.mu.Unlock()
		return e.value, nil
	}
	gen := c.gen
	c.mu.Unlock()
	if c.ttl == 0 {
		return load(ctx) // nothing kept, nothing shared
	}
	// A load begun before a write (another generation) is not shared with
	// callers after it: they see the write.
	flight := fmt.Sprintf("%d/%#v", gen, key)
	for {
		v, err, shared := c.loads.Do(flight, func() (any, error) {
			return c.loadAndKeep(ctx, key, gen, load)
		})
		if err != nil && shared && ctx.Err() == nil &&
			(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			continue // another caller's load, ended by its context
		}
		value, _ := v.(V)
		return value, err
	}
}

// loadAndKeep loads key's value and keeps it unless a write came meanwhile.
func (c *Cache[K, V]) loadAndKeep(ctx context.Context, key K, gen uint64, load func(context.Context) (V, error)) (V, error) {
	started := c.now()
	v, err := load(ctx)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen {
		if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
			c.evict()
		}
		c.entries[key] = entry[V]{value: v, loaded: started}
	}
	return v, nil
}

func (c *Cache[K, V]) fresh(e entry[V]) bool { return c.freshAt(e, c.now()) }

func (c *Cache[K, V]) freshAt(e entry[V], now time.Time) bool {
	return c.ttl < 0 || now.Sub(e.loaded) < c.ttl
}

// evict makes room for one entry; c.mu is held. It drops the expired
// entries and, if that made no room, a tenth of the entries (at least
// one), so that a cache full of fresh entries is not scanned again for
// every new one.
func (c *Cache[K, V]) evict() {
	now := c.now()
	for k, e := range c.entries {
		if !c.freshAt(e, now) {
			delete(c.entries, k)
		}
	}
	if len(c.entries) < c.max {
		return
	}
	keep := c.max - max(1, c.max/10)
	for k := range c.entries {
		if len(c.entries) <= keep {
			return
		}
		delete(c.entries, k)
	}
}

// Forget drops key's entry.
func (c *Cache[K, V]) Forget(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.entries, key)
}

// Clear drops every entry.
func (c *Cache[K, V]) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
}
