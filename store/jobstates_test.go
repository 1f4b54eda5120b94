package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

func TestJobStates(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		pending, processing := newJob(), newJob()
		processing.Status, processing.Progress = jobs.StatusProcessing, 40
		for _, j := range []*jobs.Record{pending, processing} {
			require.NoError(t, s.Jobs.SaveJob(ctx, j))
		}

		states, err := s.Jobs.JobStates(ctx, []string{pending.ID, processing.ID, otherJobID})
		require.NoError(t, err)
		require.Len(t, states, 2, "a job the store does not hold is absent")
		require.Equal(t, jobs.StatusPending, states[pending.ID].Status)
		require.Equal(t, pending.ID, states[pending.ID].ID)
		require.Equal(t, 40, states[processing.ID].Progress)
		require.WithinDuration(t, processing.UpdatedAt, states[processing.ID].UpdatedAt, time.Millisecond)

		require.NoError(t, s.Jobs.UpdateProgress(ctx, processing.ID, 70))
		states, err = s.Jobs.JobStates(ctx, []string{processing.ID})
		require.NoError(t, err)
		require.Equal(t, 70, states[processing.ID].Progress)
		require.True(t, states[processing.ID].UpdatedAt.After(processing.UpdatedAt))

		states, err = s.Jobs.JobStates(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, states)
	})
}
