package store_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
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

// A batch under an in-flight limit is recorded only when all its jobs
// fit: the batch and its jobs, or nothing.
func TestCreateBatchWithinInFlightLimits(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		limit := store.InFlightLimit{Name: "this API key's max_in_flight", Tenant: "acme", User: "key:aaaaaaaaaaaaaaaa", Max: 3}
		batch := func(id string, n int) (bool, error) {
			records, starts := make([]*jobs.Record, n), make([]*store.JobStart, n)
			for i := range records {
				records[i] = newJob()
				records[i].UserID = limit.User
				starts[i] = &store.JobStart{Input: "{}", NextAttemptAt: records[i].CreatedAt}
			}
			return s.Batches.CreateBatch(ctx, &store.Batch{ID: id, Tenant: "acme", UserID: limit.User, CreatedAt: time.Now()}, records, starts, limit)
		}
		created, err := batch(uuid.NewString(), 2)
		require.NoError(t, err)
		require.True(t, created)
		id := uuid.NewString()
		_, err = batch(id, 2)
		var over *store.InFlightError
		require.ErrorAs(t, err, &over)
		require.EqualValues(t, 2, over.InFlight)
		_, err = s.Batches.GetBatch(ctx, id)
		require.ErrorIs(t, err, store.ErrNotFound, "nothing of the refused batch is kept")
		created, err = batch(uuid.NewString(), 1)
		require.NoError(t, err)
		require.True(t, created, "3 of 3")
	})
}

// On SQLite, a key's count reads the partial index of jobs in flight,
// not every job the key ever ran.
func TestInFlightCountUsesItsIndex(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		if s.Dialect() != "sqlite" {
			t.Skip("PostgreSQL plans by its statistics")
		}
		rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM jobs WHERE user_id = ? AND tenant = ? AND status IN ('pending', 'processing')", "key:x", "acme")
		require.NoError(t, err)
		defer rows.Close()
		var plan strings.Builder
		for rows.Next() {
			var id, parent, unused int
			var detail string
			require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
			plan.WriteString(detail + "\n")
		}
		require.Contains(t, plan.String(), "idx_jobs_user_in_flight")
	})
}
