package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
)

func TestDeleteIdempotencyKeysBeforeKeepsLiveKeys(t *testing.T) {
	store.SetIdempotencyDeleteBatch(3) // several batches for 7 expired keys
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		claim := func(key string, at time.Time) {
			_, claimed, err := s.Jobs.ClaimIdempotencyKey(ctx, store.IdempotencyKey{Tenant: "acme", Service: "llm-tasks", Key: key,
				Fingerprint: "f", JobID: "job-" + key, CreatedAt: at}, 24*time.Hour)
			require.NoError(t, err)
			require.True(t, claimed)
		}
		for i := range 7 {
			claim(fmt.Sprintf("old-%d", i), now.Add(-25*time.Hour-time.Duration(i)*time.Minute))
		}
		claim("fresh", now.Add(-time.Hour))

		n, err := s.Jobs.DeleteIdempotencyKeysBefore(ctx, now.Add(-24*time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 7, n)

		// The live key still stands for its job; an expired one is free.
		id, claimed, err := s.Jobs.ClaimIdempotencyKey(ctx, store.IdempotencyKey{Tenant: "acme", Service: "llm-tasks", Key: "fresh",
			Fingerprint: "f", JobID: "job-other", CreatedAt: now}, 24*time.Hour)
		require.NoError(t, err)
		require.False(t, claimed)
		require.Equal(t, "job-fresh", id)
		n, err = s.Jobs.DeleteIdempotencyKeysBefore(ctx, now.Add(-24*time.Hour))
		require.NoError(t, err)
		require.Zero(t, n)
	})
}
