package store

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/ttlcache"
	"github.com/ai-job-gateway/gateway/policy"
)

// CacheTTL is how long a Cache serves what it read, and keeps latency
// samples before writing them: the longest a change made through another
// process takes to show.
const CacheTTL = time.Second

// cacheEntries bounds each of a Cache's caches.
const cacheEntries = 10_000

// Cache is the Store with what every job reads kept in memory: statuses,
// tenants, routing policies, policy versions and latencies for the TTL
// (policy versions, which never change, until evicted), and what every job
// writes reduced: rate windows seen full and latency samples (see
// ReserveRate and RecordLatency). A process makes one Cache and gives it to
// its API and its worker. Writes through the Cache are visible to its next
// read at once; changes made by other processes show within the TTL.
//
// Values returned share memory with the cache where copying them would
// cost (the lists of a policy.Policy): callers must not modify them.
type Cache struct {
	// Store is the store the Cache reads through, with its other domains.
	Store *Store
	// RoutingStore's methods are the Cache's, cached where the Cache
	// defines them.
	*RoutingStore
	ttl time.Duration
	now func() time.Time

	services  *ttlcache.Cache[struct{}, map[string]string]
	providers *ttlcache.Cache[struct{}, map[string]ProviderStatus]
	tenants   *ttlcache.Cache[string, *Tenant]                 // nil: no record
	policies  *ttlcache.Cache[string, []policy.Policy]         // tenantPolicies by tenant
	current   *ttlcache.Cache[string, *policy.Policy]          // GetPolicy by id; nil: none
	versions  *ttlcache.Cache[policyVersionKey, policy.Policy] // GetPolicyVersion
	latencies *ttlcache.Cache[string, map[string]float64]      // Latencies by service
	breakers  *ttlcache.Cache[struct{}, map[BreakerKey]breaker.Breaker]

	full    fullWindows
	samples latencySamples
}

type policyVersionKey struct {
	id      string
	version int
}

// NewCache caches s's reads for ttl (CacheTTL in production); a ttl of 0
// disables caching and batching.
func NewCache(s *Store, ttl time.Duration) *Cache { return newCache(s, ttl, time.Now) }

func newCache(s *Store, ttl time.Duration, now func() time.Time) *Cache {
	immutable := time.Duration(-1)
	if ttl == 0 {
		immutable = 0
	}
	return &Cache{
		Store:        s,
		RoutingStore: s.Routing,
		ttl:          ttl,
		now:          now,
		services:     ttlcache.New[struct{}, map[string]string](ttl, 1, now),
		providers:    ttlcache.New[struct{}, map[string]ProviderStatus](ttl, 1, now),
		tenants:      ttlcache.New[string, *Tenant](ttl, cacheEntries, now),
		policies:     ttlcache.New[string, []policy.Policy](ttl, cacheEntries, now),
		current:      ttlcache.New[string, *policy.Policy](ttl, cacheEntries, now),
		versions:     ttlcache.New[policyVersionKey, policy.Policy](immutable, cacheEntries, now),
		latencies:    ttlcache.New[string, map[string]float64](ttl, cacheEntries, now),
		breakers:     ttlcache.New[struct{}, map[BreakerKey]breaker.Breaker](ttl, 1, now),
	}
}

// ServiceStatuses is Store.ServiceStatuses, at most TTL old.
func (c *Cache) ServiceStatuses(ctx context.Context) (map[string]string, error) {
	m, err := c.services.Get(ctx, struct{}{}, c.Store.Routing.ServiceStatuses)
	return maps.Clone(m), err
}

// ProviderStatuses is Store.ProviderStatuses, at most TTL old.
func (c *Cache) ProviderStatuses(ctx context.Context) (map[string]ProviderStatus, error) {
	m, err := c.providers.Get(ctx, struct{}{}, c.Store.Routing.ProviderStatuses)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ProviderStatus, len(m))
	for id, ps := range m {
		out[id] = ProviderStatus{Status: ps.Status, Services: maps.Clone(ps.Services)}
	}
	return out, nil
}

// SetServiceStatus is Store.SetServiceStatus; the cache forgets the
// service statuses.
func (c *Cache) SetServiceStatus(ctx context.Context, id, status string) error {
	defer c.services.Clear()
	return c.Store.Routing.SetServiceStatus(ctx, id, status)
}

// SetProviderStatus is Store.SetProviderStatus; the cache forgets the
// provider statuses.
func (c *Cache) SetProviderStatus(ctx context.Context, id string, status *string, services map[string]string) (ProviderStatus, error) {
	defer c.providers.Clear()
	return c.Store.Routing.SetProviderStatus(ctx, id, status, services)
}

// GetTenant is Store.GetTenant, at most TTL old; that a tenant has no
// record is cached too (most tenants have none).
func (c *Cache) GetTenant(ctx context.Context, id string) (*Tenant, error) {
	t, err := c.tenants.Get(ctx, id, func(ctx context.Context) (*Tenant, error) {
		t, err := c.Store.Routing.GetTenant(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		return t, err
	})
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, ErrNotFound
	}
	return t.clone(), nil
}

// CreateTenant is Store.CreateTenant; the cache forgets the tenant.
func (c *Cache) CreateTenant(ctx context.Context, t *Tenant) error {
	defer c.tenants.Forget(t.ID)
	return c.Store.Routing.CreateTenant(ctx, t)
}

// UpdateTenant is Store.UpdateTenant; the cache forgets the tenant.
func (c *Cache) UpdateTenant(ctx context.Context, id string, update func(*Tenant) error) (*Tenant, error) {
	defer c.tenants.Forget(id)
	return c.Store.Routing.UpdateTenant(ctx, id, update)
}

// RoutingPolicies is Store.RoutingPolicies, at most TTL old.
func (c *Cache) RoutingPolicies(ctx context.Context, tenant string, service jobs.ServiceID) ([]policy.Policy, error) {
	all, err := c.policies.Get(ctx, tenant, func(ctx context.Context) ([]policy.Policy, error) {
		return c.Store.Routing.tenantPolicies(ctx, tenant)
	})
	if err != nil {
		return nil, err
	}
	return covering(all, service), nil
}

// GetPolicy is Store.GetPolicy, at most TTL old.
func (c *Cache) GetPolicy(ctx context.Context, id string) (policy.Policy, error) {
	p, err := c.current.Get(ctx, id, func(ctx context.Context) (*policy.Policy, error) {
		p, err := c.Store.Routing.GetPolicy(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &p, nil
	})
	if err != nil {
		return policy.Policy{}, err
	}
	if p == nil {
		return policy.Policy{}, ErrNotFound
	}
	return *p, nil
}

// GetPolicyVersion is Store.GetPolicyVersion; a version never changes, so
// it is kept until evicted.
func (c *Cache) GetPolicyVersion(ctx context.Context, id string, version int) (policy.Policy, error) {
	return c.versions.Get(ctx, policyVersionKey{id, version}, func(ctx context.Context) (policy.Policy, error) {
		return c.Store.Routing.GetPolicyVersion(ctx, id, version)
	})
}

// CreatePolicy is Store.CreatePolicy; the cache forgets the policies.
func (c *Cache) CreatePolicy(ctx context.Context, p policy.Policy) (policy.Policy, error) {
	defer c.forgetPolicies()
	return c.Store.Routing.CreatePolicy(ctx, p)
}

// UpdatePolicy is Store.UpdatePolicy; the cache forgets the policies.
func (c *Cache) UpdatePolicy(ctx context.Context, id string, change func(current policy.Policy) (policy.Policy, error)) (policy.Policy, error) {
	defer c.forgetPolicies()
	return c.Store.Routing.UpdatePolicy(ctx, id, change)
}

// DeletePolicy is Store.DeletePolicy; the cache forgets the policies.
func (c *Cache) DeletePolicy(ctx context.Context, id string) error {
	defer c.forgetPolicies()
	return c.Store.Routing.DeletePolicy(ctx, id)
}

// forgetPolicies drops the current policies; one policy can be a candidate
// of every tenant, and policy writes are rare.
func (c *Cache) forgetPolicies() {
	c.policies.Clear()
	c.current.Clear()
}

// Latencies is Store.Latencies, at most TTL old.
func (c *Cache) Latencies(ctx context.Context, service jobs.ServiceID) (map[string]float64, error) {
	m, err := c.latencies.Get(ctx, string(service), func(ctx context.Context) (map[string]float64, error) {
		return c.Store.Routing.Latencies(ctx, service)
	})
	return maps.Clone(m), err
}
