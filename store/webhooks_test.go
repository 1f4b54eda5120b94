package store_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestRecordAndListDeliveries(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		base := time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC)
		attempts := []store.WebhookDelivery{
			{JobID: jobID, Event: "transcription.progress", MessageID: jobID + "-1", Attempt: 1, AttemptedAt: base, StatusCode: 500, Error: "receiver answered 500 Internal Server Error", DurationMS: 12},
			{JobID: jobID, Event: "transcription.progress", MessageID: jobID + "-1", Attempt: 2, AttemptedAt: base.Add(time.Second), Error: "timed out after 10s", DurationMS: 10000},
			{JobID: jobID, Event: "transcription.progress", MessageID: jobID + "-1", Attempt: 3, AttemptedAt: base.Add(3 * time.Second), StatusCode: 204, DurationMS: 8},
			{JobID: otherJobID, Event: "llm-task.completed", MessageID: "other-1", Attempt: 1, AttemptedAt: base, StatusCode: 200},
		}
		// Recorded out of order: listing is by attempt time.
		for _, i := range []int{2, 0, 3, 1} {
			d := attempts[i]
			require.NoError(t, s.Webhooks.RecordDelivery(ctx, &d))
			require.NotZero(t, d.ID)
		}
		// Same time: insertion order decides.
		same := store.WebhookDelivery{JobID: jobID, Event: "transcription.completed", MessageID: jobID + "-2", Attempt: 1, AttemptedAt: base.Add(3 * time.Second), StatusCode: 200}
		require.NoError(t, s.Webhooks.RecordDelivery(ctx, &same))

		got, err := s.Webhooks.ListDeliveries(ctx, jobID)
		require.NoError(t, err)
		require.Len(t, got, 4)
		for i, want := range append(attempts[:3:3], same) {
			require.Equal(t, want.Event, got[i].Event)
			require.Equal(t, want.MessageID, got[i].MessageID)
			require.Equal(t, want.Attempt, got[i].Attempt)
			require.Equal(t, want.StatusCode, got[i].StatusCode)
			require.Equal(t, want.Error, got[i].Error)
			require.Equal(t, want.DurationMS, got[i].DurationMS)
			require.True(t, got[i].AttemptedAt.Equal(want.AttemptedAt.Truncate(time.Microsecond)), "attempted_at %v, want %v", got[i].AttemptedAt, want.AttemptedAt)
		}

		none, err := s.Webhooks.ListDeliveries(ctx, "0195a3c4-7b1e-7c2d-9e3f-111111111111")
		require.NoError(t, err)
		require.Empty(t, none)
	})
}

func TestSigningKeyIsCreatedOnce(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		seedOf := func(b byte) func() ([]byte, error) {
			return func() ([]byte, error) { return bytes.Repeat([]byte{b}, 32), nil }
		}

		// Racing processes agree on one key.
		const racers = 8
		keys := make([][]byte, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				key, err := s.Webhooks.SigningKey(ctx, seedOf(byte(i+1)))
				require.NoError(t, err)
				keys[i] = key
			})
		}
		wg.Wait()
		for _, k := range keys {
			require.Len(t, k, 32)
			require.Equal(t, keys[0], k)
		}

		// Later calls read it and never generate.
		again, err := s.Webhooks.SigningKey(ctx, func() ([]byte, error) {
			t.Error("generate must not be called once a key exists")
			return nil, errors.New("unexpected")
		})
		require.NoError(t, err)
		require.Equal(t, keys[0], again)
	})
}

func TestSigningKeyGenerateFails(t *testing.T) {
	t.Parallel()
	s := storetest.SQLite(t)
	_, err := s.Webhooks.SigningKey(context.Background(), func() ([]byte, error) { return nil, errors.New("no entropy") })
	require.ErrorContains(t, err, "no entropy")
}

// The delivery subjects migration rolls back, dropping the attempts of
// batches' and budgets' events, and applies again; jobs' attempts stay.
func TestWebhookDeliverySubjectsMigration(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		at := time.Now().UTC()
		require.NoError(t, s.Webhooks.RecordDelivery(ctx, &store.WebhookDelivery{JobID: jobID, Event: "llm-task.completed",
			MessageID: jobID + "-1", Attempt: 1, AttemptedAt: at, StatusCode: 200}))
		budget := store.BudgetDeliveries("a-tenant-whose-slug-is-longer-than-a-job-id", "month-usd")
		require.NoError(t, s.Webhooks.RecordDelivery(ctx, &store.WebhookDelivery{Subject: budget.Kind, JobID: budget.ID,
			Event: "budget.threshold", MessageID: "msg_1", Attempt: 1, AttemptedAt: at, StatusCode: 204}))

		require.NoError(t, s.RollbackMigration(ctx, "202612071001_webhook_delivery_subjects"))
		require.NoError(t, s.Migrate(ctx))
		got, err := s.Webhooks.ListDeliveries(ctx, jobID)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, store.SubjectJob, got[0].Subject)
		gone, err := s.Webhooks.WebhookDeliveries(ctx, budget)
		require.NoError(t, err)
		require.Empty(t, gone)
	})
}
