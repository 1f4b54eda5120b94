package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
)

func pointerTo[T any](v T) *T { return &v }

func TestTenantCreateAndGet(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		created := time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC)
		policyID := "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f"
		tenant := &store.Tenant{
			ID:              "acme",
			DefaultPolicyID: &policyID,
			Services:        map[string]store.Access{"transcriptions": {Enabled: false}, "llm-tasks": {Enabled: true}},
			Providers:       map[string]store.Access{"sandbox-fast": {Enabled: false}},
			CreatedAt:       created,
		}
		require.NoError(t, s.Routing.CreateTenant(ctx, tenant))

		got, err := s.Routing.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.Equal(t, "acme", got.ID)
		require.Equal(t, &policyID, got.DefaultPolicyID)
		require.Equal(t, tenant.Services, got.Services)
		require.Equal(t, tenant.Providers, got.Providers)
		require.True(t, got.CreatedAt.Equal(created.Truncate(time.Microsecond)), "created_at %v", got.CreatedAt)
		require.True(t, got.UpdatedAt.Equal(got.CreatedAt), "updated_at starts at created_at")

		require.False(t, got.ServiceEnabled("transcriptions"))
		require.True(t, got.ServiceEnabled("llm-tasks"))
		require.True(t, got.ServiceEnabled("translations"), "absent keys inherit the default: enabled")
		require.False(t, got.ProviderEnabled("sandbox-fast"))
		require.True(t, got.ProviderEnabled("other"))

		// A tenant without settings stores empty maps, not nulls.
		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: "bare"}))
		bare, err := s.Routing.GetTenant(ctx, "bare")
		require.NoError(t, err)
		require.Nil(t, bare.DefaultPolicyID)
		require.NotNil(t, bare.Services)
		require.Empty(t, bare.Services)
		require.NotNil(t, bare.Providers)
		require.Empty(t, bare.Providers)
		require.False(t, bare.CreatedAt.IsZero())

		_, err = s.Routing.GetTenant(ctx, "nobody")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestTenantCreateConflict(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: "acme", Services: map[string]store.Access{"translations": {Enabled: false}}}))
		err := s.Routing.CreateTenant(ctx, &store.Tenant{ID: "acme"})
		require.ErrorIs(t, err, store.ErrConflict)

		// The first record is untouched.
		got, err := s.Routing.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.Equal(t, map[string]store.Access{"translations": {Enabled: false}}, got.Services)
	})
}

func TestNilTenantAllowsEverything(t *testing.T) {
	t.Parallel()
	var none *store.Tenant
	require.True(t, none.ServiceEnabled("transcriptions"))
	require.True(t, none.ProviderEnabled("sandbox-fast"))
}

func TestTenantUpdate(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		policyID := "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f"
		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{
			ID:              "acme",
			DefaultPolicyID: &policyID,
			Services:        map[string]store.Access{"transcriptions": {Enabled: true}, "translations": {Enabled: false}},
			CreatedAt:       time.Now().Add(-time.Hour),
		}))
		before, err := s.Routing.GetTenant(ctx, "acme")
		require.NoError(t, err)

		updated, err := s.Routing.UpdateTenant(ctx, "acme", func(t *store.Tenant) error {
			t.Services["transcriptions"] = store.Access{Enabled: false}
			t.Providers["narrow"] = store.Access{Enabled: false}
			t.DefaultPolicyID = nil
			return nil
		})
		require.NoError(t, err)
		want := map[string]store.Access{"transcriptions": {Enabled: false}, "translations": {Enabled: false}}
		require.Equal(t, want, updated.Services)

		got, err := s.Routing.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.Equal(t, want, got.Services, "the other entry is kept")
		require.Equal(t, map[string]store.Access{"narrow": {Enabled: false}}, got.Providers)
		require.Nil(t, got.DefaultPolicyID)
		require.True(t, got.CreatedAt.Equal(before.CreatedAt), "created_at does not change")
		require.True(t, got.UpdatedAt.After(before.UpdatedAt), "updated_at moves")
		require.True(t, got.UpdatedAt.Equal(updated.UpdatedAt))

		// An error from update aborts the write.
		boom := errors.New("boom")
		_, err = s.Routing.UpdateTenant(ctx, "acme", func(t *store.Tenant) error {
			t.Services = nil
			return boom
		})
		require.ErrorIs(t, err, boom)
		got, err = s.Routing.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.Equal(t, want, got.Services)

		_, err = s.Routing.UpdateTenant(ctx, "nobody", func(*store.Tenant) error { return nil })
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// Concurrent updates of different entries of one tenant must all land: the
// read-modify-write holds the row.
func TestTenantConcurrentUpdates(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: "acme"}))
		const writers = 16
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for i := range writers {
			wg.Go(func() {
				_, err := s.Routing.UpdateTenant(ctx, "acme", func(t *store.Tenant) error {
					t.Providers[fmt.Sprintf("p%02d", i)] = store.Access{Enabled: i%2 == 0}
					// Widen the window between read and write.
					time.Sleep(5 * time.Millisecond)
					return nil
				})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		got, err := s.Routing.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.Len(t, got.Providers, writers, "no update lost another's entry: %v", got.Providers)
		for i := range writers {
			require.Equal(t, store.Access{Enabled: i%2 == 0}, got.Providers[fmt.Sprintf("p%02d", i)])
		}
	})
}

func TestTenantList(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		list, total, err := s.Routing.ListTenants(ctx, 0, 20)
		require.NoError(t, err)
		require.Zero(t, total)
		require.Empty(t, list)

		// Created out of order; listed by id.
		for _, id := range []string{"delta", "alpha", "echo", "charlie", "bravo"} {
			require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: id, Services: map[string]store.Access{"llm-tasks": {Enabled: id != "charlie"}}}))
		}
		ids := func(list []store.Tenant) []string {
			out := []string{}
			for _, t := range list {
				out = append(out, t.ID)
			}
			return out
		}
		list, total, err = s.Routing.ListTenants(ctx, 0, 2)
		require.NoError(t, err)
		require.EqualValues(t, 5, total)
		require.Equal(t, []string{"alpha", "bravo"}, ids(list))

		list, total, err = s.Routing.ListTenants(ctx, 2, 2)
		require.NoError(t, err)
		require.EqualValues(t, 5, total)
		require.Equal(t, []string{"charlie", "delta"}, ids(list))
		require.Equal(t, map[string]store.Access{"llm-tasks": {Enabled: false}}, list[0].Services, "records are decoded")

		list, total, err = s.Routing.ListTenants(ctx, 4, 2)
		require.NoError(t, err)
		require.EqualValues(t, 5, total)
		require.Equal(t, []string{"echo"}, ids(list))

		list, total, err = s.Routing.ListTenants(ctx, 10, 2)
		require.NoError(t, err)
		require.EqualValues(t, 5, total)
		require.Empty(t, list)
	})
}

// Retention settings are stored per tenant in whole seconds; nil (NULL)
// takes the deployment default.
func TestTenantRetentionRoundTrip(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: "acme",
			Retention: store.Retention{Results: pointerTo(2 * time.Hour)}}))
		got, err := s.Routing.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.Equal(t, store.Retention{Results: pointerTo(2 * time.Hour)}, got.Retention)

		// Both set, then the results reset; sub-second parts are dropped.
		_, err = s.Routing.UpdateTenant(ctx, "acme", func(t *store.Tenant) error {
			t.Retention.Jobs = pointerTo(30*24*time.Hour + 500*time.Millisecond)
			return nil
		})
		require.NoError(t, err)
		got, err = s.Routing.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.Equal(t, store.Retention{Results: pointerTo(2 * time.Hour), Jobs: pointerTo(30 * 24 * time.Hour)}, got.Retention)

		_, err = s.Routing.UpdateTenant(ctx, "acme", func(t *store.Tenant) error {
			t.Retention.Results = nil
			return nil
		})
		require.NoError(t, err)
		got, err = s.Routing.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.Equal(t, store.Retention{Jobs: pointerTo(30 * 24 * time.Hour)}, got.Retention)

		// An update of other settings keeps them.
		_, err = s.Routing.UpdateTenant(ctx, "acme", func(t *store.Tenant) error {
			t.Services["translations"] = store.Access{Enabled: false}
			return nil
		})
		require.NoError(t, err)
		list, _, err := s.Routing.ListTenants(ctx, 0, 10)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, store.Retention{Jobs: pointerTo(30 * 24 * time.Hour)}, list[0].Retention)

		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: "bare"}))
		bare, err := s.Routing.GetTenant(ctx, "bare")
		require.NoError(t, err)
		require.Equal(t, store.Retention{}, bare.Retention)
	})
}

// The cache hands out copies: changing one changes no other reader's.
func TestTenantRetentionIsCopiedByTheCache(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		c := store.NewCache(s, time.Minute)
		require.NoError(t, c.CreateTenant(ctx, &store.Tenant{ID: "acme",
			Retention: store.Retention{Results: pointerTo(time.Hour), Jobs: pointerTo(2 * time.Hour)}}))
		first, err := c.GetTenant(ctx, "acme")
		require.NoError(t, err)
		*first.Retention.Results, *first.Retention.Jobs = 0, 0
		second, err := c.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.Equal(t, store.Retention{Results: pointerTo(time.Hour), Jobs: pointerTo(2 * time.Hour)}, second.Retention)
	})
}

func TestTenantEffectiveRetention(t *testing.T) {
	t.Parallel()
	week, day, hour := 7*24*time.Hour, 24*time.Hour, time.Hour
	for _, tc := range []struct {
		name          string
		tenant        *store.Tenant
		defaults      store.RetentionDefaults
		results, jobs time.Duration
	}{
		{name: "no record takes the defaults", defaults: store.RetentionDefaults{Results: week}, results: week},
		{name: "no settings take the defaults", tenant: &store.Tenant{}, defaults: store.RetentionDefaults{Results: week, Jobs: 30 * day}, results: week, jobs: 30 * day},
		{name: "no defaults keep forever", tenant: &store.Tenant{}},
		{name: "own results", tenant: &store.Tenant{Retention: store.Retention{Results: &day}}, defaults: store.RetentionDefaults{Results: week}, results: day},
		{name: "own jobs", tenant: &store.Tenant{Retention: store.Retention{Jobs: &week}}, defaults: store.RetentionDefaults{Results: day}, results: day, jobs: week},
		{name: "both own", tenant: &store.Tenant{Retention: store.Retention{Results: &hour, Jobs: &day}}, defaults: store.RetentionDefaults{Results: week, Jobs: 30 * day}, results: hour, jobs: day},
		{name: "results go with the job", tenant: &store.Tenant{Retention: store.Retention{Jobs: &day}}, defaults: store.RetentionDefaults{Results: week}, results: day, jobs: day},
		{name: "results kept forever go with the job", defaults: store.RetentionDefaults{Jobs: day}, results: day, jobs: day},
		{name: "own results over default jobs", tenant: &store.Tenant{Retention: store.Retention{Results: &week}}, defaults: store.RetentionDefaults{Jobs: day}, results: day, jobs: day},
		{name: "negative defaults keep forever", defaults: store.RetentionDefaults{Results: -hour, Jobs: -hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			results, jobs := tc.tenant.EffectiveRetention(tc.defaults)
			require.Equal(t, tc.results, results, "results")
			require.Equal(t, tc.jobs, jobs, "jobs")
		})
	}
}

// The retention migration rolls back and applies again; tenants keep their
// other settings, and their retention goes back to the defaults.
func TestTenantRetentionMigration(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: "acme", Services: map[string]store.Access{"translations": {Enabled: false}},
			Retention: store.Retention{Results: pointerTo(time.Hour)}}))
		require.NoError(t, s.RollbackMigration(ctx, "202611280003_tenant_retention"))
		require.NoError(t, s.Migrate(ctx))
		got, err := s.Routing.GetTenant(ctx, "acme")
		require.NoError(t, err)
		require.Equal(t, map[string]store.Access{"translations": {Enabled: false}}, got.Services)
		require.Equal(t, store.Retention{}, got.Retention)
	})
}
