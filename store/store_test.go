package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// jobID and otherJobID are ids of jobs that tables keyed by job refer to;
// the jobs table need not hold them.
const (
	jobID      = "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f"
	otherJobID = "0195a3c4-7b1e-7c2d-9e3f-000000000000"
)

func newJob() *jobs.Record {
	return &jobs.Record{
		ID:        uuid.Must(uuid.NewV7()).String(),
		Service:   "transcriptions",
		Tenant:    "acme",
		UserID:    "alice",
		Status:    jobs.StatusPending,
		Input:     `{"type":"audio","url":"https://example.test/a.wav"}`,
		Options:   `{}`,
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
	}
}

// eachStore runs fn, in parallel with other tests, once against
// PostgreSQL and once against SQLite (storetest.Each), with a background
// context.
func eachStore(t *testing.T, fn func(ctx context.Context, t *testing.T, s *store.Store)) {
	t.Helper()
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, _ *sql.DB) { fn(ctx, t, s) })
}

// eachStoreDB is eachStore with storetest.EachDB's second connection pool.
func eachStoreDB(t *testing.T, fn func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB)) {
	t.Helper()
	t.Parallel()
	storetest.EachDB(t, func(t *testing.T, s *store.Store, db *sql.DB) { fn(context.Background(), t, s, db) })
}

func TestJobProjection(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		job := newJob()
		require.NoError(t, s.Jobs.InsertJob(ctx, job))

		// A second insert of the same id (the workflow won the race) is a no-op.
		dup := *job
		dup.Status = jobs.StatusCompleted
		require.NoError(t, s.Jobs.InsertJob(ctx, &dup))
		got, err := s.Jobs.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusPending, got.Status)
		require.Equal(t, job.Input, got.Input)
		require.True(t, got.CreatedAt.Equal(job.CreatedAt), "created_at %v != %v", got.CreatedAt, job.CreatedAt)

		processing := *job
		processing.Status = jobs.StatusProcessing
		processing.Provider = "sandbox-fast"
		processing.Revision = 1
		now := time.Now().UTC()
		processing.ProcessedAt = &now
		require.NoError(t, s.Jobs.SaveJob(ctx, &processing))

		require.NoError(t, s.Jobs.UpdateProgress(ctx, job.ID, 40))
		require.NoError(t, s.Jobs.UpdateProgress(ctx, job.ID, 30), "a lower progress is ignored, not an error")
		got, err = s.Jobs.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, 40, got.Progress)
		require.Equal(t, "sandbox-fast", got.Provider)

		completed := processing
		completed.Status = jobs.StatusCompleted
		completed.Progress = 100
		completed.Result = `{"format":"json"}`
		completed.ResultFile = "results/" + job.ID + "/transcript.json"
		completed.Revision = 2
		require.NoError(t, s.Jobs.SaveJob(ctx, &completed))

		// A late write of an older revision does not roll the job back.
		require.NoError(t, s.Jobs.SaveJob(ctx, &processing))
		require.NoError(t, s.Jobs.UpdateProgress(ctx, job.ID, 90))
		got, err = s.Jobs.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusCompleted, got.Status)
		require.Equal(t, 100, got.Progress)
		require.Equal(t, `{"format":"json"}`, got.Result)
		require.Equal(t, completed.ResultFile, got.ResultFile)
		require.True(t, got.Terminal())

		_, err = s.Jobs.GetJob(ctx, uuid.NewString())
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestSaveJobCreatesMissingRecord(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		job := newJob()
		job.Status = jobs.StatusProcessing
		job.Revision = 1
		require.NoError(t, s.Jobs.SaveJob(ctx, job))
		got, err := s.Jobs.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusProcessing, got.Status)
	})
}

func TestIdempotencyKeys(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Now().UTC()
		// Each claim is of the key "k1", made in turn: the job the key
		// stands for after it, and whether it claimed the key.
		for i, c := range []struct {
			tenant, service, fingerprint, jobID string
			after                               time.Duration
			wantID                              string
			wantClaimed                         bool
			wantErr                             error
		}{
			{"acme", "translations", "fp-a", "job-1", 0, "job-1", true, nil},
			// The same request again: the first job.
			{"acme", "translations", "fp-a", "job-2", time.Hour, "job-1", false, nil},
			// Another request with the same key: refused, the key unchanged.
			{"acme", "translations", "fp-b", "job-2", time.Hour, "", false, store.ErrIdempotencyKeyReused},
			{"acme", "translations", "fp-a", "job-2", time.Hour, "job-1", false, nil},
			// Another service's or tenant's identical key is its own.
			{"acme", "llm-tasks", "fp-b", "job-3", 0, "job-3", true, nil},
			{"globex", "translations", "fp-b", "job-4", 0, "job-4", true, nil},
			// After 24 h the key is free again, for any request; the new
			// request's fingerprint is the one that counts then.
			{"acme", "translations", "fp-c", "job-5", 25 * time.Hour, "job-5", true, nil},
			{"acme", "translations", "fp-a", "job-6", 26 * time.Hour, "", false, store.ErrIdempotencyKeyReused},
			{"acme", "translations", "fp-c", "job-6", 26 * time.Hour, "job-5", false, nil},
			// A key without a fingerprint (claimed before they were
			// recorded) matches any request.
			{"initech", "translations", "", "job-7", 0, "job-7", true, nil},
			{"initech", "translations", "fp-d", "job-8", time.Hour, "job-7", false, nil},
		} {
			id, claimed, err := s.Jobs.ClaimIdempotencyKey(ctx, store.IdempotencyKey{Tenant: c.tenant, Service: c.service, Key: "k1",
				Fingerprint: c.fingerprint, JobID: c.jobID, CreatedAt: now.Add(c.after)}, 24*time.Hour)
			if c.wantErr != nil {
				require.ErrorIs(t, err, c.wantErr, "claim %d", i)
			} else {
				require.NoError(t, err, "claim %d", i)
			}
			require.Equal(t, c.wantClaimed, claimed, "claim %d", i)
			require.Equal(t, c.wantID, id, "claim %d", i)
		}
	})
}

// TestIdempotencyKeyScopeMigration puts idempotency_keys back as it was
// per (tenant, key), writes keys there, and migrates: each key is scoped to
// its job's service and matches any request until it expires.
func TestIdempotencyKeyScopeMigration(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		now := time.Now().UTC().Truncate(time.Millisecond)
		claim := func(service, key, jobID string) (string, bool, error) {
			return s.Jobs.ClaimIdempotencyKey(ctx, store.IdempotencyKey{Tenant: "acme", Service: service, Key: key,
				Fingerprint: "fp", JobID: jobID, CreatedAt: now.Add(time.Minute)}, 24*time.Hour)
		}
		// Keys of two services, as the migration's rollback leaves them.
		_, _, err := claim("llm-tasks", "gone", "job-gone")
		require.NoError(t, err)
		_, _, err = claim("translations", "gone", "job-gone-too")
		require.NoError(t, err)
		require.NoError(t, s.RollbackMigration(ctx, "202611230001_idempotency_key_scope"))
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM idempotency_keys").Scan(&n))
		require.Equal(t, 1, n, "one key per (tenant, key) before the migration")

		job := newJob()
		job.Service = "llm-tasks"
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		insert := "INSERT INTO idempotency_keys (tenant, key, job_id, created_at) VALUES (?, ?, ?, ?)"
		if s.Dialect() == "postgres" {
			insert = "INSERT INTO idempotency_keys (tenant, key, job_id, created_at) VALUES ($1, $2, $3, $4)"
		}
		_, err = db.Exec(insert, "acme", "recorded", job.ID, now)
		require.NoError(t, err)
		// Claimed by a request that died before it recorded its job.
		_, err = db.Exec(insert, "acme", "unrecorded", "job-never-recorded", now)
		require.NoError(t, err)

		require.NoError(t, s.Migrate(ctx))

		// The key stands for its job on the job's service, whatever the
		// request (it has no fingerprint) ...
		id, claimed, err := claim("llm-tasks", "recorded", "job-new")
		require.NoError(t, err)
		require.False(t, claimed)
		require.Equal(t, job.ID, id)
		// ... and on no other service.
		id, claimed, err = claim("translations", "recorded", "job-translation")
		require.NoError(t, err)
		require.True(t, claimed)
		require.Equal(t, "job-translation", id)
		// A key whose job was never recorded is free.
		id, claimed, err = claim("llm-tasks", "unrecorded", "job-retry")
		require.NoError(t, err)
		require.True(t, claimed)
		require.Equal(t, "job-retry", id)

		// The previous release, still running during a rolling deploy,
		// inserts keys the old way; that must keep working.
		_, err = db.Exec(insert, "acme", "old-binary", job.ID, now)
		require.NoError(t, err)
	})
}

func TestMigrateIsIdempotent(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		require.NoError(t, s.Migrate(ctx))
	})
}

func TestOpenRejectsUnknownURL(t *testing.T) {
	t.Parallel()
	_, err := store.Open(context.Background(), "mysql://root:secret@localhost/db")
	require.ErrorContains(t, err, "use postgres://")
	require.NotContains(t, err.Error(), "secret")
}

func TestSQLiteDoesWithoutTheSingleFilterListIndexes(t *testing.T) {
	eachStoreDB(t, func(_ context.Context, t *testing.T, s *store.Store, db *sql.DB) {
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

		kept := []string{"idx_jobs_created", "idx_jobs_tenant_created", "idx_jobs_user_tenant_created",
			"idx_jobs_tenant_completed", "idx_jobs_tenant_results_kept", "idx_jobs_batch",
			"idx_jobs_workflow_closed", // the reconciled jobs' (partial: WORKFLOW_CLOSED only)
			"idx_jobs_user_in_flight"}  // an API key's jobs in flight (partial: pending and processing)
		singleFilter := []string{
			"idx_jobs_tenant_status_created", "idx_jobs_tenant_service_created", "idx_jobs_tenant_provider_created",
			"idx_jobs_status_created", "idx_jobs_service_created", "idx_jobs_provider_created",
			"idx_jobs_tenant_error_created", "idx_jobs_tenant_application_created", "idx_jobs_tenant_custom_created", // partial: jobs that have one
		}
		want := append(kept, singleFilter...)
		if s.Dialect() == "sqlite" {
			want = kept
		}
		require.ElementsMatch(t, want, names)
	})
}

// A session the client gave up on mid-transaction is ended by the server.
func TestPostgresSessionsEndIdleTransactions(t *testing.T) {
	t.Parallel()
	s, err := store.Open(t.Context(), storetest.FreshPostgresURL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	timeout, err := s.Setting(t.Context(), "idle_in_transaction_session_timeout")
	require.NoError(t, err)
	require.Equal(t, "1min", timeout)
}

// SetMaxConns bounds PostgreSQL's connections; SQLite keeps its one.
func TestSetMaxConns(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		want := store.DefaultMaxConns
		if s.Dialect() == "sqlite" {
			want = 1
		}
		require.Equal(t, want, s.MaxOpenConns())
		s.SetMaxConns(4)
		if s.Dialect() == "postgres" {
			want = 4
		}
		require.Equal(t, want, s.MaxOpenConns())
	})
}

// On PostgreSQL an unsynced write commits without waiting for the disk,
// and only that transaction: the connection goes back to the pool synced.
func TestUnsyncedWritesAreThoseTransactionsAlone(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, storetest.FreshPostgresURL(t))
	s.SetMaxConns(1) // every statement runs on the same connection
	before, err := s.SynchronousCommit(t.Context())
	require.NoError(t, err)
	require.NotEqual(t, "off", before, "the server's default waits for the disk")
	inside, err := s.SynchronousCommitWhereUnsynced(t.Context())
	require.NoError(t, err)
	require.Equal(t, "off", inside)
	after, err := s.SynchronousCommit(t.Context())
	require.NoError(t, err)
	require.Equal(t, before, after, "the statement's alone")

	// A claim of starts and a decision's reservation, which carry the
	// condition, relax their own commits alone.
	job := newJob()
	_, err = s.Jobs.CreateJob(t.Context(), job, &store.JobStart{Input: `{}`, NextAttemptAt: job.CreatedAt})
	require.NoError(t, err)
	claimed, err := s.Jobs.ClaimJobStarts(t.Context(), time.Now(), time.Minute, 1)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	fits, err := s.Routing.ReserveRateOnce(t.Context(), store.DecisionKey{JobID: job.ID, Attempt: 1}, "p", jobs.LLMTasks, 10, 0, time.Now())
	require.NoError(t, err)
	require.True(t, fits)
	after, err = s.SynchronousCommit(t.Context())
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// A projection with an event on PostgreSQL is one statement; one that
// waited for another write of the job, which took the next event number
// meanwhile, is made again by the transaction, not failed.
func TestProjectionInOneStatement(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, storetest.FreshPostgresURL(t))
	ctx := t.Context()

	job := newJob()
	job.Status, job.Revision = jobs.StatusProcessing, 1
	require.NoError(t, s.Jobs.InsertJob(ctx, job))
	done := *job
	now := time.Now().UTC()
	done.Status, done.Revision, done.Progress, done.Result, done.CompletedAt = jobs.StatusCompleted, 2, 100, `{"text":"hi"}`, &now
	entry := &store.UsageEntry{JobID: job.ID, Attempt: 1, Tenant: job.Tenant, Service: job.Service, Provider: "sandbox",
		Unit: "minute", Quantity: 1, Native: `{}`, Currency: "USD", CostNanos: 10, BilledAt: now, Unbudgeted: true}
	wrote, err := s.ProjectInOneStatement(ctx, &done, entry)
	require.NoError(t, err)
	require.True(t, wrote, "the row matched")
	again := done
	wrote, err = s.ProjectInOneStatement(ctx, &again, entry)
	require.NoError(t, err)
	require.False(t, wrote, "the same revision again: the transaction decides")
	events, err := s.Jobs.JobEvents(ctx, job.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, events, 1)
	entries, err := s.Usage.UsageEntries(ctx, job.ID)
	require.NoError(t, err)
	require.Len(t, entries, 1)

	// Another write holds the row and numbers its event first.
	other := newJob()
	other.Status, other.Revision = jobs.StatusProcessing, 1
	require.NoError(t, s.Jobs.InsertJob(ctx, other))
	commit, err := s.HoldProgress(ctx, other.ID, 50)
	require.NoError(t, err)
	saved := make(chan error, 1)
	finished := *other
	finished.Status, finished.Revision, finished.Progress, finished.CompletedAt = jobs.StatusCompleted, 2, 100, &now
	go func() { saved <- s.Jobs.SaveJob(ctx, &finished) }()
	require.Eventually(t, func() bool {
		n, err := s.StatementsWaitingForLocks(ctx, "WITH updated AS")
		return err == nil && n > 0
	}, 10*time.Second, 10*time.Millisecond, "the projection waits for the row")
	require.NoError(t, commit())
	require.NoError(t, <-saved)
	events, err = s.Jobs.JobEvents(ctx, other.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, events, 2)
	require.Equal(t, jobs.EventProgress, events[0].Kind)
	require.Equal(t, jobs.EventCompleted, events[1].Kind)
	got, err := s.Jobs.GetJob(ctx, other.ID)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusCompleted, got.Status)
}
