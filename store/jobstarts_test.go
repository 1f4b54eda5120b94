package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

func TestCreateJobWritesTheJobAndItsStart(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		job := newJob()
		due := job.CreatedAt.Add(30 * time.Second)
		created, err := s.Jobs.CreateJob(ctx, job, &store.JobStart{Input: `{"JobID":"x"}`, Priority: 3, NextAttemptAt: due})
		require.NoError(t, err)
		require.True(t, created)

		got, err := s.Jobs.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusPending, got.Status)
		start, err := s.Jobs.GetJobStart(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, `{"JobID":"x"}`, start.Input)
		require.Equal(t, 3, start.Priority)
		require.Zero(t, start.Attempts)
		require.True(t, start.NextAttemptAt.Equal(due), "next_attempt_at %v, want %v", start.NextAttemptAt, due)

		// The same id again (a retried Idempotency-Key) writes nothing.
		require.NoError(t, s.Jobs.DeleteJobStarts(ctx, []string{job.ID}))
		dup := *job
		dup.Input = `{"other":true}`
		created, err = s.Jobs.CreateJob(ctx, &dup, &store.JobStart{Input: `{"JobID":"y"}`, NextAttemptAt: due})
		require.NoError(t, err)
		require.False(t, created)
		got, err = s.Jobs.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, job.Input, got.Input)
		_, err = s.Jobs.GetJobStart(ctx, job.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "no second start for an existing job")
	})
}

// acceptJobs records n pending jobs with their starts due now, as a create
// does, and returns their ids.
func acceptJobs(ctx context.Context, t *testing.T, s *store.Store, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		job := newJob()
		_, err := s.Jobs.CreateJob(ctx, job, &store.JobStart{Input: "{}", NextAttemptAt: job.CreatedAt})
		require.NoError(t, err)
		ids = append(ids, job.ID)
	}
	return ids
}

// DeleteJobStarts clears the starts asked for and no other; the sequence
// that once counted them is gone after migrating.
func TestDeleteJobStartsClearsThoseAsked(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		ids := acceptJobs(ctx, t, s, 3)
		require.NoError(t, s.Jobs.DeleteJobStarts(ctx, ids[:2]))
		_, err := s.Jobs.GetJobStart(ctx, ids[0])
		require.ErrorIs(t, err, store.ErrNotFound, "deleted")
		_, err = s.Jobs.GetJobStart(ctx, ids[2])
		require.NoError(t, err, "not asked for: kept")
		require.NoError(t, s.Jobs.DeleteJobStarts(ctx, ids[:2]), "deleting again is no error")
		if s.Dialect() == "postgres" {
			exists, err := s.SequenceExists(ctx, "job_starts_cleared")
			require.NoError(t, err)
			require.False(t, exists, "migration 202612061002 drops the sequence")
		}
	})
}

func TestUnstartedJobs(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		ids := acceptJobs(ctx, t, s, 3)
		require.NoError(t, s.Jobs.DeleteJobStarts(ctx, ids[1:2]))
		unstarted, err := s.Jobs.UnstartedJobs(ctx, append(ids, uuid.NewString()))
		require.NoError(t, err)
		require.Equal(t, map[string]bool{ids[0]: true, ids[2]: true}, unstarted, "started, and unknown, jobs are absent")
	})
}

func TestClaimJobStarts(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
		add := func(priority int, due time.Time) string {
			job := newJob()
			created, err := s.Jobs.CreateJob(ctx, job, &store.JobStart{Input: "{}", Priority: priority, NextAttemptAt: due})
			require.NoError(t, err)
			require.True(t, created)
			return job.ID
		}
		oldLow := add(5, now.Add(-time.Minute))
		high := add(1, now.Add(-time.Second))
		oldNormal := add(3, now.Add(-time.Minute))
		newNormal := add(3, now.Add(-time.Second))
		leased := add(1, now.Add(time.Second)) // another dispatcher holds it

		claimed, err := s.Jobs.ClaimJobStarts(ctx, now, time.Minute, 3)
		require.NoError(t, err)
		require.Equal(t, []string{high, oldNormal, newNormal}, startIDs(claimed), "priority first, then the longest due")
		for _, c := range claimed {
			require.True(t, c.NextAttemptAt.Equal(now.Add(time.Minute)))
		}

		claimed, err = s.Jobs.ClaimJobStarts(ctx, now, time.Minute, 10)
		require.NoError(t, err)
		require.Equal(t, []string{oldLow}, startIDs(claimed), "leased starts are not taken again")

		// A lease runs out: the start is due again.
		claimed, err = s.Jobs.ClaimJobStarts(ctx, now.Add(2*time.Second), time.Minute, 10)
		require.NoError(t, err)
		require.Equal(t, []string{leased}, startIDs(claimed))
		claimed, err = s.Jobs.ClaimJobStarts(ctx, now.Add(time.Minute), time.Minute, 10)
		require.NoError(t, err)
		require.Equal(t, []string{high, oldNormal, newNormal, oldLow}, startIDs(claimed))

		// Released starts are due at once; retried ones when they say.
		require.NoError(t, s.Jobs.ReleaseJobStarts(ctx, []string{newNormal}, now.Add(time.Minute)))
		require.NoError(t, s.Jobs.RetryJobStart(ctx, oldLow, now.Add(time.Minute+10*time.Second)))
		claimed, err = s.Jobs.ClaimJobStarts(ctx, now.Add(time.Minute+5*time.Second), time.Minute, 10)
		require.NoError(t, err)
		require.Equal(t, []string{leased, newNormal}, startIDs(claimed), "leased's second lease ran out too")
		retried, err := s.Jobs.GetJobStart(ctx, oldLow)
		require.NoError(t, err)
		require.Equal(t, 1, retried.Attempts)

		require.NoError(t, s.Jobs.DeleteJobStarts(ctx, []string{high, oldNormal}))
		_, err = s.Jobs.GetJobStart(ctx, high)
		require.ErrorIs(t, err, store.ErrNotFound)
		claimed, err = s.Jobs.ClaimJobStarts(ctx, now.Add(time.Hour), time.Minute, 10)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{leased, newNormal, oldLow}, startIDs(claimed))
	})
}

func TestConcurrentClaimsTakeEachStartOnce(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Now().UTC()
		const starts = 60
		for range starts {
			job := newJob()
			_, err := s.Jobs.CreateJob(ctx, job, &store.JobStart{Input: "{}", Priority: 3, NextAttemptAt: now.Add(-time.Second)})
			require.NoError(t, err)
		}
		var (
			mu    sync.Mutex
			taken = map[string]int{}
			wg    sync.WaitGroup
		)
		for range 6 {
			wg.Go(func() {
				for {
					claimed, err := s.Jobs.ClaimJobStarts(ctx, now, time.Minute, 4)
					if !assertNoError(t, err) || len(claimed) == 0 {
						return
					}
					mu.Lock()
					for _, c := range claimed {
						taken[c.JobID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Len(t, taken, starts)
		for id, n := range taken {
			require.Equal(t, 1, n, "start %s taken %d times", id, n)
		}
	})
}

func startIDs(starts []store.JobStart) []string {
	ids := make([]string, len(starts))
	for i, s := range starts {
		ids[i] = s.JobID
	}
	return ids
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

func TestFailJobStart(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		at := time.Date(2026, 11, 21, 12, 0, 0, 123456000, time.UTC)
		pending := newJob()
		_, err := s.Jobs.CreateJob(ctx, pending, &store.JobStart{Input: "{}", Priority: 3, NextAttemptAt: at})
		require.NoError(t, err)
		require.NoError(t, s.Jobs.FailJobStart(ctx, pending.ID, "JOB_NOT_STARTED", "refused", at))

		got, err := s.Jobs.GetJob(ctx, pending.ID)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusFailed, got.Status)
		require.Equal(t, "JOB_NOT_STARTED", got.ErrorCode)
		require.Equal(t, "refused", got.ErrorMessage)
		require.NotNil(t, got.CompletedAt)
		require.True(t, got.CompletedAt.Equal(at), "completed_at %v, want %v", got.CompletedAt, at)
		require.Nil(t, got.ProcessedAt)
		require.Equal(t, 1, got.Revision, "a write of its own: an older one cannot roll it back")
		_, err = s.Jobs.GetJobStart(ctx, pending.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "the start is gone")
		// A stale projection write (the revision the job had) is ignored.
		stale := *pending
		stale.Status = jobs.StatusPending
		require.NoError(t, s.Jobs.SaveJob(ctx, &stale))
		got, err = s.Jobs.GetJob(ctx, pending.ID)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusFailed, got.Status)

		// A job its workflow has taken over is left alone; its start goes.
		running := newJob()
		_, err = s.Jobs.CreateJob(ctx, running, &store.JobStart{Input: "{}", Priority: 3, NextAttemptAt: at})
		require.NoError(t, err)
		processing := *running
		processing.Status, processing.Provider, processing.Revision = jobs.StatusProcessing, "alpha", 1
		require.NoError(t, s.Jobs.SaveJob(ctx, &processing))
		require.NoError(t, s.Jobs.FailJobStart(ctx, running.ID, "JOB_NOT_STARTED", "refused", at))
		got, err = s.Jobs.GetJob(ctx, running.ID)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusProcessing, got.Status)
		require.Empty(t, got.ErrorCode)
		require.Nil(t, got.CompletedAt)
		_, err = s.Jobs.GetJobStart(ctx, running.ID)
		require.ErrorIs(t, err, store.ErrNotFound)

		n, err := s.Jobs.CountJobStarts(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

func TestClaimJobStartsTakesTenantsInTurns(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Now().UTC()
		add := func(tenant string, priority int) string {
			job := newJob()
			job.Tenant = tenant
			created, err := s.Jobs.CreateJob(ctx, job, &store.JobStart{Input: "{}", Priority: priority, NextAttemptAt: now.Add(-time.Second)})
			require.NoError(t, err)
			require.True(t, created)
			return job.ID
		}
		flood, few := "flood-"+uuid.NewString()[:6], "few-"+uuid.NewString()[:6]
		var a []string
		for range 5 {
			a = append(a, add(flood, 3))
		}
		b1, b2 := add(few, 3), add(few, 1)

		claimed, err := s.Jobs.ClaimJobStarts(ctx, now, time.Minute, 4)
		require.NoError(t, err)
		require.Equal(t, []string{b2, a[0], a[1], b1}, startIDs(claimed),
			"each tenant's most urgent first, then each one's second: the later tenant does not wait behind the backlog")
		claimed, err = s.Jobs.ClaimJobStarts(ctx, now, time.Minute, 10)
		require.NoError(t, err)
		require.Equal(t, a[2:], startIDs(claimed))
	})
}

func TestConcurrentClaimsTakeDifferentStarts(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Now().UTC()
		for i := range 200 {
			job := newJob()
			job.Tenant = fmt.Sprintf("tenant-%d", i%3)
			_, err := s.Jobs.CreateJob(ctx, job, &store.JobStart{Input: "{}", Priority: 3, NextAttemptAt: now.Add(-time.Second)})
			require.NoError(t, err)
		}
		var (
			mu   sync.Mutex
			seen = map[string]bool{}
			wg   sync.WaitGroup
		)
		for range 4 {
			wg.Go(func() {
				claimed, err := s.Jobs.ClaimJobStarts(ctx, now, time.Minute, 20)
				assert.NoError(t, err)
				assert.Len(t, claimed, 20, "a concurrent claim takes the next starts, not nothing")
				mu.Lock()
				defer mu.Unlock()
				for _, c := range claimed {
					assert.False(t, seen[c.JobID], "claimed twice")
					seen[c.JobID] = true
				}
			})
		}
		wg.Wait()
		require.Len(t, seen, 80)
	})
}
