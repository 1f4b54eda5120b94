package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestServiceStatuses(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		got, err := s.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.Empty(t, got, "no overrides: every service is active")

		require.NoError(t, s.SetServiceStatus(ctx, "transcriptions", "disabled"))
		require.NoError(t, s.SetServiceStatus(ctx, "llm-tasks", "deprecated"))
		require.NoError(t, s.SetServiceStatus(ctx, "transcriptions", "active"), "a second write updates the row")

		got, err = s.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"transcriptions": "active", "llm-tasks": "deprecated"}, got)
	})
}

func TestProviderStatuses(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		got, err := s.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.Empty(t, got)

		// Services only: the provider-level status stays the catalog's.
		ps, err := s.SetProviderStatus(ctx, "alpha", nil, map[string]string{"transcriptions": "degraded"})
		require.NoError(t, err)
		require.Equal(t, store.ProviderStatus{Status: "", Services: map[string]string{"transcriptions": "degraded"}}, ps)

		// Status only: the services entries are kept.
		ps, err = s.SetProviderStatus(ctx, "alpha", pointerTo("disabled"), nil)
		require.NoError(t, err)
		require.Equal(t, store.ProviderStatus{Status: "disabled", Services: map[string]string{"transcriptions": "degraded"}}, ps)

		// Another service: merged with the first.
		ps, err = s.SetProviderStatus(ctx, "alpha", nil, map[string]string{"translations": "disabled"})
		require.NoError(t, err)
		require.Equal(t, store.ProviderStatus{Status: "disabled", Services: map[string]string{"transcriptions": "degraded", "translations": "disabled"}}, ps)

		// Empty values go back to the catalog's.
		ps, err = s.SetProviderStatus(ctx, "alpha", pointerTo(""), map[string]string{"transcriptions": ""})
		require.NoError(t, err)
		require.Equal(t, store.ProviderStatus{Status: "", Services: map[string]string{"translations": "disabled"}}, ps)

		_, err = s.SetProviderStatus(ctx, "narrow", pointerTo("degraded"), nil)
		require.NoError(t, err)

		got, err = s.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]store.ProviderStatus{
			"alpha":  {Status: "", Services: map[string]string{"translations": "disabled"}},
			"narrow": {Status: "degraded", Services: map[string]string{}},
		}, got)
	})
}

// Concurrent changes of different services of one provider, starting with
// no row at all, must all land.
func TestProviderStatusConcurrentMerges(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		const writers = 16
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for i := range writers {
			wg.Go(func() {
				_, err := s.SetProviderStatus(ctx, "alpha", nil, map[string]string{fmt.Sprintf("s%02d", i): "degraded"})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		got, err := s.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.Len(t, got["alpha"].Services, writers, "no merge lost another's entry: %v", got["alpha"].Services)
	})
}

func TestStatusCache(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		cache := store.NewStatusCache(s, time.Hour)

		services, err := cache.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.Empty(t, services)
		providers, err := cache.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.Empty(t, providers)

		// A write by someone else (another process) is not seen within the TTL.
		require.NoError(t, s.SetServiceStatus(ctx, "transcriptions", "disabled"))
		_, err = s.SetProviderStatus(ctx, "alpha", pointerTo("disabled"), nil)
		require.NoError(t, err)
		services, err = cache.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.Empty(t, services, "served from the cache")
		providers, err = cache.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.Empty(t, providers, "served from the cache")

		// A write through the cache is seen at once, with the other's.
		require.NoError(t, cache.SetServiceStatus(ctx, "llm-tasks", "deprecated"))
		services, err = cache.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"transcriptions": "disabled", "llm-tasks": "deprecated"}, services)
		ps, err := cache.SetProviderStatus(ctx, "alpha", nil, map[string]string{"llm-tasks": "degraded"})
		require.NoError(t, err)
		require.Equal(t, store.ProviderStatus{Status: "disabled", Services: map[string]string{"llm-tasks": "degraded"}}, ps)
		providers, err = cache.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]store.ProviderStatus{"alpha": ps}, providers)

		// Callers get copies: changing one does not change the cache.
		services["translations"] = "disabled"
		providers["alpha"].Services["transcriptions"] = "disabled"
		again, err := cache.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.NotContains(t, again, "translations")
		againProviders, err := cache.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.NotContains(t, againProviders["alpha"].Services, "transcriptions")
	})
}

func TestStatusCacheExpires(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		cache := store.NewStatusCache(s, 50*time.Millisecond)
		services, err := cache.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.Empty(t, services)

		require.NoError(t, s.SetServiceStatus(ctx, "translations", "disabled"))
		require.Eventually(t, func() bool {
			services, err := cache.ServiceStatuses(ctx)
			return err == nil && services["translations"] == "disabled"
		}, 5*time.Second, 10*time.Millisecond, "another process's write shows once the TTL passed")
	})
}
