package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
)

func TestPayloadSecretsAreMadeOnceAndShreddedForGood(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		secrets := s.Keys.PayloadSecrets()
		first, err := secrets.Secret(ctx, "acme")
		require.NoError(t, err)
		require.Len(t, first, payloadcodec.MinSecretSize)
		again, err := secrets.Secret(ctx, "acme")
		require.NoError(t, err)
		require.Equal(t, first, again, "one secret a scope, whoever asks first")
		other, err := secrets.Secret(ctx, "globex")
		require.NoError(t, err)
		require.NotEqual(t, first, other)

		require.NoError(t, secrets.Shred(ctx, "acme", time.Now()))
		_, err = secrets.Secret(ctx, "acme")
		require.ErrorIs(t, err, payloadcodec.ErrScopeShredded, "a shredded scope gets no new secret")
		still, err := secrets.Secret(ctx, "globex")
		require.NoError(t, err)
		require.Equal(t, other, still, "other scopes keep theirs")
		require.NoError(t, secrets.Shred(ctx, "never-used", time.Now()))
		_, err = secrets.Secret(ctx, "never-used")
		require.ErrorIs(t, err, payloadcodec.ErrScopeShredded)
	})
}

func TestJobTenant(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		job := newJob()
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		tenant, err := s.Keys.JobTenant(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, job.Tenant, tenant)
		tenant, err = s.Keys.JobTenant(ctx, "no-such-job")
		require.NoError(t, err)
		require.Empty(t, tenant)
	})
}

// TestExistingPayloadSecretsAreNeverMade: ExistingSecret, the codec
// server's, reads a scope's secret and makes none.
func TestExistingPayloadSecretsAreNeverMade(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		secrets := s.Keys.PayloadSecrets()
		for range 2 {
			_, err := secrets.ExistingSecret(ctx, "acme")
			require.ErrorIs(t, err, payloadcodec.ErrScopeShredded, "asking made none")
		}
		made, err := secrets.Secret(ctx, "acme")
		require.NoError(t, err)
		got, err := secrets.ExistingSecret(ctx, "acme")
		require.NoError(t, err)
		require.Equal(t, made, got)
		require.NoError(t, secrets.Shred(ctx, "acme", time.Now()))
		_, err = secrets.ExistingSecret(ctx, "acme")
		require.ErrorIs(t, err, payloadcodec.ErrScopeShredded)
	})
}
