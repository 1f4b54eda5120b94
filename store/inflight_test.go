package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// Concurrent creates under a caller's and a tenant's in-flight limits
// record exactly as many jobs as the limits allow; a job finished frees
// its place, and a job of another caller counts only for the tenant.
func TestCreateJobWithinInFlightLimits(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		key := store.InFlightLimit{Name: "max_in_flight of the API key", Tenant: "acme", User: "key:aaaaaaaaaaaaaaaa", Max: 3}
		tenant := store.InFlightLimit{Name: "max_in_flight of tenant acme", Tenant: "acme", Max: 4}
		create := func(user string, limits ...store.InFlightLimit) (*jobs.Record, error) {
			job := newJob()
			job.UserID = user
			created, err := s.Jobs.CreateJob(ctx, job, &store.JobStart{Input: "{}", NextAttemptAt: job.CreatedAt}, limits...)
			if err == nil && !created {
				err = errors.New("not created")
			}
			return job, err
		}

		var mu sync.Mutex
		var recorded []*jobs.Record
		refused := 0
		var wg sync.WaitGroup
		for range 12 {
			wg.Go(func() {
				job, err := create(key.User, key, tenant)
				mu.Lock()
				defer mu.Unlock()
				var over *store.InFlightError
				switch {
				case errors.As(err, &over):
					require.Equal(t, key, over.Limit)
					refused++
				case err != nil:
					t.Error(err)
				default:
					recorded = append(recorded, job)
				}
			})
		}
		wg.Wait()
		require.Len(t, recorded, 3, "the key's limit holds under concurrent creates")
		require.Equal(t, 9, refused)

		// Another caller of the tenant: its own jobs are not limited, but
		// count for the tenant's limit (3 + 1 = 4).
		_, err := create("alice", tenant)
		require.NoError(t, err)
		_, err = create("bob", tenant)
		var over *store.InFlightError
		require.ErrorAs(t, err, &over)
		require.Equal(t, tenant, over.Limit)
		_, err = create("bob")
		require.NoError(t, err, "a job under no limit is recorded")

		// One of the key's jobs runs, another finishes: one place frees
		// up for the key (the tenant has 5 in flight, over its own limit,
		// so the key's job is refused by the tenant's).
		running := *recorded[0]
		running.Status, running.Revision = jobs.StatusProcessing, 1
		require.NoError(t, s.Jobs.SaveJob(ctx, &running))
		done := *recorded[1]
		done.Status, done.Revision, done.Result = jobs.StatusFailed, 2, ""
		finished := time.Now().UTC()
		done.CompletedAt = &finished
		require.NoError(t, s.Jobs.SaveJob(ctx, &done))
		_, err = create(key.User, key)
		require.NoError(t, err, "a finished job leaves the key's count")
		_, err = create(key.User, key)
		require.ErrorAs(t, err, &over, "processing jobs still count")
		_, err = create(key.User, key, store.InFlightLimit{Name: "max_in_flight of tenant acme", Tenant: "acme", Max: 6})
		require.ErrorAs(t, err, &over)
		require.Equal(t, key, over.Limit)
	})
}
