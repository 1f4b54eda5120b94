package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/netguard"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// deliveryLog records delivery attempts; fail makes recording fail.
type deliveryLog struct {
	mu       sync.Mutex
	attempts []store.WebhookDelivery
	fail     bool
}

func (l *deliveryLog) RecordDelivery(_ context.Context, d *store.WebhookDelivery) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail {
		return errors.New("database is down")
	}
	l.attempts = append(l.attempts, *d)
	return nil
}

func (l *deliveryLog) all() []store.WebhookDelivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]store.WebhookDelivery(nil), l.attempts...)
}

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
	at     time.Time
}

// hookReceiver is an httptest receiver answering with respond.
type hookReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
}

func newReceiver(t *testing.T, respond http.HandlerFunc) *hookReceiver {
	t.Helper()
	r := &hookReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, received{header: req.Header.Clone(), body: body, at: time.Now()})
		r.mu.Unlock()
		respond(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.reqs...)
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

// hookBundle is an activity environment with webhook dependencies.
type hookBundle struct {
	env    *testsuite.TestActivityEnvironment
	signer *webhooksign.Signer
	log    *deliveryLog
}

// setupHooks registers the activities with a fresh signer, a delivery log
// and client (nil: the permissive client, since receivers are local).
// unansweredAttempt requires the log to hold one attempt, which got no
// HTTP answer, and returns it.
func (b *hookBundle) unansweredAttempt(t *testing.T) store.WebhookDelivery {
	t.Helper()
	attempts := b.log.all()
	require.Len(t, attempts, 1)
	require.Zero(t, attempts[0].StatusCode)
	return attempts[0]
}

func setupHooks(t *testing.T, client *http.Client) *hookBundle {
	t.Helper()
	return setupHooksReading(t, client, nil)
}

// setupHooksReading is setupHooks with the jobs DeliverWebhookEvent reads.
func setupHooksReading(t *testing.T, client *http.Client, jobReader activities.JobReader) *hookBundle {
	t.Helper()
	return setupHooksWith(t, client, func(a *activities.Webhooks) { a.Jobs = jobReader })
}

// setupHooksWith is setupHooks with the activities adjusted by configure.
func setupHooksWith(t *testing.T, client *http.Client, configure func(*activities.Webhooks)) *hookBundle {
	t.Helper()
	seed, err := webhooksign.GenerateSeed()
	require.NoError(t, err)
	signer, err := webhooksign.NewSigner(seed)
	require.NoError(t, err)
	if client == nil {
		client = netguard.NewClient(true, activities.WebhookTimeout)
	}
	b := &hookBundle{signer: signer, log: &deliveryLog{}}
	var suite testsuite.WorkflowTestSuite
	b.env = suite.NewTestActivityEnvironment()
	hooks := &activities.Webhooks{Signer: signer, Client: client, Deliveries: b.log}
	configure(hooks)
	b.env.RegisterActivity(hooks)
	return b
}

func (b *hookBundle) deliver(d activities.WebhookDelivery) error {
	_, err := b.env.ExecuteActivity(acts.Webhooks.DeliverWebhook, d)
	return err
}

// completedJob is a completed transcription with everything a payload shows.
func completedJob() jobs.Snapshot {
	created := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	processed := created.Add(time.Second)
	completed := created.Add(30 * time.Second)
	routing := jobs.RoutingInfo{ProviderID: "sandbox-fast", Reason: jobs.ReasonDefault, Attempt: 1, DecidedAt: processed}
	return jobs.Snapshot{
		ID: "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f", Service: "transcriptions", Tenant: "acme", UserID: "alice",
		Provider: "sandbox-fast", Status: jobs.StatusCompleted, Progress: 100,
		Input:      json.RawMessage(`{"type":"audio","url":"https://media.example.com/talk.mp3"}`),
		Options:    json.RawMessage(`{"language":"en"}`),
		ClientMeta: json.RawMessage(`{"order":"ord-42"}`),
		Routing:    &routing, RoutingHistory: []jobs.RoutingInfo{routing},
		Result:   json.RawMessage(`{"format":"json","duration":12.5,"language":"en"}`),
		WorkerID: "worker-7", CreatedAt: created, ProcessedAt: &processed, CompletedAt: &completed, Revision: 4,
	}
}

func delivery(url string) activities.WebhookDelivery {
	return activities.WebhookDelivery{
		Target:    jobs.Webhook{URL: url, Headers: map[string]string{"Authorization": "Bearer client-secret", "X-Tenant-Ref": "t-1"}},
		Event:     "transcription.completed",
		MessageID: "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f-3",
		Job:       completedJob(),
	}
}

// requireAppError checks a Temporal application error's type and whether
// it may be retried.
func requireAppError(t *testing.T, err error, errType string, retryable bool) *temporal.ApplicationError {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "want an application error, got %v", err)
	require.Equal(t, errType, appErr.Type(), "error: %v", err)
	require.Equal(t, !retryable, appErr.NonRetryable(), "error: %v", err)
	return appErr
}

func TestDeliverWebhookSignsAndSendsThePayload(t *testing.T) {
	t.Parallel()
	b := setupHooks(t, nil)
	recv := newReceiver(t, status(http.StatusNoContent))

	before := time.Now()
	require.NoError(t, b.deliver(delivery(recv.URL+"/hooks?src=gw")))

	reqs := recv.requests()
	require.Len(t, reqs, 1)
	req := reqs[0]
	h := req.header
	require.Equal(t, "application/json", h.Get("Content-Type"))
	require.Equal(t, "ai-job-gateway-webhooks/1", h.Get("User-Agent"))
	require.Equal(t, "Bearer client-secret", h.Get("Authorization"), "the client's headers are sent")
	require.Equal(t, "t-1", h.Get("X-Tenant-Ref"))
	require.Equal(t, "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f-3", h.Get("webhook-id"))
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	require.NoError(t, err)
	require.InDelta(t, before.Unix(), ts, 2, "webhook-timestamp is the time of the attempt")

	// The signature verifies with the published key form.
	pub, err := webhooksign.DecodePublicKey(webhooksign.EncodePublicKey(b.signer.PublicKey()))
	require.NoError(t, err)
	require.NoError(t, webhooksign.Verify(pub, h.Get("webhook-id"), h.Get("webhook-timestamp"), req.body, h.Get("webhook-signature"), time.Now(), 0))
	require.Error(t, webhooksign.Verify(pub, h.Get("webhook-id"), h.Get("webhook-timestamp"), append(req.body, ' '), h.Get("webhook-signature"), time.Now(), 0))

	require.JSONEq(t, `{
		"event": "transcription.completed",
		"data": {
			"id": "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f",
			"type": "transcription-job",
			"attributes": {
				"tenant": "acme", "user_id": "alice", "provider": "sandbox-fast", "status": "completed", "progress": 100,
				"routing": {"provider_id": "sandbox-fast", "reason": "default", "attempt": 1, "decided_at": "2026-11-21T12:00:01Z", "provider_evaluations": null},
				"routing_history": [{"provider_id": "sandbox-fast", "reason": "default", "attempt": 1, "decided_at": "2026-11-21T12:00:01Z", "provider_evaluations": null}],
				"created_at": "2026-11-21T12:00:00Z", "processed_at": "2026-11-21T12:00:01Z", "completed_at": "2026-11-21T12:00:30Z",
				"input": {"type": "audio", "url": "https://media.example.com/talk.mp3"},
				"options": {"language": "en"},
				"result": {"format": "json", "duration": 12.5, "language": "en"}
			},
			"meta": {"client": {"order": "ord-42"}}
		}
	}`, string(req.body))
	require.NotContains(t, string(req.body), "system")
	require.NotContains(t, string(req.body), "worker-7")
	require.NotContains(t, string(req.body), "webhook")
	require.NotContains(t, string(req.body), "client-secret")

	attempts := b.log.all()
	require.Len(t, attempts, 1)
	got := attempts[0]
	require.Equal(t, "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f", got.JobID)
	require.Equal(t, "transcription.completed", got.Event)
	require.Equal(t, "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f-3", got.MessageID)
	require.Equal(t, 1, got.Attempt)
	require.Equal(t, http.StatusNoContent, got.StatusCode)
	require.Empty(t, got.Error)
	require.WithinDuration(t, before, got.AttemptedAt, 2*time.Second)
	require.GreaterOrEqual(t, got.DurationMS, int64(0))
}

func TestDeliverWebhookFailedJobPayload(t *testing.T) {
	t.Parallel()
	b := setupHooks(t, nil)
	recv := newReceiver(t, status(http.StatusOK))
	d := delivery(recv.URL)
	d.Event = "llm-task.failed"
	d.Job.Service = "llm-tasks"
	d.Job.Status = jobs.StatusFailed
	d.Job.Result = nil
	d.Job.ClientMeta = nil
	d.Job.Error = &jobs.Error{Code: "PROVIDERS_EXHAUSTED", Message: "every candidate provider failed"}
	require.NoError(t, b.deliver(d))

	var body struct {
		Event string `json:"event"`
		Data  struct {
			Type       string                     `json:"type"`
			Attributes map[string]json.RawMessage `json:"attributes"`
			Meta       map[string]json.RawMessage `json:"meta"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(recv.requests()[0].body, &body))
	require.Equal(t, "llm-task.failed", body.Event)
	require.Equal(t, "llm-task-job", body.Data.Type)
	require.JSONEq(t, `{"code":"PROVIDERS_EXHAUSTED","message":"every candidate provider failed"}`, string(body.Data.Attributes["error"]))
	require.NotContains(t, body.Data.Attributes, "result")
	require.Empty(t, body.Data.Meta, "meta has no client when none was given, and never system")
}

func TestDeliverWebhookClassifiesAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status    int
		errType   string // "" for success
		retryable bool
		message   string
	}{
		{status: http.StatusOK},
		{status: http.StatusAccepted},
		{status: http.StatusNoContent},
		{status: http.StatusInternalServerError, errType: activities.ErrTypeWebhookFailed, retryable: true, message: "500 Internal Server Error"},
		{status: http.StatusServiceUnavailable, errType: activities.ErrTypeWebhookFailed, retryable: true, message: "503"},
		{status: http.StatusTooManyRequests, errType: activities.ErrTypeWebhookFailed, retryable: true, message: "429"},
		{status: http.StatusBadRequest, errType: activities.ErrTypeWebhookFailed, retryable: true, message: "400"},
		{status: http.StatusNotFound, errType: activities.ErrTypeWebhookFailed, retryable: true, message: "404"},
		{status: http.StatusFound, errType: activities.ErrTypeWebhookFailed, retryable: true, message: "302"},
		{status: http.StatusGone, errType: activities.ErrTypeWebhookGone, retryable: false, message: "410 Gone"},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			t.Parallel()
			b := setupHooks(t, nil)
			recv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.status == http.StatusFound {
					http.Redirect(w, r, "/elsewhere", http.StatusFound)
					return
				}
				w.WriteHeader(tc.status)
			})
			err := b.deliver(delivery(recv.URL))
			require.Len(t, recv.requests(), 1, "one request, no redirect followed")
			attempts := b.log.all()
			require.Len(t, attempts, 1)
			require.Equal(t, tc.status, attempts[0].StatusCode)
			if tc.errType == "" {
				require.NoError(t, err)
				require.Empty(t, attempts[0].Error)
				return
			}
			requireAppError(t, err, tc.errType, tc.retryable)
			require.ErrorContains(t, err, tc.message)
			require.Contains(t, attempts[0].Error, tc.message)
		})
	}
}

func TestDeliverWebhookTimeout(t *testing.T) {
	t.Parallel()
	b := setupHooks(t, netguard.NewClient(true, 300*time.Millisecond))
	release := make(chan struct{})
	recv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)

	started := time.Now()
	err := b.deliver(delivery(recv.URL))
	require.Less(t, time.Since(started), 5*time.Second)
	requireAppError(t, err, activities.ErrTypeWebhookFailed, true)
	require.ErrorContains(t, err, "no answer within 300ms")
	attempt := b.unansweredAttempt(t)
	require.Equal(t, "no answer within 300ms", attempt.Error)
	require.GreaterOrEqual(t, attempt.DurationMS, int64(300))
}

func TestDeliverWebhookReadsAtMost64KiB(t *testing.T) {
	t.Parallel()
	// An endless answer: reading it all would run into the timeout.
	b := setupHooks(t, netguard.NewClient(true, 3*time.Second))
	recv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("x", 16<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	started := time.Now()
	require.NoError(t, b.deliver(delivery(recv.URL)))
	require.Less(t, time.Since(started), 2*time.Second)
}

func TestDeliverWebhookNetworkError(t *testing.T) {
	t.Parallel()
	b := setupHooks(t, nil)
	recv := newReceiver(t, status(http.StatusOK))
	url := recv.URL
	recv.Close() // nothing listens any more

	err := b.deliver(delivery(url))
	requireAppError(t, err, activities.ErrTypeWebhookFailed, true)
	require.ErrorContains(t, err, "connection refused")
	require.Contains(t, b.unansweredAttempt(t).Error, "connection refused")
}

func TestDeliverWebhookRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	b := setupHooks(t, netguard.NewClient(false, activities.WebhookTimeout))
	recv := newReceiver(t, status(http.StatusOK))

	err := b.deliver(delivery(recv.URL))
	requireAppError(t, err, activities.ErrTypeWebhookForbidden, false)
	require.ErrorContains(t, err, "loopback")
	require.Empty(t, recv.requests(), "the receiver must not be reached")
	require.Contains(t, b.unansweredAttempt(t).Error, "refused")
}

func TestDeliverWebhookDefaultClientIsGuarded(t *testing.T) {
	t.Parallel()
	seed, err := webhooksign.GenerateSeed()
	require.NoError(t, err)
	signer, err := webhooksign.NewSigner(seed)
	require.NoError(t, err)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&activities.Webhooks{Signer: signer})
	recv := newReceiver(t, status(http.StatusOK))

	_, err = env.ExecuteActivity(acts.Webhooks.DeliverWebhook, delivery(recv.URL))
	requireAppError(t, err, activities.ErrTypeWebhookForbidden, false)
	require.Empty(t, recv.requests())
}

func TestDeliverWebhookRejectsBadURL(t *testing.T) {
	t.Parallel()
	b := setupHooks(t, nil)
	for _, u := range []string{"ftp://example.com/x", "not a url", ""} {
		requireAppError(t, b.deliver(delivery(u)), activities.ErrTypeWebhookForbidden, false)
	}
}

func TestDeliverWebhookAttemptNumbers(t *testing.T) {
	t.Parallel()
	b := setupHooks(t, nil)
	recv := newReceiver(t, status(http.StatusInternalServerError))
	d := delivery(recv.URL)
	d.Attempt = 3
	_ = b.deliver(d)
	d.Attempt = 4
	_ = b.deliver(d)

	attempts := b.log.all()
	require.Len(t, attempts, 2)
	require.Equal(t, 3, attempts[0].Attempt)
	require.Equal(t, 4, attempts[1].Attempt)
	reqs := recv.requests()
	require.Equal(t, reqs[0].header.Get("webhook-id"), reqs[1].header.Get("webhook-id"), "webhook-id is stable across attempts")
	require.Equal(t, reqs[0].body, reqs[1].body, "the body is the same on every attempt")
}

func TestDeliverWebhookRecordFailureDoesNotFailDelivery(t *testing.T) {
	t.Parallel()
	b := setupHooks(t, nil)
	b.log.fail = true
	recv := newReceiver(t, status(http.StatusOK))
	require.NoError(t, b.deliver(delivery(recv.URL)))
	require.Len(t, recv.requests(), 1)
}

func TestDeliverWebhookWithoutSignerIsRetryable(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&activities.Webhooks{Client: netguard.NewClient(true, time.Second)})
	recv := newReceiver(t, status(http.StatusOK))
	_, err := env.ExecuteActivity(acts.Webhooks.DeliverWebhook, delivery(recv.URL))
	requireAppError(t, err, activities.ErrTypeWebhookFailed, true)
	require.Empty(t, recv.requests(), "nothing is sent unsigned")
}

func TestWebhookBodyMatchesDeliveredBody(t *testing.T) {
	t.Parallel()
	b := setupHooks(t, nil)
	recv := newReceiver(t, status(http.StatusOK))
	d := delivery(recv.URL)
	require.NoError(t, b.deliver(d))
	want, err := jobs.WebhookBody(d.Event, d.Job)
	require.NoError(t, err)
	require.Equal(t, want, recv.requests()[0].body)
}

// TestDeliverWebhookEventSendsWhatTheWholeJobSends: an event without the
// job's documents is sent with the ones in the store, the same body the
// whole job gives, on every attempt, even once the job moved on.
func TestDeliverWebhookEventSendsWhatTheWholeJobSends(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		b := setupHooksReading(t, nil, st.Jobs)
		recv := newReceiver(t, status(http.StatusServiceUnavailable))

		completed := delivery(recv.URL)
		// Documents as clients send them: escaped by the renderer, and
		// not JSON's own order of keys.
		completed.Job.Input = json.RawMessage(`{"url":"https://media.example.com/a?x=1&y=<2>","type":"audio"}`)
		completed.Job.ClientMeta = json.RawMessage(`{"z":"été","a":[1,2.50,{"b":null}]}`)
		progress := completed
		progress.Event, progress.MessageID = "transcription.progress", completed.Job.ID+"-2"
		progress.Job.Status, progress.Job.Progress, progress.Job.Revision = jobs.StatusProcessing, 40, 2
		progress.Job.Result, progress.Job.CompletedAt = nil, nil
		// The workflow saved the job before it queued each event; by the
		// time the progress event goes out, the job completed.
		for _, snap := range []jobs.Snapshot{progress.Job, completed.Job} {
			rec, err := snap.Record()
			require.NoError(t, err)
			require.NoError(t, st.Jobs.SaveJob(ctx, rec))
		}

		for _, d := range []activities.WebhookDelivery{progress, completed} {
			pinned := d
			pinned.Job = d.Job.WithoutDocuments()
			for attempt := 1; attempt <= 2; attempt++ {
				pinned.Attempt = attempt
				_, err := b.env.ExecuteActivity(acts.Webhooks.DeliverWebhookEvent, pinned)
				requireAppError(t, err, activities.ErrTypeWebhookFailed, true)
			}
			want, err := jobs.WebhookBody(d.Event, d.Job)
			require.NoError(t, err)
			reqs := recv.requests()
			require.Len(t, reqs, 2)
			for _, req := range reqs {
				require.Equal(t, string(want), string(req.body), d.Event)
				require.Equal(t, d.MessageID, req.header.Get("webhook-id"))
			}
			recv.mu.Lock()
			recv.reqs = nil
			recv.mu.Unlock()
		}
		require.Len(t, b.log.all(), 4, "every attempt is recorded")
	})
}

func TestDeliverWebhookEventWaitsForTheCompletedRecord(t *testing.T) {
	t.Parallel()
	st := storetest.SQLite(t)
	b := setupHooksReading(t, nil, st.Jobs)
	recv := newReceiver(t, status(http.StatusOK))
	d := delivery(recv.URL)
	processing := d.Job
	processing.Status, processing.Result, processing.Revision = jobs.StatusProcessing, nil, 2
	rec, err := processing.Record()
	require.NoError(t, err)
	require.NoError(t, st.Jobs.SaveJob(context.Background(), rec))

	d.Job = d.Job.WithoutDocuments()
	_, err = b.env.ExecuteActivity(acts.Webhooks.DeliverWebhookEvent, d)
	requireAppError(t, err, activities.ErrTypeWebhookFailed, true)
	require.ErrorContains(t, err, "not yet completed")
	d.Job.ID = "0195a3c4-7b1e-7c2d-9e3f-000000000000"
	_, err = b.env.ExecuteActivity(acts.Webhooks.DeliverWebhookEvent, d)
	requireAppError(t, err, activities.ErrTypeWebhookFailed, true)
	require.Empty(t, recv.requests(), "nothing is sent without the job's documents")
	logged := b.log.all()
	require.Len(t, logged, 2, "each attempt not sent is in the delivery log")
	for _, l := range logged {
		require.Zero(t, l.StatusCode)
		require.True(t, strings.HasPrefix(l.Error, "not sent: "), l.Error)
		require.Equal(t, d.MessageID, l.MessageID)
	}

	// A worker that cannot read jobs leaves the event to one that can.
	_, err = setupHooks(t, nil).env.ExecuteActivity(acts.Webhooks.DeliverWebhookEvent, d)
	requireAppError(t, err, activities.ErrTypeWebhookFailed, true)
	require.Empty(t, recv.requests())
}

// A deleted job's events are not sent: the error stops the workflow's
// deliveries as a 410 does.
func TestDeliverWebhookEventOfADeletedJob(t *testing.T) {
	t.Parallel()
	st := storetest.SQLite(t)
	b := setupHooksReading(t, nil, st.Jobs)
	recv := newReceiver(t, status(http.StatusOK))
	d := delivery(recv.URL)
	rec, err := d.Job.Record()
	require.NoError(t, err)
	require.NoError(t, st.Jobs.SaveJob(context.Background(), rec))
	_, _, err = st.Jobs.DeleteJob(context.Background(), d.Job.ID, "alice", time.Now())
	require.NoError(t, err)

	d.Job = d.Job.WithoutDocuments()
	_, err = b.env.ExecuteActivity(acts.Webhooks.DeliverWebhookEvent, d)
	requireAppError(t, err, activities.ErrTypeWebhookGone, false)
	require.ErrorContains(t, err, "the job was deleted")
	require.Empty(t, recv.requests())
	require.Empty(t, b.log.all(), "a deleted job's delivery log stays empty")
}

func TestCompletedEventLinksTheResultFile(t *testing.T) {
	t.Parallel()
	files, err := blobstore.Open(t.Context(), blobstore.Config{Dir: t.TempDir(), SigningKey: []byte("0123456789abcdef0123456789abcdef"), BaseURL: "http://gateway.test"})
	require.NoError(t, err)
	_, err = files.Put(t.Context(), "results/j/transcript.json", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	recv := newReceiver(t, status(http.StatusOK))
	b := setupHooksWith(t, nil, func(a *activities.Webhooks) { a.Files, a.LinkTTL = files, 10*time.Minute })

	d := delivery(recv.URL)
	d.Job.ResultFile = "results/j/transcript.json"
	require.NoError(t, b.deliver(d))
	var body struct {
		Data struct {
			Attributes struct {
				Result map[string]any `json:"result"`
			} `json:"attributes"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(recv.requests()[0].body, &body))
	link, _ := body.Data.Attributes.Result["download_url"].(string)
	require.True(t, strings.HasPrefix(link, "http://gateway.test"+blobstore.FilesPath), "a dev link: %q", link)
	require.Equal(t, 12.5, body.Data.Attributes.Result["duration"], "the rest of the result is kept")

	d.Event, d.Job.Status, d.Job.Result = "transcription.progress", jobs.StatusProcessing, nil
	require.NoError(t, b.deliver(d))
	require.NotContains(t, string(recv.requests()[1].body), "download_url", "only a completed job's result has a link")
}

func TestDeliverWebhookRecordsMessagesAndGiveUps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.SQLite(t)
	var answer atomic.Int32
	answer.Store(http.StatusInternalServerError)
	recv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(int(answer.Load())) })
	b := setupHooksWith(t, nil, func(a *activities.Webhooks) { a.Messages = st.Webhooks })
	d := delivery(recv.URL)

	// An attempt records what the message carries, once.
	d.Attempt = 1
	requireAppError(t, b.deliver(d), activities.ErrTypeWebhookFailed, true)
	d.Attempt = 2
	requireAppError(t, b.deliver(d), activities.ErrTypeWebhookFailed, true)
	messages, err := st.Webhooks.WebhookMessages(ctx, d.Job.ID)
	require.NoError(t, err)
	require.Len(t, messages, 1)
	require.Equal(t, d.MessageID, messages[0].MessageID)
	require.Equal(t, 3, messages[0].Seq)
	require.Equal(t, d.Event, messages[0].Event)
	require.NotContains(t, messages[0].Snapshot, "media.example.com", "without the job's documents")
	require.Nil(t, messages[0].GivenUpAt)

	// Given up: recorded.
	_, err = b.env.ExecuteActivity(acts.Webhooks.RecordWebhookGivenUp, d)
	require.NoError(t, err)
	messages, err = st.Webhooks.WebhookMessages(ctx, d.Job.ID)
	require.NoError(t, err)
	require.NotNil(t, messages[0].GivenUpAt)

	// A recovery's attempt is logged as such and clears the mark once
	// delivered; it records no message of its own.
	answer.Store(http.StatusOK)
	d.Attempt, d.Trigger = 1, store.TriggerRecover
	require.NoError(t, b.deliver(d))
	messages, err = st.Webhooks.WebhookMessages(ctx, d.Job.ID)
	require.NoError(t, err)
	require.Len(t, messages, 1)
	require.Nil(t, messages[0].GivenUpAt)
	attempts := b.log.all()
	require.Len(t, attempts, 3)
	require.Equal(t, []string{"", "", store.TriggerRecover}, []string{attempts[0].Trigger, attempts[1].Trigger, attempts[2].Trigger})
}
