package store_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

func TestDeleteJobLeavesATombstoneAndNoContent(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		job := newJob()
		job.Input = `{"type":"audio","url":"https://example.test/secret-words.wav"}`
		job.ClientMeta = `{"order":"secret-meta"}`
		start := &store.JobStart{Input: `{"job_id":"` + job.ID + `","input":"secret-words"}`, NextAttemptAt: time.Now()}
		created, err := s.Jobs.CreateJob(ctx, job, start)
		require.NoError(t, err)
		require.True(t, created)
		_, _, err = s.Jobs.ClaimIdempotencyKey(ctx, store.IdempotencyKey{Tenant: job.Tenant, Service: string(job.Service), Key: "k1", JobID: job.ID}, time.Hour)
		require.NoError(t, err)
		require.NoError(t, s.Jobs.SaveProviderCallback(ctx, job.ID, 1, []byte(`{"text":"secret-words"}`), time.Now()))
		require.NoError(t, s.Webhooks.RecordDelivery(ctx, &store.WebhookDelivery{JobID: job.ID, Event: "transcription.completed", MessageID: job.ID + "-1", Attempt: 1, AttemptedAt: time.Now()}))
		other := newJob()
		require.NoError(t, s.Jobs.InsertJob(ctx, other))

		at := time.Now()
		before, tomb, err := s.Jobs.DeleteJob(ctx, job.ID, "alice", at)
		require.NoError(t, err)
		require.Equal(t, job.Input, before.Input, "the job as it was, for the erasure")
		require.Equal(t, job.ID, tomb.ID)
		require.Equal(t, "alice", tomb.DeletedBy)

		_, err = s.Jobs.GetJob(ctx, job.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		got, err := s.Jobs.GetTombstone(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, job.Tenant, got.Tenant)
		require.Equal(t, job.Service, got.Service)
		require.Nil(t, got.ErasedAt)
		_, err = s.Jobs.GetJob(ctx, other.ID)
		require.NoError(t, err, "other jobs stay")

		for _, table := range []string{"job_starts", "provider_callbacks", "webhook_deliveries", "idempotency_keys"} {
			var n int
			require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+table+" WHERE job_id = '"+job.ID+"'").Scan(&n))
			require.Zero(t, n, table)
		}
		var hits int
		require.NoError(t, db.QueryRow(`SELECT (SELECT COUNT(*) FROM jobs WHERE input LIKE '%secret-words%' OR client_meta LIKE '%secret-meta%')
			+ (SELECT COUNT(*) FROM job_tombstones WHERE vendor_copies LIKE '%secret%')`).Scan(&hits))
		require.Zero(t, hits, "no row holds the job's content")

		_, _, err = s.Jobs.DeleteJob(ctx, job.ID, "alice", at)
		require.ErrorIs(t, err, store.ErrDeleted)
		_, _, err = s.Jobs.DeleteJob(ctx, "0190a0a0-0000-7000-8000-000000000000", "alice", at)
		require.ErrorIs(t, err, store.ErrNotFound)

		// A late projection write of the job's workflow does not bring it back.
		before.Revision = 99
		before.Status = jobs.StatusCompleted
		require.NoError(t, s.Jobs.SaveJob(ctx, before))
		_, err = s.Jobs.GetJob(ctx, job.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "a deleted job stays deleted")
		require.NoError(t, s.Jobs.InsertJob(ctx, before))
		_, err = s.Jobs.GetJob(ctx, job.ID)
		require.ErrorIs(t, err, store.ErrNotFound)

		tenant, err := s.Keys.JobTenant(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, job.Tenant, tenant, "the erasure's payloads stay in the tenant's scope")

		pending, err := s.Jobs.UnerasedTombstones(ctx, at.Add(time.Second), 10)
		require.NoError(t, err)
		require.Len(t, pending, 1)
		require.NoError(t, s.Jobs.FinishErasure(ctx, job.ID, []jobs.VendorCopy{{Provider: "assemblyai", Outcome: "purged"}}, time.Now()))
		pending, err = s.Jobs.UnerasedTombstones(ctx, at.Add(time.Second), 10)
		require.NoError(t, err)
		require.Empty(t, pending)
		got, err = s.Jobs.GetTombstone(ctx, job.ID)
		require.NoError(t, err)
		require.NotNil(t, got.ErasedAt)
		require.Equal(t, []jobs.VendorCopy{{Provider: "assemblyai", Outcome: "purged"}}, got.Document().Attributes.VendorCopies)

		listed, total, err := s.Jobs.ListJobs(ctx, store.JobFilter{Tenant: job.Tenant}, 0, 10)
		require.NoError(t, err)
		require.Len(t, listed, 1)
		require.Equal(t, other.ID, listed[0].ID)
		require.EqualValues(t, 1, total)
	})
}

// TestDeletedJobStaysDeletedUnderARacingWrite: a projection write that
// waits on the row while the job is being deleted does not bring it back
// once the deletion commits (PostgreSQL: the insert after the conflict
// vanished runs no BEFORE trigger again).
func TestDeletedJobStaysDeletedUnderARacingWrite(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		job := newJob()
		job.Revision = 1
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		// The deletion, by hand on a second connection, held open.
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		bind := func(q string) string { return q }
		if isPostgres(db) {
			bind = func(q string) string { return strings.ReplaceAll(strings.ReplaceAll(q, "?1", "$1"), "?2", "$2") }
			_, err = tx.Exec(bind("SELECT id FROM jobs WHERE id = ?1 FOR UPDATE"), job.ID)
			require.NoError(t, err)
		}
		_, err = tx.Exec(bind("INSERT INTO job_tombstones (id, tenant, service, created_at, deleted_at) VALUES (?1, 'acme', 'transcriptions', ?2, ?2)"), job.ID, time.Now().UTC())
		require.NoError(t, err)
		_, err = tx.Exec(bind("DELETE FROM jobs WHERE id = ?1"), job.ID)
		require.NoError(t, err)

		late := *job
		late.Revision, late.Status, late.Result = 2, jobs.StatusCompleted, `{"text":"secret-words"}`
		saved := make(chan error, 1)
		go func() { saved <- s.Jobs.SaveJob(ctx, &late) }()
		if isPostgres(db) {
			time.Sleep(300 * time.Millisecond) // the upsert waits on the row
		}
		require.NoError(t, tx.Commit())
		require.NoError(t, <-saved)
		_, err = s.Jobs.GetJob(ctx, job.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "the deleted job did not come back")
	})
}

func isPostgres(db *sql.DB) bool {
	_, ok := db.Driver().(interface {
		Open(string) (driver.Conn, error)
	})
	var v string
	return ok && db.QueryRow("SELECT version()").Scan(&v) == nil && strings.Contains(v, "PostgreSQL")
}

func TestDeleteJobIfLeavesAJobThatMovedOn(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		job := newJob()
		job.Revision = 3
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		_, _, err := s.Jobs.DeleteJobIf(ctx, job.ID, jobs.DeletedByRetention, time.Now(), 2)
		require.ErrorIs(t, err, store.ErrConflict, "a retry moved the job on since it was read")
		_, err = s.Jobs.GetJob(ctx, job.ID)
		require.NoError(t, err, "it stays")
		_, _, err = s.Jobs.DeleteJobIf(ctx, job.ID, jobs.DeletedByRetention, time.Now(), 3)
		require.NoError(t, err)
	})
}

func TestVendorPostAfterDeletionIsNotKept(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		job := newJob()
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		_, _, err := s.Jobs.DeleteJob(ctx, job.ID, "alice", time.Now())
		require.NoError(t, err)
		require.NoError(t, s.Jobs.SaveProviderCallback(ctx, job.ID, 1, []byte(`{"text":"secret-words"}`), time.Now()))
		_, ok, err := s.Jobs.ProviderCallback(ctx, job.ID, 1)
		require.NoError(t, err)
		require.False(t, ok, "a vendor's post about a deleted job is dropped")
	})
}
