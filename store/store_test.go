package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func newJob() *store.Job {
	return &store.Job{
		ID:        uuid.Must(uuid.NewV7()).String(),
		Service:   "transcriptions",
		Tenant:    "acme",
		UserID:    "alice",
		Status:    store.StatusPending,
		Input:     `{"type":"audio","url":"https://example.test/a.wav"}`,
		Options:   `{}`,
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
	}
}

func TestJobProjection(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		job := newJob()
		require.NoError(t, s.InsertJob(ctx, job))

		// A second insert of the same id (the workflow won the race) is a no-op.
		dup := *job
		dup.Status = store.StatusCompleted
		require.NoError(t, s.InsertJob(ctx, &dup))
		got, err := s.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusPending, got.Status)
		require.Equal(t, job.Input, got.Input)
		require.True(t, got.CreatedAt.Equal(job.CreatedAt), "created_at %v != %v", got.CreatedAt, job.CreatedAt)

		processing := *job
		processing.Status = store.StatusProcessing
		processing.Provider = "sandbox-fast"
		processing.Revision = 1
		now := time.Now().UTC()
		processing.ProcessedAt = &now
		require.NoError(t, s.SaveJob(ctx, &processing))

		require.NoError(t, s.UpdateProgress(ctx, job.ID, 40))
		require.NoError(t, s.UpdateProgress(ctx, job.ID, 30), "a lower progress is ignored, not an error")
		got, err = s.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, 40, got.Progress)
		require.Equal(t, "sandbox-fast", got.Provider)

		completed := processing
		completed.Status = store.StatusCompleted
		completed.Progress = 100
		completed.Result = `{"format":"json"}`
		completed.Revision = 2
		require.NoError(t, s.SaveJob(ctx, &completed))

		// A late write of an older revision does not roll the job back.
		require.NoError(t, s.SaveJob(ctx, &processing))
		require.NoError(t, s.UpdateProgress(ctx, job.ID, 90))
		got, err = s.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusCompleted, got.Status)
		require.Equal(t, 100, got.Progress)
		require.Equal(t, `{"format":"json"}`, got.Result)
		require.True(t, got.Terminal())

		_, err = s.GetJob(ctx, uuid.NewString())
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestSaveJobCreatesMissingRecord(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		job := newJob()
		job.Status = store.StatusProcessing
		job.Revision = 1
		require.NoError(t, s.SaveJob(ctx, job))
		got, err := s.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, store.StatusProcessing, got.Status)
	})
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		id, claimed, err := s.ClaimIdempotencyKey(ctx, "acme", "k1", "job-1", now, 24*time.Hour)
		require.NoError(t, err)
		require.True(t, claimed)
		require.Equal(t, "job-1", id)

		id, claimed, err = s.ClaimIdempotencyKey(ctx, "acme", "k1", "job-2", now.Add(time.Hour), 24*time.Hour)
		require.NoError(t, err)
		require.False(t, claimed)
		require.Equal(t, "job-1", id)

		// Another tenant's identical key is its own.
		id, claimed, err = s.ClaimIdempotencyKey(ctx, "globex", "k1", "job-3", now, 24*time.Hour)
		require.NoError(t, err)
		require.True(t, claimed)
		require.Equal(t, "job-3", id)

		// After 24 h the key is free again.
		id, claimed, err = s.ClaimIdempotencyKey(ctx, "acme", "k1", "job-4", now.Add(25*time.Hour), 24*time.Hour)
		require.NoError(t, err)
		require.True(t, claimed)
		require.Equal(t, "job-4", id)
	})
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		require.NoError(t, s.Migrate(context.Background()))
	})
}

func TestOpenRejectsUnknownURL(t *testing.T) {
	t.Parallel()
	_, err := store.Open(context.Background(), "mysql://root:secret@localhost/db")
	require.ErrorContains(t, err, "use postgres://")
	require.NotContains(t, err.Error(), "secret")
}

func TestSQLiteDoesWithoutTheSingleFilterListIndexes(t *testing.T) {
	t.Parallel()
	storetest.EachDB(t, func(t *testing.T, s *store.Store, db *sql.DB) {
		query := "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'jobs' AND indexname LIKE 'idx_jobs_%'"
		if s.Dialect() == "sqlite" {
			query = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'jobs' AND name LIKE 'idx_jobs_%'"
		}
		rows, err := db.Query(query)
		require.NoError(t, err)
		defer rows.Close()
		var names []string
		for rows.Next() {
			var name string
			require.NoError(t, rows.Scan(&name))
			names = append(names, name)
		}
		require.NoError(t, rows.Err())

		kept := []string{"idx_jobs_created", "idx_jobs_tenant_created", "idx_jobs_user_tenant_created"}
		singleFilter := []string{
			"idx_jobs_tenant_status_created", "idx_jobs_tenant_service_created", "idx_jobs_tenant_provider_created",
			"idx_jobs_status_created", "idx_jobs_service_created", "idx_jobs_provider_created",
		}
		want := append(kept, singleFilter...)
		if s.Dialect() == "sqlite" {
			want = kept
		}
		require.ElementsMatch(t, want, names)
	})
}
