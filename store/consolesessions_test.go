package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestConsoleSessions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		live := &store.ConsoleSession{ID: "aa01", Tenant: "acme", Credential: []byte("sealed"), CSRFToken: "csrf1",
			CreatedAt: now, ExpiresAt: now.Add(12 * time.Hour)}
		old := &store.ConsoleSession{ID: "bb02", Tenant: "acme", Credential: []byte("sealed2"), CSRFToken: "csrf2",
			CreatedAt: now.Add(-13 * time.Hour), ExpiresAt: now.Add(-time.Hour)}
		require.NoError(t, s.APIKeys.CreateConsoleSession(ctx, live))
		require.NoError(t, s.APIKeys.CreateConsoleSession(ctx, old))

		got, err := s.APIKeys.ConsoleSession(ctx, "aa01", now)
		require.NoError(t, err)
		require.Equal(t, "acme", got.Tenant)
		require.Equal(t, []byte("sealed"), got.Credential)
		require.Equal(t, "csrf1", got.CSRFToken)
		require.True(t, live.ExpiresAt.Equal(got.ExpiresAt))

		_, err = s.APIKeys.ConsoleSession(ctx, "bb02", now)
		require.ErrorIs(t, err, store.ErrNotFound, "expired")
		_, err = s.APIKeys.ConsoleSession(ctx, "aa01", now.Add(12*time.Hour))
		require.ErrorIs(t, err, store.ErrNotFound, "expired at its expiry")
		_, err = s.APIKeys.ConsoleSession(ctx, "cc03", now)
		require.ErrorIs(t, err, store.ErrNotFound)

		n, err := s.APIKeys.DeleteExpiredConsoleSessions(ctx, now)
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "only the expired one")
		_, err = s.APIKeys.ConsoleSession(ctx, "aa01", now)
		require.NoError(t, err)

		require.NoError(t, s.APIKeys.DeleteConsoleSession(ctx, "aa01"))
		_, err = s.APIKeys.ConsoleSession(ctx, "aa01", now)
		require.ErrorIs(t, err, store.ErrNotFound, "signed out")
		require.NoError(t, s.APIKeys.DeleteConsoleSession(ctx, "aa01"), "twice is no error")
	})
}
