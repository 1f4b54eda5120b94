package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestAPIKeysByTenant(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		app := "billing"
		older := &store.APIKey{ID: "aaaaaaaaaaaaaaaa", Tenant: "acme", Name: "older", Scopes: []string{"llm-tasks:read"},
			SecretHash: []byte("h1"), CreatedBy: "alice", CreatedAt: now.Add(-time.Minute)}
		newer := &store.APIKey{ID: "bbbbbbbbbbbbbbbb", Tenant: "acme", Name: "newer", Scopes: []string{"keys:read", "jobs:write"},
			Application: &app, SecretHash: []byte("h2"), CreatedBy: "key:aaaaaaaaaaaaaaaa", CreatedAt: now}
		other := &store.APIKey{ID: "cccccccccccccccc", Tenant: "globex", Name: "theirs", Scopes: []string{"keys:read"},
			SecretHash: []byte("h3"), CreatedBy: "bob", CreatedAt: now}
		for _, k := range []*store.APIKey{older, newer, other} {
			require.NoError(t, s.APIKeys.CreateAPIKey(ctx, k))
		}

		list, err := s.APIKeys.ListAPIKeys(ctx, "acme")
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, []string{newer.ID, older.ID}, []string{list[0].ID, list[1].ID}, "newest first")
		require.Equal(t, []string{"keys:read", "jobs:write"}, list[0].Scopes)
		require.Equal(t, "billing", *list[0].Application)

		_, err = s.APIKeys.TenantAPIKey(ctx, "acme", other.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "another tenant's key")
		got, err := s.APIKeys.APIKey(ctx, other.ID)
		require.NoError(t, err, "found by id alone, to check a request's key")
		require.Equal(t, "globex", got.Tenant)

		require.ErrorIs(t, s.APIKeys.RevokeAPIKey(ctx, "globex", older.ID, now), store.ErrNotFound)
		require.NoError(t, s.APIKeys.RevokeAPIKey(ctx, "acme", older.ID, now))
		require.ErrorIs(t, s.APIKeys.RevokeAPIKey(ctx, "acme", older.ID, now), store.ErrNotFound, "revoked once")
		list, err = s.APIKeys.ListAPIKeys(ctx, "acme")
		require.NoError(t, err)
		require.Len(t, list, 1)
		revoked, err := s.APIKeys.APIKey(ctx, older.ID)
		require.NoError(t, err)
		require.NotNil(t, revoked.RevokedAt)
		_, err = s.APIKeys.RotateAPIKey(ctx, "acme", older.ID, []byte("x"), nil)
		require.ErrorIs(t, err, store.ErrNotFound, "a revoked key is not rotated")

		until := now.Add(time.Hour)
		rotated, err := s.APIKeys.RotateAPIKey(ctx, "acme", newer.ID, []byte("h2b"), &until)
		require.NoError(t, err)
		require.Equal(t, []byte("h2b"), rotated.SecretHash)
		require.Equal(t, []byte("h2"), rotated.PreviousSecretHash)
		read, err := s.APIKeys.APIKey(ctx, newer.ID)
		require.NoError(t, err)
		require.Equal(t, []byte("h2b"), read.SecretHash)
		require.Equal(t, []byte("h2"), read.PreviousSecretHash)
		require.True(t, until.Equal(*read.PreviousExpiresAt))
		_, err = s.APIKeys.RotateAPIKey(ctx, "acme", newer.ID, []byte("h2c"), nil)
		require.NoError(t, err)
		read, err = s.APIKeys.APIKey(ctx, newer.ID)
		require.NoError(t, err)
		require.Empty(t, read.PreviousSecretHash, "no grace: the previous secret is gone")
		require.Nil(t, read.PreviousExpiresAt)

		require.NoError(t, s.APIKeys.TouchAPIKey(ctx, newer.ID, now))
		require.NoError(t, s.APIKeys.TouchAPIKey(ctx, newer.ID, now.Add(30*time.Second)))
		read, err = s.APIKeys.APIKey(ctx, newer.ID)
		require.NoError(t, err)
		require.True(t, now.Equal(*read.LastUsedAt), "a use within the minute is not written")
		require.NoError(t, s.APIKeys.TouchAPIKey(ctx, newer.ID, now.Add(2*time.Minute)))
		read, err = s.APIKeys.APIKey(ctx, newer.ID)
		require.NoError(t, err)
		require.True(t, now.Add(2*time.Minute).Equal(*read.LastUsedAt))
	})
}
