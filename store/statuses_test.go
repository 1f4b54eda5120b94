package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
)

func TestServiceStatuses(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		got, err := s.Routing.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.Empty(t, got, "no overrides: every service is active")

		require.NoError(t, s.Routing.SetServiceStatus(ctx, "transcriptions", "disabled"))
		require.NoError(t, s.Routing.SetServiceStatus(ctx, "llm-tasks", "deprecated"))
		require.NoError(t, s.Routing.SetServiceStatus(ctx, "transcriptions", "active"), "a second write updates the row")

		got, err = s.Routing.ServiceStatuses(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]string{"transcriptions": "active", "llm-tasks": "deprecated"}, got)
	})
}

func TestProviderStatuses(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		got, err := s.Routing.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.Empty(t, got)

		// Services only: the provider-level status stays the catalog's.
		ps, err := s.Routing.SetProviderStatus(ctx, "alpha", nil, map[string]string{"transcriptions": "degraded"})
		require.NoError(t, err)
		require.Equal(t, store.ProviderStatus{Status: "", Services: map[string]string{"transcriptions": "degraded"}}, ps)

		// Status only: the services entries are kept.
		ps, err = s.Routing.SetProviderStatus(ctx, "alpha", pointerTo("disabled"), nil)
		require.NoError(t, err)
		require.Equal(t, store.ProviderStatus{Status: "disabled", Services: map[string]string{"transcriptions": "degraded"}}, ps)

		// Another service: merged with the first.
		ps, err = s.Routing.SetProviderStatus(ctx, "alpha", nil, map[string]string{"translations": "disabled"})
		require.NoError(t, err)
		require.Equal(t, store.ProviderStatus{Status: "disabled", Services: map[string]string{"transcriptions": "degraded", "translations": "disabled"}}, ps)

		// Empty values go back to the catalog's.
		ps, err = s.Routing.SetProviderStatus(ctx, "alpha", pointerTo(""), map[string]string{"transcriptions": ""})
		require.NoError(t, err)
		require.Equal(t, store.ProviderStatus{Status: "", Services: map[string]string{"translations": "disabled"}}, ps)

		_, err = s.Routing.SetProviderStatus(ctx, "narrow", pointerTo("degraded"), nil)
		require.NoError(t, err)

		got, err = s.Routing.ProviderStatuses(ctx)
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
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		const writers = 16
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for i := range writers {
			wg.Go(func() {
				_, err := s.Routing.SetProviderStatus(ctx, "alpha", nil, map[string]string{fmt.Sprintf("s%02d", i): "degraded"})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		got, err := s.Routing.ProviderStatuses(ctx)
		require.NoError(t, err)
		require.Len(t, got["alpha"].Services, writers, "no merge lost another's entry: %v", got["alpha"].Services)
	})
}
