package batches_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/batches"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestNotifierSendsBatchCompletedOnceWhenEveryJobFinished(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	answers := []int{http.StatusBadGateway, http.StatusNoContent}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got, bodies = append(got, r), append(bodies, body)
		w.WriteHeader(answers[min(len(got)-1, len(answers)-1)])
	}))
	t.Cleanup(srv.Close)
	seed, err := webhooksign.GenerateSeed()
	require.NoError(t, err)
	signer, err := webhooksign.NewSigner(seed)
	require.NoError(t, err)

	now := time.Now().UTC().Truncate(time.Second)
	b := &store.Batch{ID: uuid.NewString(), Tenant: "acme", Fingerprint: "f", Services: "llm-tasks", Total: 2, Refused: "[]",
		Webhook: `{"url":"` + srv.URL + `/hook","headers":{"X-Secret":"s3"}}`, CreatedAt: now}
	records := []*jobs.Record{
		{ID: uuid.NewString(), Service: "llm-tasks", Tenant: "acme", Status: jobs.StatusPending, CreatedAt: now, CustomID: "a"},
		{ID: uuid.NewString(), Service: "llm-tasks", Tenant: "acme", Status: jobs.StatusPending, CreatedAt: now, CustomID: "b"},
	}
	starts := []*store.JobStart{{Input: "{}", NextAttemptAt: now}, {Input: "{}", NextAttemptAt: now}}
	created, err := st.Batches.CreateBatch(ctx, b, records, starts)
	require.NoError(t, err)
	require.True(t, created)

	n := &batches.Notifier{Store: st.Batches, Signer: signer, Client: srv.Client()}
	finish := func(r *jobs.Record, status jobs.Status, at time.Time) {
		done := *r
		done.Status, done.CompletedAt, done.Revision = status, &at, 3
		require.NoError(t, st.Jobs.SaveJob(ctx, &done))
	}
	finish(records[0], jobs.StatusCompleted, now.Add(time.Second))
	sent, err := n.Deliver(ctx, now.Add(2*time.Second))
	require.NoError(t, err)
	require.Zero(t, sent)
	require.Empty(t, got, "a job runs")

	finish(records[1], jobs.StatusFailed, now.Add(3*time.Second))
	sent, err = n.Deliver(ctx, now.Add(4*time.Second))
	require.NoError(t, err)
	require.Zero(t, sent, "the receiver failed")
	sent, err = n.Deliver(ctx, now.Add(4500*time.Millisecond))
	require.NoError(t, err)
	require.Zero(t, sent, "not due again yet: the first retry waits a second or so, as a job's")
	sent, err = n.Deliver(ctx, now.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, 1, sent)
	sent, err = n.Deliver(ctx, now.Add(time.Hour))
	require.NoError(t, err)
	require.Zero(t, sent, "once")

	require.Len(t, got, 2)
	log, err := st.Webhooks.WebhookDeliveries(ctx, store.BatchDeliveries(b.ID))
	require.NoError(t, err)
	require.Len(t, log, 2, "every attempt in the batch's delivery log")
	require.Equal(t, []int{http.StatusBadGateway, http.StatusNoContent}, []int{log[0].StatusCode, log[1].StatusCode})
	require.Equal(t, "receiver answered 502 Bad Gateway", log[0].Error)
	require.Empty(t, log[1].Error)
	require.Equal(t, []int{1, 2}, []int{log[0].Attempt, log[1].Attempt})
	require.Equal(t, "batch.completed", log[1].Event)
	require.Equal(t, got[0].Header.Get("webhook-id"), log[0].MessageID)
	require.True(t, log[0].AttemptedAt.Equal(now.Add(4*time.Second)))
	last := got[1]
	require.Equal(t, "s3", last.Header.Get("X-Secret"))
	require.Equal(t, "ai-job-gateway-webhooks/1", last.Header.Get("User-Agent"))
	require.Equal(t, got[0].Header.Get("webhook-id"), last.Header.Get("webhook-id"), "the same id on every attempt")
	ts, err := strconv.ParseInt(last.Header.Get("webhook-timestamp"), 10, 64)
	require.NoError(t, err)
	require.NoError(t, webhooksign.Verify(signer.PublicKey(), last.Header.Get("webhook-id"), last.Header.Get("webhook-timestamp"),
		bodies[1], last.Header.Get("webhook-signature"), time.Unix(ts, 0), time.Minute))
	var event batches.Event
	require.NoError(t, json.Unmarshal(bodies[1], &event))
	require.Equal(t, "batch.completed", event.Event)
	require.Equal(t, b.ID, event.Data.ID)
	require.Equal(t, batches.StatusCompleted, event.Data.Attributes.Status)
	require.Equal(t, 1, event.Data.Attributes.Counts["completed"])
	require.Equal(t, 1, event.Data.Attributes.Counts["failed"])
	require.True(t, event.Data.Attributes.CompletedAt.Equal(now.Add(3*time.Second)))
}
