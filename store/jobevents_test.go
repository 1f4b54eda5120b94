package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// eventsOf lists job id's recorded events as kind@progress/status.
func eventsOf(ctx context.Context, t *testing.T, s *store.Store, id string, after int) []string {
	t.Helper()
	evs, err := s.Jobs.JobEvents(ctx, id, after, 100)
	require.NoError(t, err)
	out := make([]string, len(evs))
	for i, e := range evs {
		require.Equal(t, after+i+1, e.Seq, "events are numbered from 1 without gaps")
		snap, err := e.Job()
		require.NoError(t, err)
		require.Equal(t, id, snap.ID)
		require.NotContains(t, e.Snapshot, "example.test", "an event keeps no documents")
		out[i] = fmt.Sprintf("%s@%s/%d", e.Kind, snap.Status, snap.Progress)
	}
	return out
}

func TestJobEventsFollowTheProjection(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		job := newJob()
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		require.Empty(t, eventsOf(ctx, t, s, job.ID, 0), "a pending job has no event")

		processing := *job
		now := time.Now().UTC()
		processing.Status, processing.Provider, processing.Revision, processing.ProcessedAt = jobs.StatusProcessing, "alpha", 1, &now
		processing.Routing = `{"provider_id":"alpha","reason":"explicit"}`
		require.NoError(t, s.Jobs.SaveJob(ctx, &processing))
		again := processing
		require.NoError(t, s.Jobs.SaveJob(ctx, &again), "a retried write")
		require.NoError(t, s.Jobs.UpdateProgress(ctx, job.ID, 40))
		require.NoError(t, s.Jobs.UpdateProgress(ctx, job.ID, 40), "a repeated progress")
		require.NoError(t, s.Jobs.UpdateProgress(ctx, job.ID, 30), "a lower progress")

		stale := processing
		stale.Revision = 0
		require.NoError(t, s.Jobs.SaveJob(ctx, &stale), "a stale write")

		completed := processing
		completed.Status, completed.Progress, completed.Revision, completed.CompletedAt = jobs.StatusCompleted, 100, 2, &now
		completed.Result = `{"text":"hi"}`
		require.NoError(t, s.Jobs.SaveJob(ctx, &completed))
		replay := completed
		require.NoError(t, s.Jobs.SaveJob(ctx, &replay), "a replayed finish")
		require.NoError(t, s.Jobs.UpdateProgress(ctx, job.ID, 50), "progress after the finish")

		require.Equal(t, []string{"progress@processing/0", "progress@processing/40", "completed@completed/100"},
			eventsOf(ctx, t, s, job.ID, 0))
		require.Equal(t, []string{"completed@completed/100"}, eventsOf(ctx, t, s, job.ID, 2))

		evs, err := s.Jobs.JobEvents(ctx, job.ID, 0, 100)
		require.NoError(t, err)
		snap, err := evs[1].Job()
		require.NoError(t, err)
		require.Equal(t, "alpha", snap.Provider, "a progress event carries the rest of the job")
		require.NotNil(t, snap.Routing)

		_, _, err = s.Jobs.DeleteJob(ctx, job.ID, "alice", time.Now())
		require.NoError(t, err)
		require.Empty(t, eventsOf(ctx, t, s, job.ID, 0), "a deleted job's events go with it")
	})
}

func TestJobEventsOfAFailedStartAndOfAServiceWithoutProgress(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		job := newJob()
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		require.NoError(t, s.Jobs.FailJobStart(ctx, job.ID, jobs.CodeNotStarted, "no start", time.Now()))
		require.NoError(t, s.Jobs.FailJobStart(ctx, job.ID, jobs.CodeNotStarted, "no start", time.Now()))
		require.Equal(t, []string{"failed@failed/0"}, eventsOf(ctx, t, s, job.ID, 0))

		llm := newJob()
		llm.Service = "llm-tasks"
		require.NoError(t, s.Jobs.InsertJob(ctx, llm))
		processing := *llm
		processing.Status, processing.Revision = jobs.StatusProcessing, 1
		require.NoError(t, s.Jobs.SaveJob(ctx, &processing))
		require.NoError(t, s.Jobs.UpdateProgress(ctx, llm.ID, 40))
		failed := processing
		failed.Status, failed.Revision, failed.ErrorCode, failed.ErrorMessage = jobs.StatusFailed, 2, jobs.CodeProvidersExhausted, "all failed"
		require.NoError(t, s.Jobs.SaveJob(ctx, &failed))
		require.Equal(t, []string{"failed@failed/0"}, eventsOf(ctx, t, s, llm.ID, 0), "llm-tasks send no progress events")
	})
}
