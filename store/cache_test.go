package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/store"
)

// In these tests the plain store s stands for another process: its writes
// reach the cache only through the database.

// clockedCache is a cache of s with a TTL of a second, on a clock the test
// moves.
func clockedCache(s *store.Store) (*store.Cache, *store.Clock) {
	clock := store.NewClock(time.Now())
	return store.NewCacheAt(s, time.Second, clock.Now), clock
}

func TestCacheStatuses(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		cache, clock := clockedCache(s)

		services, err := cache.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.Empty(t, services)
		providerStatuses, err := cache.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.Empty(t, providerStatuses)

		// Another process's write is not seen within the TTL...
		require.NoError(t, s.Routing.SetServiceStatus(ctx, "transcriptions", "disabled"))
		_, err = s.Routing.SetProviderStatus(ctx, "alpha", pointerTo("disabled"), nil)
		require.NoError(t, err)
		clock.Advance(999 * time.Millisecond)
		services, err = cache.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.Empty(t, services, "served from the cache")
		providerStatuses, err = cache.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.Empty(t, providerStatuses, "served from the cache")

		// ...but once it has passed.
		clock.Advance(time.Millisecond)
		services, err = cache.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"transcriptions": "disabled"}, services)
		providerStatuses, err = cache.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.Equal(t, "disabled", providerStatuses["alpha"].Status)

		// A write through the cache is seen at once.
		require.NoError(t, cache.SetServiceStatus(ctx, "llm-tasks", "deprecated"))
		services, err = cache.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"transcriptions": "disabled", "llm-tasks": "deprecated"}, services)
		ps, err := cache.SetProviderStatus(ctx, "alpha", nil, map[string]string{"llm-tasks": "degraded"})
		require.NoError(t, err)
		require.Equal(t, store.ProviderStatus{Status: "disabled", Services: map[string]string{"llm-tasks": "degraded"}}, ps)
		providerStatuses, err = cache.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]store.ProviderStatus{"alpha": ps}, providerStatuses)

		// Callers get copies: changing one does not change the cache.
		services["translations"] = "disabled"
		providerStatuses["alpha"].Services["transcriptions"] = "disabled"
		again, err := cache.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.NotContains(t, again, "translations")
		againProviders, err := cache.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.NotContains(t, againProviders["alpha"].Services, "transcriptions")
	})
}

func TestCacheTenants(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		cache, clock := clockedCache(s)

		// A tenant without a record: that is cached too.
		_, err := cache.GetTenant(ctx, "acme")
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: "acme", Providers: map[string]store.Access{"alpha": {Enabled: false}}}))
		_, err = cache.GetTenant(ctx, "acme")
		require.ErrorIs(t, err, store.ErrNotFound, "served from the cache")
		clock.Advance(time.Second)
		got, err := cache.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.False(t, got.ProviderEnabled("alpha"))

		// Another process's update shows after the TTL.
		_, err = s.Routing.UpdateTenant(ctx, "acme", func(t *store.Tenant) error {
			t.Providers["alpha"] = store.Access{Enabled: true}
			return nil
		})
		require.NoError(t, err)
		got, err = cache.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.False(t, got.ProviderEnabled("alpha"), "served from the cache")
		clock.Advance(time.Second)
		got, err = cache.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.True(t, got.ProviderEnabled("alpha"))

		// Updates and creations through the cache show at once.
		policyID := "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f"
		_, err = cache.UpdateTenant(ctx, "acme", func(t *store.Tenant) error {
			t.Services["llm-tasks"] = store.Access{Enabled: false}
			t.DefaultPolicyID = &policyID
			return nil
		})
		require.NoError(t, err)
		got, err = cache.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.False(t, got.ServiceEnabled("llm-tasks"))
		require.Equal(t, &policyID, got.DefaultPolicyID)
		_, err = cache.GetTenant(ctx, "globex")
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NoError(t, cache.CreateTenant(ctx, &store.Tenant{ID: "globex"}))
		_, err = cache.GetTenant(ctx, "globex")
		require.NoError(t, err, "a tenant created through the cache is no longer missing")

		// Callers get copies.
		got.Services["translations"] = store.Access{Enabled: false}
		*got.DefaultPolicyID = "changed"
		again, err := cache.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.True(t, again.ServiceEnabled("translations"))
		require.Equal(t, policyID, *again.DefaultPolicyID)
	})
}

func TestCachePolicies(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		cache, clock := clockedCache(s)
		routing := func(tenant string, service jobs.ServiceID) []string {
			t.Helper()
			got, err := cache.RoutingPolicies(ctx, tenant, service)
			require.NoError(t, err)
			return ids(got)
		}

		acmeTr := createAt(t, s, newPolicy("acme", "", jobs.Transcriptions), 1)
		acmeAll := createAt(t, s, newPolicy("acme", ""), 2)
		globalLLM := createAt(t, s, newPolicy("", "", jobs.LLMTasks), 3)
		require.Equal(t, []string{acmeAll.ID, acmeTr.ID}, routing("acme", jobs.Transcriptions))
		require.Equal(t, []string{globalLLM.ID, acmeAll.ID}, routing("acme", jobs.LLMTasks), "one cached read serves every service")

		// Another process's policy shows after the TTL.
		other := createAt(t, s, newPolicy("acme", "", jobs.Transcriptions), 4)
		require.Equal(t, []string{acmeAll.ID, acmeTr.ID}, routing("acme", jobs.Transcriptions), "served from the cache")
		clock.Advance(time.Second)
		require.Equal(t, []string{other.ID, acmeAll.ID, acmeTr.ID}, routing("acme", jobs.Transcriptions))

		// GetPolicy, also of a policy that does not exist.
		got, err := cache.GetPolicy(ctx, acmeTr.ID)
		require.NoError(t, err)
		require.Equal(t, acmeTr, got)
		missing := "0195a3c4-0000-7000-8000-000000000000"
		_, err = cache.GetPolicy(ctx, missing)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NoError(t, s.Routing.DeletePolicy(ctx, acmeTr.ID))
		got, err = cache.GetPolicy(ctx, acmeTr.ID)
		require.NoError(t, err, "served from the cache")
		require.Equal(t, acmeTr, got)
		clock.Advance(time.Second)
		_, err = cache.GetPolicy(ctx, acmeTr.ID)
		require.ErrorIs(t, err, store.ErrNotFound)

		// Writes through the cache show at once: create, update, delete.
		created, err := cache.CreatePolicy(ctx, newPolicy("acme", "", jobs.Transcriptions))
		require.NoError(t, err)
		require.Equal(t, []string{created.ID, other.ID, acmeAll.ID}, routing("acme", jobs.Transcriptions))
		require.Equal(t, []string{globalLLM.ID, acmeAll.ID}, routing("acme", jobs.LLMTasks))
		_, err = cache.GetPolicy(ctx, created.ID)
		require.NoError(t, err)
		updated, err := cache.UpdatePolicy(ctx, created.ID, func(p policy.Policy) (policy.Policy, error) {
			p.Name = "renamed"
			return p, nil
		})
		require.NoError(t, err)
		got, err = cache.GetPolicy(ctx, created.ID)
		require.NoError(t, err)
		require.Equal(t, "renamed", got.Name)
		require.Equal(t, 2, got.Version)
		byService, err := cache.RoutingPolicies(ctx, "acme", jobs.Transcriptions)
		require.NoError(t, err)
		require.Equal(t, updated, byService[0])
		require.NoError(t, cache.DeletePolicy(ctx, created.ID))
		_, err = cache.GetPolicy(ctx, created.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.Equal(t, []string{other.ID, acmeAll.ID}, routing("acme", jobs.Transcriptions))

		// A version never changes: it stays cached whatever the clock says.
		v1, err := cache.GetPolicyVersion(ctx, created.ID, 1)
		require.NoError(t, err)
		require.Equal(t, created, v1)
		_, err = db.Exec("DELETE FROM policy_versions")
		require.NoError(t, err)
		clock.Advance(24 * time.Hour)
		v1, err = cache.GetPolicyVersion(ctx, created.ID, 1)
		require.NoError(t, err, "served from the cache")
		require.Equal(t, created, v1)
		_, err = cache.GetPolicyVersion(ctx, created.ID, 2)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestCacheLatencies(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		cache, clock := clockedCache(s)
		require.NoError(t, s.Routing.RecordLatency(ctx, "p", "llm-tasks", 100*time.Millisecond))
		got, err := cache.Latencies(ctx, "llm-tasks")
		require.NoError(t, err)
		require.InDelta(t, 100.0, got["p"], 0.001)
		got["q"] = 1 // a copy

		require.NoError(t, s.Routing.RecordLatency(ctx, "p", "llm-tasks", 200*time.Millisecond))
		got, err = cache.Latencies(ctx, "llm-tasks")
		require.NoError(t, err)
		require.Equal(t, map[string]float64{"p": 100}, got, "served from the cache")
		clock.Advance(time.Second)
		got, err = cache.Latencies(ctx, "llm-tasks")
		require.NoError(t, err)
		require.InDelta(t, 120.0, got["p"], 0.001)
	})
}

func TestCacheWithoutTTLReadsEveryTime(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		cache := store.NewCache(s, 0)
		_, err := cache.GetTenant(ctx, "acme")
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: "acme"}))
		_, err = cache.GetTenant(ctx, "acme")
		require.NoError(t, err)

		p := createAt(t, s, newPolicy("acme", "", jobs.Transcriptions), 1)
		_, err = cache.GetPolicyVersion(ctx, p.ID, 1)
		require.NoError(t, err)
		require.NoError(t, cache.RecordLatency(ctx, "p", "llm-tasks", 100*time.Millisecond))
		require.NoError(t, cache.RecordLatency(ctx, "p", "llm-tasks", 200*time.Millisecond))
		got, err := s.Routing.Latencies(ctx, "llm-tasks")
		require.NoError(t, err)
		require.InDelta(t, 120.0, got["p"], 0.001, "every observation written at once")
	})
}
