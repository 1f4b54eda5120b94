package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// OpenJobs walks the pending and processing jobs whose start left the
// outbox, oldest first, in batches, from a cursor; a job created after
// the bound, ended, or waiting in the outbox is not one.
func TestOpenJobsWalksTheJobsNotEnded(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		base := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
		insert := func(status jobs.Status, age time.Duration) string {
			t.Helper()
			job := newJob()
			job.Status = status
			job.CreatedAt = base.Add(-age)
			require.NoError(t, s.Jobs.InsertJob(ctx, job))
			return job.ID
		}
		oldest := insert(jobs.StatusProcessing, 5*time.Minute)
		pending := insert(jobs.StatusPending, 4*time.Minute)
		insert(jobs.StatusCompleted, 3*time.Minute)
		insert(jobs.StatusFailed, 3*time.Minute)
		processing := insert(jobs.StatusProcessing, 2*time.Minute)
		young := insert(jobs.StatusPending, -30*time.Minute) // after the bound
		queued := newJob()
		queued.CreatedAt = base.Add(-time.Minute)
		_, err := s.Jobs.CreateJob(ctx, queued, &store.JobStart{Input: "{}", NextAttemptAt: queued.CreatedAt})
		require.NoError(t, err)

		ids := func(open []store.OpenJob) []string {
			var out []string
			for _, j := range open {
				out = append(out, j.ID)
			}
			return out
		}
		before := base.Add(time.Second)
		page, next, err := s.Jobs.OpenJobs(ctx, before, store.OpenJobCursor{}, 2)
		require.NoError(t, err)
		require.Equal(t, []string{oldest, pending}, ids(page))
		require.Equal(t, jobs.StatusProcessing, page[0].Status)
		require.Equal(t, jobs.StatusPending, page[1].Status)
		require.Equal(t, pending, next.ID)
		page, next, err = s.Jobs.OpenJobs(ctx, before, next, 2)
		require.NoError(t, err)
		require.Equal(t, []string{processing}, ids(page), "not the ended, the queued or the young")
		require.Equal(t, store.OpenJobCursor{}, next, "the end: start over next time")

		page, _, err = s.Jobs.OpenJobs(ctx, base.Add(time.Hour), store.OpenJobCursor{}, 10)
		require.NoError(t, err)
		require.Equal(t, []string{oldest, pending, processing, young}, ids(page))
	})
}

// FailOpenJob fails a pending or a processing job once, releasing its
// budget reservation and recording its event; an ended job is left as it
// is.
func TestFailOpenJobReleasesItsReservation(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		tenant := "budget-" + uuid.NewString()[:8]
		b := minuteBudget(3)
		now := time.Now()
		for _, status := range []jobs.Status{jobs.StatusPending, jobs.StatusProcessing} {
			job := newJob()
			job.Tenant = tenant
			job.Status = status
			require.NoError(t, s.Jobs.InsertJob(ctx, job))
			out, err := s.Usage.ReserveBudget(ctx, job.ID, tenant, []store.BudgetCharge{{Budget: b, Amount: 2e9}}, now)
			require.NoError(t, err)
			require.True(t, out.OK)

			failed, sent, err := s.Jobs.FailOpenJob(ctx, job.ID, jobs.CodeWorkflowClosed, "its workflow was terminated", now, "")
			require.NoError(t, err)
			require.NotNil(t, failed, status)
			require.Nil(t, sent, "no webhook event, no message")
			require.Equal(t, jobs.StatusFailed, failed.Status)
			require.Equal(t, jobs.CodeWorkflowClosed, failed.ErrorCode)
			require.Equal(t, job.Service, failed.Service, "returned with its columns")

			got, err := s.Jobs.GetJob(ctx, job.ID)
			require.NoError(t, err)
			require.Equal(t, jobs.StatusFailed, got.Status)
			require.Equal(t, jobs.CodeWorkflowClosed, got.ErrorCode)
			require.Equal(t, "its workflow was terminated", got.ErrorMessage)
			require.NotNil(t, got.CompletedAt)
			use, err := s.Usage.BudgetUsed(ctx, tenant, b, now)
			require.NoError(t, err)
			require.Equal(t, store.BudgetUse{}, use, "%s: the reservation is given back", status)
			events, err := s.Jobs.JobEvents(ctx, job.ID, 0, 10)
			require.NoError(t, err)
			require.NotEmpty(t, events)
			last, err := events[len(events)-1].Job()
			require.NoError(t, err)
			require.Equal(t, "failed", string(last.Status), "the failure is the job's last event")

			again, sent, err := s.Jobs.FailOpenJob(ctx, job.ID, jobs.CodeNotStarted, "again", now, "transcription.failed")
			require.NoError(t, err)
			require.Nil(t, again, "an ended job is left alone")
			require.Nil(t, sent)
			got, err = s.Jobs.GetJob(ctx, job.ID)
			require.NoError(t, err)
			require.Equal(t, jobs.CodeWorkflowClosed, got.ErrorCode)
		}
	})
}

// FailOpenJob with a webhook event records the failure's message in its
// transaction, numbered after the job's messages recorded or attempted;
// UnsentReconciledWebhooks lists it until a delivery of it is attempted,
// never the job's own messages, a job failed before since, or a job
// failed otherwise.
func TestFailOpenJobRecordsItsWebhookMessageUntilSent(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Now().UTC().Truncate(time.Microsecond)
		job := newJob()
		job.Status = jobs.StatusProcessing
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		own, err := store.NewWebhookMessage(job.ID+"-1", "transcription.processing", jobs.Snapshot{ID: job.ID})
		require.NoError(t, err)
		require.NoError(t, s.Webhooks.RecordWebhookMessage(ctx, own))
		// An attempt of a message the workflow numbered 2, not recorded.
		require.NoError(t, s.Webhooks.RecordDelivery(ctx, &store.WebhookDelivery{JobID: job.ID, Event: "transcription.processing",
			MessageID: job.ID + "-2", Attempt: 1, AttemptedAt: now}))

		failed, sent, err := s.Jobs.FailOpenJob(ctx, job.ID, jobs.CodeWorkflowClosed, "terminated", now, "transcription.failed")
		require.NoError(t, err)
		require.NotNil(t, failed)
		require.NotNil(t, sent)
		require.Equal(t, job.ID+"-3", sent.MessageID, "after the last message recorded or attempted")
		messages, err := s.Webhooks.WebhookMessages(ctx, job.ID)
		require.NoError(t, err)
		require.Len(t, messages, 2)
		require.Equal(t, "transcription.failed", messages[1].Event)
		snap, err := messages[1].Job()
		require.NoError(t, err)
		require.Equal(t, jobs.StatusFailed, snap.Status)

		// Another job failed so, long ago, and one failed otherwise.
		old := newJob()
		require.NoError(t, s.Jobs.InsertJob(ctx, old))
		_, _, err = s.Jobs.FailOpenJob(ctx, old.ID, jobs.CodeWorkflowClosed, "terminated", now.Add(-48*time.Hour), "transcription.failed")
		require.NoError(t, err)
		notStarted := newJob()
		require.NoError(t, s.Jobs.InsertJob(ctx, notStarted))
		_, _, err = s.Jobs.FailOpenJob(ctx, notStarted.ID, jobs.CodeNotStarted, "never started", now, "transcription.failed")
		require.NoError(t, err)

		unsent, err := s.Jobs.UnsentReconciledWebhooks(ctx, now.Add(-24*time.Hour), 10)
		require.NoError(t, err)
		var ids []string
		for _, m := range unsent {
			ids = append(ids, m.MessageID)
		}
		require.Equal(t, []string{job.ID + "-3"}, ids, "not the job's own message, nor the old, nor the not-started job's")
		require.Equal(t, "transcription.failed", unsent[0].Event)

		require.NoError(t, s.Webhooks.RecordDelivery(ctx, &store.WebhookDelivery{JobID: job.ID, Event: "transcription.failed",
			MessageID: job.ID + "-3", Attempt: 1, AttemptedAt: now, StatusCode: 500}))
		unsent, err = s.Jobs.UnsentReconciledWebhooks(ctx, now.Add(-24*time.Hour), 10)
		require.NoError(t, err)
		require.Empty(t, unsent, "its send began: its workflow retries it")
	})
}
