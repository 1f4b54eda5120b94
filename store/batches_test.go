package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store"
)

// newBatch is a batch of n new jobs, created at now, with their starts
// due at now.
func newBatch(n int, now time.Time, webhook string) (*store.Batch, []*jobs.Record, []*store.JobStart) {
	b := &store.Batch{ID: uuid.NewString(), Tenant: "acme", UserID: "alice", Fingerprint: "f", Services: "transcriptions",
		Total: n, Refused: "[]", Webhook: webhook, CreatedAt: now}
	records := make([]*jobs.Record, n)
	starts := make([]*store.JobStart, n)
	for i := range records {
		records[i] = newJob()
		records[i].CreatedAt = now
		records[i].CustomID = fmt.Sprintf("item-%04d", i)
		starts[i] = &store.JobStart{Input: "{}", NextAttemptAt: now}
	}
	return b, records, starts
}

func TestCreateBatchRecordsItsJobsAndStarts(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Now().UTC().Truncate(time.Millisecond)
		b, records, starts := newBatch(600, now, "")
		began := time.Now()
		created, err := s.Batches.CreateBatch(ctx, b, records, starts)
		took := time.Since(began)
		require.NoError(t, err)
		require.True(t, created)
		t.Logf("%s: 600 jobs and starts recorded in %s", s.Dialect(), took)

		got, err := s.Batches.GetBatch(ctx, b.ID)
		require.NoError(t, err)
		require.Equal(t, 600, got.Total)
		require.Nil(t, got.CompletedAt)
		counts, err := s.Batches.BatchCounts(ctx, b.ID)
		require.NoError(t, err)
		require.Equal(t, map[jobs.Status]int{jobs.StatusPending: 600}, counts)
		n, err := s.Jobs.CountJobStarts(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 600, n)
		job, err := s.Jobs.GetJob(ctx, records[7].ID)
		require.NoError(t, err)
		require.Equal(t, b.ID, job.BatchID)
		require.Equal(t, "item-0007", job.CustomID)

		// Listed by batch, with its total.
		page, total, err := s.Jobs.ListJobs(ctx, store.JobFilter{Tenant: "acme", Batch: b.ID}, 0, 10)
		require.NoError(t, err)
		require.Len(t, page, 10)
		require.EqualValues(t, 600, total)

		// The same id again writes nothing.
		again, records2, starts2 := newBatch(3, now, "")
		again.ID = b.ID
		created, err = s.Batches.CreateBatch(ctx, again, records2, starts2)
		require.NoError(t, err)
		require.False(t, created)
		_, err = s.Jobs.GetJob(ctx, records2[0].ID)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestBatchCancelAndFinish(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Now().UTC().Truncate(time.Millisecond)
		b, records, starts := newBatch(4, now, `{"url":"https://hooks.example.com/b"}`)
		// Item 3's start is leased by a dispatcher: it is starting.
		starts[3].NextAttemptAt = now.Add(time.Minute)
		created, err := s.Batches.CreateBatch(ctx, b, records, starts)
		require.NoError(t, err)
		require.True(t, created)

		// Item 0 finished, item 1 runs.
		done := *records[0]
		done.Status, done.Revision, done.Result = jobs.StatusCompleted, 2, `{"text":"ok"}`
		finishedAt := now.Add(time.Second)
		done.CompletedAt = &finishedAt
		require.NoError(t, s.Jobs.SaveJob(ctx, &done))
		running := *records[1]
		running.Status, running.Revision = jobs.StatusProcessing, 1
		require.NoError(t, s.Jobs.SaveJob(ctx, &running))
		require.NoError(t, s.Jobs.DeleteJobStarts(ctx, []string{records[0].ID, records[1].ID}))

		marked, err := s.Batches.FinishBatches(ctx, now)
		require.NoError(t, err)
		require.Zero(t, marked, "jobs run")

		got, err := s.Batches.RequestBatchCancel(ctx, b.ID, now)
		require.NoError(t, err)
		require.NotNil(t, got.CancelRequestedAt)
		failed, err := s.Batches.FailUnstartedBatchJobs(ctx, b.ID, jobs.CodeCancelled, "cancelled", now.Add(2*time.Second))
		require.NoError(t, err)
		require.Equal(t, 1, failed, "item 2 only: 0 and 1 left pending, 3 is leased")
		job, err := s.Jobs.GetJob(ctx, records[2].ID)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusFailed, job.Status)
		require.Equal(t, jobs.CodeCancelled, job.ErrorCode)
		_, err = s.Jobs.GetJobStart(ctx, records[2].ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.Jobs.GetJobStart(ctx, records[3].ID)
		require.NoError(t, err)

		unfinished, err := s.Batches.BatchJobs(ctx, b.ID, false, "", 10)
		require.NoError(t, err)
		require.Len(t, unfinished, 2)
		finished, err := s.Batches.BatchJobs(ctx, b.ID, true, "", 10)
		require.NoError(t, err)
		require.Len(t, finished, 2)
		last, err := s.Batches.LastBatchCompletion(ctx, b.ID)
		require.NoError(t, err)
		require.True(t, last.Equal(now.Add(2*time.Second)), "last completion %v", last)

		// The rest end: the sweep marks the batch and queues its event once.
		for _, r := range records[1:2] {
			end := *r
			end.Status, end.Revision, end.ErrorCode = jobs.StatusFailed, 5, jobs.CodeCancelled
			end.CompletedAt = &finishedAt
			require.NoError(t, s.Jobs.SaveJob(ctx, &end))
		}
		require.NoError(t, s.Jobs.FailJobStart(ctx, records[3].ID, jobs.CodeCancelled, "cancelled", now.Add(3*time.Second)))
		marked, err = s.Batches.FinishBatches(ctx, now.Add(4*time.Second))
		require.NoError(t, err)
		require.EqualValues(t, 1, marked)
		marked, err = s.Batches.FinishBatches(ctx, now.Add(5*time.Second))
		require.NoError(t, err)
		require.Zero(t, marked)
		got, err = s.Batches.GetBatch(ctx, b.ID)
		require.NoError(t, err)
		require.NotNil(t, got.CompletedAt)
		require.True(t, got.CompletedAt.Equal(now.Add(3*time.Second)), "completed_at %v", got.CompletedAt)

		due, err := s.Batches.DueBatchWebhooks(ctx, now.Add(4*time.Second), 10)
		require.NoError(t, err)
		require.Len(t, due, 1)
		badGateway := webhooksign.Attempt{MessageID: "msg_batch_" + b.ID, Number: 1, At: now.Add(4 * time.Second), Sent: true,
			Answer: webhooksign.Answer{Outcome: webhooksign.Failed, Status: 502, Err: errors.New("receiver answered 502 Bad Gateway")},
			Next:   now.Add(5 * time.Second)}
		require.NoError(t, s.Batches.RecordBatchWebhook(ctx, b.ID, badGateway))
		due, err = s.Batches.DueBatchWebhooks(ctx, now.Add(4*time.Second), 10)
		require.NoError(t, err)
		require.Empty(t, due, "the next attempt waits")
		due, err = s.Batches.DueBatchWebhooks(ctx, now.Add(5*time.Second), 10)
		require.NoError(t, err)
		require.Len(t, due, 1)
		delivered := webhooksign.Attempt{MessageID: "msg_batch_" + b.ID, Number: 2, At: now.Add(5 * time.Second), Sent: true,
			Duration: 7 * time.Millisecond, Answer: webhooksign.Answer{Outcome: webhooksign.Delivered, Status: 204}}
		require.NoError(t, s.Batches.RecordBatchWebhook(ctx, b.ID, delivered))
		require.NoError(t, s.Batches.RecordBatchWebhook(ctx, b.ID, delivered), "an event no longer pending records nothing")
		due, err = s.Batches.DueBatchWebhooks(ctx, now.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Empty(t, due)
		got, err = s.Batches.GetBatch(ctx, b.ID)
		require.NoError(t, err)
		require.Equal(t, store.NotificationDelivered, got.WebhookState)
		require.Equal(t, 2, got.WebhookAttempts)

		log, err := s.Webhooks.WebhookDeliveries(ctx, store.BatchDeliveries(b.ID))
		require.NoError(t, err)
		require.Len(t, log, 2)
		for i, want := range []webhooksign.Attempt{badGateway, delivered} {
			require.Equal(t, store.SubjectBatch, log[i].Subject)
			require.Equal(t, b.ID, log[i].JobID)
			require.Equal(t, "batch.completed", log[i].Event)
			require.Equal(t, want.MessageID, log[i].MessageID)
			require.Equal(t, want.Number, log[i].Attempt)
			require.True(t, log[i].AttemptedAt.Equal(want.At))
			require.Equal(t, want.Status, log[i].StatusCode)
			require.Equal(t, want.LogError(), log[i].Error)
			require.Equal(t, want.Duration.Milliseconds(), log[i].DurationMS)
		}
		jobsLog, err := s.Webhooks.ListDeliveries(ctx, b.ID)
		require.NoError(t, err)
		require.Empty(t, jobsLog, "a batch's attempts are not a job's")
	})
}
