package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// finishedJob is a job of tenant that finished with status at completed.
func finishedJob(tenant string, status jobs.Status, completed time.Time) *jobs.Record {
	job := newJob()
	job.Tenant, job.Status, job.Revision = tenant, status, 3
	at := completed.UTC().Truncate(time.Microsecond)
	job.CompletedAt = &at
	if status == jobs.StatusCompleted {
		job.Result, job.ResultFile = `{"text":"secret"}`, "results/"+job.ID+"/transcript.srt"
	}
	return job
}

func TestRetentionCutoffsPerTenantAndDefault(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Now().UTC().Truncate(time.Second)
		minute, twoMinutes, zero := time.Minute, 2*time.Minute, time.Duration(0)
		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: "short", Retention: store.Retention{Results: &minute, Jobs: &twoMinutes}}))
		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: "forever", Retention: store.Retention{Results: &zero, Jobs: &zero}}))
		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: "plain"})) // the defaults
		for _, tenant := range []string{"short", "forever", "plain", "norecord"} {
			require.NoError(t, s.Jobs.InsertJob(ctx, finishedJob(tenant, jobs.StatusCompleted, now)))
		}
		pending := newJob()
		pending.Tenant = "unfinished"
		require.NoError(t, s.Jobs.InsertJob(ctx, pending))

		cutoffs, err := s.Housekeeping.RetentionCutoffs(ctx, store.RetentionDefaults{Results: time.Hour}, now)
		require.NoError(t, err)
		require.Equal(t, []store.RetentionCutoff{
			{Tenant: "norecord", Results: now.Add(-time.Hour)},
			{Tenant: "plain", Results: now.Add(-time.Hour)},
			{Tenant: "short", Results: now.Add(-time.Minute), Jobs: now.Add(-2 * time.Minute)},
		}, cutoffs, "forever keeps all; unfinished has nothing finished")

		cutoffs, err = s.Housekeeping.RetentionCutoffs(ctx, store.RetentionDefaults{}, now)
		require.NoError(t, err)
		require.Equal(t, []store.RetentionCutoff{{Tenant: "short", Results: now.Add(-time.Minute), Jobs: now.Add(-2 * time.Minute)}}, cutoffs)
	})
}

func TestRetentionFindsExpiredResultsAndJobs(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Now().UTC()
		old := finishedJob("acme", jobs.StatusCompleted, now.Add(-3*time.Hour))
		failed := finishedJob("acme", jobs.StatusFailed, now.Add(-2*time.Hour))
		recent := finishedJob("acme", jobs.StatusCompleted, now.Add(-time.Minute))
		other := finishedJob("beta", jobs.StatusCompleted, now.Add(-3*time.Hour))
		running := newJob()
		running.Status = jobs.StatusProcessing
		for _, j := range []*jobs.Record{old, failed, recent, other, running} {
			require.NoError(t, s.Jobs.InsertJob(ctx, j))
		}
		cutoff := now.Add(-time.Hour)

		got, err := s.Housekeeping.ExpiredResults(ctx, "acme", cutoff, 10)
		require.NoError(t, err)
		require.Equal(t, []string{old.ID, failed.ID}, jobIDs(got), "oldest first, this tenant's only")
		require.Equal(t, old.Revision, got[0].Revision)
		require.Equal(t, old.ResultFile, got[0].ResultFile)
		got, err = s.Housekeeping.ExpiredResults(ctx, "acme", cutoff, 1)
		require.NoError(t, err)
		require.Equal(t, []string{old.ID}, jobIDs(got), "a batch")

		erased, err := s.Housekeeping.ExpireResult(ctx, old.ID, old.Revision+1, now)
		require.NoError(t, err)
		require.False(t, erased, "the job changed since it was read")
		erased, err = s.Housekeeping.ExpireResult(ctx, old.ID, old.Revision, now)
		require.NoError(t, err)
		require.True(t, erased)
		erased, err = s.Housekeeping.ExpireResult(ctx, old.ID, old.Revision, now)
		require.NoError(t, err)
		require.False(t, erased, "erased already")

		job, err := s.Jobs.GetJob(ctx, old.ID)
		require.NoError(t, err)
		require.Empty(t, job.Result)
		require.Empty(t, job.ResultFile)
		require.Equal(t, jobs.StatusCompleted, job.Status, "the status stays")
		require.Equal(t, old.Input, job.Input, "the input stays until the job goes")
		require.NotNil(t, job.ResultExpiredAt)
		got, err = s.Housekeeping.ExpiredResults(ctx, "acme", cutoff, 10)
		require.NoError(t, err)
		require.Equal(t, []string{failed.ID}, jobIDs(got))

		// A late write of the same finish does not bring the result back.
		late := *old
		late.Revision++
		require.NoError(t, s.Jobs.SaveJob(ctx, &late))
		job, err = s.Jobs.GetJob(ctx, old.ID)
		require.NoError(t, err)
		require.Empty(t, job.Result)
		require.NotNil(t, job.ResultExpiredAt)
		// A retry's run, which finishes later, does.
		rerun := *old
		rerun.Revision += 5
		again := now.Truncate(time.Microsecond)
		rerun.CompletedAt = &again
		require.NoError(t, s.Jobs.SaveJob(ctx, &rerun))
		job, err = s.Jobs.GetJob(ctx, old.ID)
		require.NoError(t, err)
		require.Equal(t, old.Result, job.Result)
		require.Nil(t, job.ResultExpiredAt)

		gone, err := s.Housekeeping.ExpiredJobs(ctx, "acme", now.Add(-90*time.Minute), 10)
		require.NoError(t, err)
		require.Equal(t, []string{failed.ID}, jobIDs(gone), "by completed_at, erased or not")
		gone, err = s.Housekeeping.ExpiredJobs(ctx, "beta", cutoff, 10)
		require.NoError(t, err)
		require.Equal(t, []string{other.ID}, jobIDs(gone))
	})
}

// The job retention migration rolls back and applies again; jobs keep
// their results.
func TestRetentionMigration(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		job := finishedJob("acme", jobs.StatusCompleted, time.Now())
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		require.NoError(t, s.RollbackMigration(ctx, "202611300001_job_retention"))
		require.NoError(t, s.Migrate(ctx))
		got, err := s.Jobs.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, job.Result, got.Result)
		require.Nil(t, got.ResultExpiredAt)
	})
}
