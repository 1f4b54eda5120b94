package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
)

func TestProviderCallbacksAreKeptPerAttemptUntilSwept(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

		_, ok, err := s.Jobs.ProviderCallback(ctx, jobID, 1)
		require.NoError(t, err)
		require.False(t, ok, "nothing posted yet")

		require.NoError(t, s.Jobs.SaveProviderCallback(ctx, jobID, 1, []byte(`{"first":true}`), at))
		require.NoError(t, s.Jobs.SaveProviderCallback(ctx, jobID, 2, []byte(`{"attempt":2}`), at))
		// The vendor delivers attempt 1 again: the later body wins.
		require.NoError(t, s.Jobs.SaveProviderCallback(ctx, jobID, 1, []byte(`{"again":true}`), at.Add(time.Minute)))

		body, ok, err := s.Jobs.ProviderCallback(ctx, jobID, 1)
		require.NoError(t, err)
		require.True(t, ok)
		require.JSONEq(t, `{"again":true}`, string(body))
		body, ok, err = s.Jobs.ProviderCallback(ctx, jobID, 2)
		require.NoError(t, err)
		require.True(t, ok)
		require.JSONEq(t, `{"attempt":2}`, string(body))

		// Unread posts are swept by age.
		require.NoError(t, s.Jobs.SaveProviderCallback(ctx, otherJobID, 1, []byte(`{}`), at.Add(-48*time.Hour)))
		removed, err := s.Jobs.DeleteProviderCallbacksBefore(ctx, at.Add(-24*time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 1, removed, "only the old post")
		_, ok, err = s.Jobs.ProviderCallback(ctx, otherJobID, 1)
		require.NoError(t, err)
		require.False(t, ok)

	})
}
