package store

import (
	"context"
	"maps"
	"sync"
	"time"
)

// StatusCacheTTL is how long the API's StatusCache serves statuses before
// reading them again: the longest a status change made through another
// process takes to show.
const StatusCacheTTL = time.Second

// StatusCache is a read-through cache of ServiceStatuses and
// ProviderStatuses in front of a Store: they are read on every job, and
// change rarely. Changes made through the cache are visible to its next read
// at once; changes made by other processes show within the TTL.
type StatusCache struct {
	store *Store
	ttl   time.Duration

	mu        sync.Mutex
	gen       uint64 // bumped by every local write
	services  cachedValue[map[string]string]
	providers cachedValue[map[string]ProviderStatus]
}

type cachedValue[T any] struct {
	value   T
	loaded  time.Time
	present bool
}

// NewStatusCache caches s's statuses for ttl; a ttl of 0 disables caching.
func NewStatusCache(s *Store, ttl time.Duration) *StatusCache {
	return &StatusCache{store: s, ttl: ttl}
}

// ServiceStatuses is Store.ServiceStatuses, at most TTL old.
func (c *StatusCache) ServiceStatuses(ctx context.Context) (map[string]string, error) {
	m, err := readThrough(ctx, c, &c.services, c.store.ServiceStatuses)
	return maps.Clone(m), err
}

// ProviderStatuses is Store.ProviderStatuses, at most TTL old.
func (c *StatusCache) ProviderStatuses(ctx context.Context) (map[string]ProviderStatus, error) {
	m, err := readThrough(ctx, c, &c.providers, c.store.ProviderStatuses)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ProviderStatus, len(m))
	for id, ps := range m {
		out[id] = ProviderStatus{Status: ps.Status, Services: maps.Clone(ps.Services)}
	}
	return out, nil
}

// SetServiceStatus is Store.SetServiceStatus; the cache forgets what it
// holds.
func (c *StatusCache) SetServiceStatus(ctx context.Context, id, status string) error {
	defer c.invalidate()
	return c.store.SetServiceStatus(ctx, id, status)
}

// SetProviderStatus is Store.SetProviderStatus; the cache forgets what it
// holds.
func (c *StatusCache) SetProviderStatus(ctx context.Context, id string, status *string, services map[string]string) (ProviderStatus, error) {
	defer c.invalidate()
	return c.store.SetProviderStatus(ctx, id, status, services)
}

func (c *StatusCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.services = cachedValue[map[string]string]{}
	c.providers = cachedValue[map[string]ProviderStatus]{}
}

// readThrough serves slot while it is younger than the TTL and loads it
// otherwise. A load that overlapped a local write is returned but not
// kept, so the cache never holds a value older than its last write.
func readThrough[T any](ctx context.Context, c *StatusCache, slot *cachedValue[T], load func(context.Context) (T, error)) (T, error) {
	c.mu.Lock()
	if slot.present && time.Since(slot.loaded) < c.ttl {
		v := slot.value
		c.mu.Unlock()
		return v, nil
	}
	gen := c.gen
	c.mu.Unlock()

	started := time.Now()
	v, err := load(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	c.mu.Lock()
	if c.gen == gen {
		*slot = cachedValue[T]{value: v, loaded: started, present: true}
	}
	c.mu.Unlock()
	return v, nil
}
