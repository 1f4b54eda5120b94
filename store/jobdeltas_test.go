package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

func TestJobDeltasAreNumberedReadInOrderAndSwept(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		job, other := newJob(), newJob()
		for _, text := range []string{"Hel", "lo", " world"} {
			require.NoError(t, s.Jobs.AppendJobDelta(ctx, store.JobDelta{JobID: job.ID, CallID: "call-1", Provider: "alpha", Text: text}))
		}
		require.NoError(t, s.Jobs.AppendJobDelta(ctx, store.JobDelta{JobID: other.ID, CallID: "call-1", Provider: "alpha", Text: "x"}))
		require.NoError(t, s.Jobs.AppendJobDelta(ctx, store.JobDelta{JobID: job.ID, CallID: "call-2", Provider: "beta", Text: "Hi"}))

		all, err := s.Jobs.JobDeltas(ctx, job.ID, 0, 100)
		require.NoError(t, err)
		require.Len(t, all, 4)
		for i, d := range all {
			require.Equal(t, i+1, d.Seq, "numbered per job from 1")
		}
		require.Equal(t, []string{"Hel", "lo", " world", "Hi"}, []string{all[0].Text, all[1].Text, all[2].Text, all[3].Text})
		require.Equal(t, "call-2", all[3].CallID)
		require.Equal(t, "beta", all[3].Provider)

		after, err := s.Jobs.JobDeltas(ctx, job.ID, 2, 1)
		require.NoError(t, err)
		require.Len(t, after, 1)
		require.Equal(t, " world", after[0].Text, "after a seq, with a limit")

		// A clock east of UTC names the same instant.
		east := time.FixedZone("UTC+3", 3*60*60)
		n, err := s.Jobs.DeleteJobDeltasBefore(ctx, time.Now().In(east).Add(-time.Minute))
		require.NoError(t, err)
		require.Zero(t, n, "recent deltas stay")

		// A job in flight keeps its deltas, however old.
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		n, err = s.Jobs.DeleteJobDeltasBefore(ctx, time.Now().In(east).Add(time.Minute))
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "only the deltas of the job the store does not hold in flight")
		kept, err := s.Jobs.JobDeltas(ctx, job.ID, 0, 100)
		require.NoError(t, err)
		require.Len(t, kept, 4)

		finished := *job
		now := time.Now().UTC()
		finished.Status, finished.Revision, finished.CompletedAt = jobs.StatusFailed, 1, &now
		finished.ErrorCode, finished.ErrorMessage = jobs.CodeProvidersExhausted, "every eligible provider failed"
		require.NoError(t, s.Jobs.SaveJob(ctx, &finished))
		n, err = s.Jobs.DeleteJobDeltasBefore(ctx, time.Now().Add(time.Minute))
		require.NoError(t, err)
		require.EqualValues(t, 4, n, "once it ended")
		left, err := s.Jobs.JobDeltas(ctx, job.ID, 0, 100)
		require.NoError(t, err)
		require.Empty(t, left)
	})
}
