package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

func TestWebhookMessagesGivenUpAndRecovered(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		acme, other := newJob(), newJob()
		other.Tenant = "globex"
		for _, j := range []*jobs.Record{acme, other} {
			_, err := s.Jobs.CreateJob(ctx, j, &store.JobStart{Input: "{}", NextAttemptAt: time.Now()})
			require.NoError(t, err)
		}
		message := func(j *jobs.Record, n int, event string) *store.WebhookMessage {
			snap, err := j.Snapshot()
			require.NoError(t, err)
			m, err := store.NewWebhookMessage(j.ID+"-"+string(rune('0'+n)), event, snap)
			require.NoError(t, err)
			return m
		}
		// A message is recorded once; what an operator's retry's run sends
		// under the same id (its numbering starts again) replaces it.
		first := message(acme, 1, "transcription.processing")
		require.NoError(t, s.Webhooks.RecordWebhookMessage(ctx, first))
		require.NoError(t, s.Webhooks.RecordWebhookMessage(ctx, message(acme, 1, "transcription.processing")))
		again := message(acme, 1, "transcription.completed")
		require.NoError(t, s.Webhooks.RecordWebhookMessage(ctx, again))
		got, err := s.Webhooks.WebhookMessages(ctx, acme.ID)
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, "transcription.completed", got[0].Event)
		require.Equal(t, 1, got[0].Seq)
		snap, err := got[0].Job()
		require.NoError(t, err)
		require.Equal(t, acme.ID, snap.ID)
		require.NotContains(t, got[0].Snapshot, "example.test", "messages keep no documents")

		failed := func() []string {
			list, _, err := s.Jobs.ListJobs(ctx, store.JobFilter{WebhookFailed: true}, 0, 10)
			require.NoError(t, err)
			var ids []string
			for _, r := range list {
				ids = append(ids, r.ID)
			}
			return ids
		}
		require.Empty(t, failed())

		// Given up: recorded (a message not recorded before too), listed.
		at := time.Now().UTC()
		require.NoError(t, s.Webhooks.WebhookGivenUp(ctx, message(acme, 1, "transcription.processing"), at))
		require.NoError(t, s.Webhooks.WebhookGivenUp(ctx, message(acme, 2, "transcription.completed"), at))
		require.NoError(t, s.Webhooks.WebhookGivenUp(ctx, message(other, 1, "transcription.completed"), at.Add(time.Minute)))
		require.ElementsMatch(t, []string{acme.ID, other.ID}, failed())
		// A full page counts the matching jobs.
		_, n, err := s.Jobs.ListJobs(ctx, store.JobFilter{WebhookFailed: true}, 0, 1)
		require.NoError(t, err)
		require.EqualValues(t, 2, n)

		ids := func(f store.GivenUpFilter) []string {
			list, err := s.Webhooks.GivenUpWebhooks(ctx, f)
			require.NoError(t, err)
			var out []string
			for _, m := range list {
				out = append(out, m.MessageID)
			}
			return out
		}
		all := ids(store.GivenUpFilter{Since: at.Add(-time.Second)})
		require.Len(t, all, 3)
		require.Equal(t, []string{acme.ID + "-1", acme.ID + "-2"}, ids(store.GivenUpFilter{Since: at.Add(-time.Second), Tenant: "acme"}))
		require.Equal(t, []string{other.ID + "-1"}, ids(store.GivenUpFilter{Since: at.Add(30 * time.Second)}))
		require.Len(t, ids(store.GivenUpFilter{Since: at.Add(-time.Second), Until: at.Add(30 * time.Second)}), 2)

		// A recovery resent acme's: not offered again until given up again;
		// a concurrent recovery claims none of them.
		claimed, err := s.Webhooks.ClaimWebhookRecovery(ctx, []string{acme.ID + "-1", acme.ID + "-2"}, at.Add(2*time.Minute))
		require.NoError(t, err)
		require.Equal(t, []string{acme.ID + "-1", acme.ID + "-2"}, claimed)
		claimed, err = s.Webhooks.ClaimWebhookRecovery(ctx, []string{acme.ID + "-1", acme.ID + "-2"}, at.Add(2*time.Minute))
		require.NoError(t, err)
		require.Empty(t, claimed)
		require.Equal(t, []string{other.ID + "-1"}, ids(store.GivenUpFilter{Since: at.Add(-time.Second)}))
		// A claim given back (its resend could not start) is offered again.
		claimed, err = s.Webhooks.ClaimWebhookRecovery(ctx, []string{other.ID + "-1"}, at.Add(2*time.Minute))
		require.NoError(t, err)
		require.NoError(t, s.Webhooks.ReleaseWebhookRecovery(ctx, claimed))
		require.Equal(t, []string{other.ID + "-1"}, ids(store.GivenUpFilter{Since: at.Add(-time.Second)}))
		require.NoError(t, s.Webhooks.WebhookGivenUp(ctx, message(acme, 2, "transcription.completed"), at.Add(3*time.Minute)))
		require.Equal(t, []string{acme.ID + "-2"}, ids(store.GivenUpFilter{Since: at.Add(-time.Second), Tenant: "acme"}))

		// Delivered by a resend: no longer failed.
		require.NoError(t, s.Webhooks.WebhookDelivered(ctx, acme.ID+"-1"))
		require.NoError(t, s.Webhooks.WebhookDelivered(ctx, acme.ID+"-2"))
		require.Equal(t, []string{other.ID}, failed())
	})
}

func TestMessageSeq(t *testing.T) {
	n, err := store.MessageSeq(jobID + "-12")
	require.NoError(t, err)
	require.Equal(t, 12, n)
	for _, bad := range []string{"", "x", jobID + "-", jobID + "-0", "abc-x"} {
		_, err := store.MessageSeq(bad)
		require.Error(t, err, bad)
	}
}
