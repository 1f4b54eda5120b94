package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/api/console"
	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// fakeOps stands for jobops behind the API: it records what the console
// asked for and changes the stored job as the real one would.
type fakeOps struct {
	store *store.Store
	mu    sync.Mutex
	calls []string
}

func (f *fakeOps) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeOps) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeOps) Submit(context.Context, jobops.SubmitRequest) (*jobs.Record, error) {
	return nil, &jobops.Error{Kind: jobops.ErrUnavailable, Message: "not in these tests"}
}

func (f *fakeOps) Cancel(ctx context.Context, job *jobs.Record) (*jobs.Record, error) {
	f.record("cancel " + job.ID)
	if job.Status.Terminal() {
		return nil, &jobops.Error{Kind: jobops.ErrJobFinished, Message: "job " + job.ID + " already " + string(job.Status)}
	}
	now := time.Now().UTC()
	job.Status, job.ErrorCode, job.ErrorMessage, job.CompletedAt = jobs.StatusFailed, "CANCELLED", "cancelled", &now
	job.Revision++
	return job, f.store.Jobs.SaveJob(ctx, job)
}

func (f *fakeOps) Retry(ctx context.Context, job *jobs.Record) (*jobs.Record, error) {
	f.record("retry " + job.ID)
	job.Status, job.ErrorCode, job.ErrorMessage, job.CompletedAt = jobs.StatusPending, "", "", nil
	job.Revision++
	return job, f.store.Jobs.SaveJob(ctx, job)
}

func (f *fakeOps) Delete(ctx context.Context, job *jobs.Record, by string) (*jobs.Tombstone, error) {
	f.record("delete " + job.ID + " by " + by)
	_, tomb, err := f.store.Jobs.DeleteJob(ctx, job.ID, by, time.Now().UTC())
	return tomb, err
}

// fakeResends stands for the resend workflow: its attempt is recorded a
// moment after the API answered, as the workflow's would be.
type fakeResends struct {
	store *store.Store
	wg    sync.WaitGroup
}

func (f *fakeResends) ResendWebhooks(_ context.Context, job *jobs.Record) (*jobops.WebhookResend, error) {
	f.wg.Go(func() {
		time.Sleep(200 * time.Millisecond)
		_ = f.store.Webhooks.RecordDelivery(context.Background(), &store.WebhookDelivery{JobID: job.ID, Event: "translation.failed",
			MessageID: job.ID + "-1", Attempt: 1, AttemptedAt: time.Now(), StatusCode: 500, Error: "HTTP 500", DurationMS: 3,
			Trigger: store.TriggerResend})
	})
	return &jobops.WebhookResend{JobID: job.ID, WorkflowID: "webhook-resend-" + job.ID + "-x", MessageIDs: []string{job.ID + "-1"}}, nil
}

func (f *fakeResends) RecoverWebhooks(context.Context, jobops.RecoverRequest) (*jobops.RecoverResult, error) {
	return nil, &jobops.Error{Kind: jobops.ErrUnavailable, Message: "not in these tests"}
}

// newActionHarness is newHarness with fakeOps and fakeResends behind the
// API, and a Temporal UI.
func newActionHarness(t *testing.T) (*harness, *fakeOps) {
	t.Helper()
	h := &harness{store: storetest.SQLite(t)}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	catalog, err := providers.ParseCatalog([]byte(testCatalog))
	require.NoError(t, err)
	ops := &fakeOps{store: h.store}
	resends := &fakeResends{store: h.store}
	t.Cleanup(resends.wg.Wait)
	h.keys = apikeys.New(h.store.APIKeys, h.store.Routing, apikeys.TagsOf([]byte("test tags")), nil, quiet)
	srv, err := api.New(api.Config{Store: h.store.Jobs, Batches: h.store.Batches, Jobs: ops, Catalog: catalog,
		Verifier: auth.NewVerifier("http://127.0.0.1:1/dev/oidc", "ai-job-gateway", nil), APIKeys: h.keys, Audit: h.store.Audit,
		Tenants: h.store.Routing, Statuses: h.store.Routing, Policies: h.store.Routing, Deliveries: h.store.Webhooks,
		Webhooks: resends, Usage: h.store.Usage, Logger: quiet})
	require.NoError(t, err)
	h.con, err = console.New(console.Config{API: srv.Handler(), Sessions: h.store.APIKeys, Keys: h.keys,
		SealKey: []byte("0123456789abcdef0123456789abcdef"), TemporalUIURL: "http://127.0.0.1:8233/namespaces/default/workflows",
		Logger: quiet})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(console.Path, h.con)
	mux.Handle("/", srv.Handler())
	h.server = httptest.NewServer(mux)
	t.Cleanup(h.server.Close)
	return h, ops
}

// failedJob seeds a failed translation of acme with one given-up
// delivery of its webhook.
func failedJob(t *testing.T, h *harness) jobs.Record {
	t.Helper()
	done := time.Now().UTC()
	job := h.seed(t, jobs.Record{Tenant: "acme", Status: jobs.StatusFailed, Provider: "beta", ErrorCode: "PROVIDERS_EXHAUSTED",
		ErrorMessage: "every candidate provider failed", ProcessedAt: &done, CompletedAt: &done})
	require.NoError(t, h.store.Webhooks.RecordDelivery(context.Background(), &store.WebhookDelivery{JobID: job.ID,
		Event: "translation.failed", MessageID: job.ID + "-1", Attempt: 1, AttemptedAt: done, StatusCode: 500,
		Error: "HTTP 500", DurationMS: 4}))
	return job
}

var deliveryRow = regexp.MustCompile(`<tr class="delivery">`)

func TestConsoleJobResendsItsWebhook(t *testing.T) {
	t.Parallel()
	h, _ := newActionHarness(t)
	key, _ := h.key(t, "acme")
	job := failedJob(t, h)
	b := h.browser(t)
	b.signIn(key)

	p := b.get("/console/jobs/" + job.ID + "?service=translations")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "Webhook attempts")
	require.Contains(t, p.body, "translation.failed")
	require.Contains(t, p.body, "HTTP 500")
	require.Len(t, deliveryRow.FindAllString(p.body, -1), 1)
	require.Contains(t, p.body, `action="/console/jobs/`+job.ID+`/webhooks/resend"`)
	require.Contains(t, p.body, `href="http://127.0.0.1:8233/namespaces/default/workflows/`+job.ID+`"`, "the workflow in the Temporal UI")

	// Without the CSRF token nothing is resent.
	p = b.post("/console/jobs/"+job.ID+"/webhooks/resend", url.Values{"service": {"translations"}})
	require.Equal(t, http.StatusForbidden, p.status)

	// The resend waits for its first attempt, then shows the job again.
	p = b.post("/console/jobs/"+job.ID+"/webhooks/resend", url.Values{"csrf_token": {csrf(t, p)}, "service": {"translations"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "/console/jobs/"+job.ID+"?service=translations&resent=1", p.header.Get("Location"))
	p = b.get(p.header.Get("Location"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "Resent 1 events")
	require.Len(t, deliveryRow.FindAllString(p.body, -1), 2, "the new attempt is shown")
	require.Contains(t, p.body, `<td class="trigger">resend</td>`)
}

func TestConsoleJobActionsAskFirst(t *testing.T) {
	t.Parallel()
	h, ops := newActionHarness(t)
	key, _ := h.key(t, "acme")
	failed := failedJob(t, h)
	pending := h.seed(t, jobs.Record{Tenant: "acme"})
	b := h.browser(t)
	b.signIn(key)

	// A failed job may be retried and deleted, not cancelled; a pending
	// one cancelled and deleted.
	p := b.get("/console/jobs/" + failed.ID)
	require.Contains(t, p.body, `href="/console/jobs/`+failed.ID+`/retry?service=translations"`)
	require.Contains(t, p.body, `href="/console/jobs/`+failed.ID+`/delete?service=translations"`)
	require.NotContains(t, p.body, `/cancel?`)
	p = b.get("/console/jobs/" + pending.ID)
	require.Contains(t, p.body, `href="/console/jobs/`+pending.ID+`/cancel?service=translations"`)
	require.NotContains(t, p.body, `/retry?`)
	require.Contains(t, p.body, "No webhook attempt.")

	for _, tc := range []struct {
		job    jobs.Record
		action string
		says   string
		status jobs.Status
	}{
		{pending, "cancel", "Cancel the job", jobs.StatusFailed},
		{failed, "retry", "Retry the job", jobs.StatusPending},
	} {
		// The confirmation page does nothing by itself.
		confirm := b.get("/console/jobs/" + tc.job.ID + "/" + tc.action + "?service=translations")
		require.Equal(t, http.StatusOK, confirm.status, confirm.body)
		require.Contains(t, confirm.body, `<button type="submit">`+tc.says+`</button>`)
		require.Contains(t, confirm.body, `action="/console/jobs/`+tc.job.ID+`/`+tc.action+`"`)
		require.NotContains(t, ops.called(), tc.action+" "+tc.job.ID)
		p := b.post("/console/jobs/"+tc.job.ID+"/"+tc.action, url.Values{"service": {"translations"}})
		require.Equal(t, http.StatusForbidden, p.status, "no CSRF token")
		require.NotContains(t, ops.called(), tc.action+" "+tc.job.ID)

		p = b.post("/console/jobs/"+tc.job.ID+"/"+tc.action, url.Values{"csrf_token": {csrf(t, confirm)}, "service": {"translations"}})
		require.Equal(t, http.StatusSeeOther, p.status, p.body)
		require.Equal(t, "/console/jobs/"+tc.job.ID+"?service=translations", p.header.Get("Location"))
		require.Contains(t, ops.called(), tc.action+" "+tc.job.ID)
		got, err := h.store.Jobs.GetJob(context.Background(), tc.job.ID)
		require.NoError(t, err)
		require.Equal(t, tc.status, got.Status)
	}

	// The API's refusal is shown: the pending job is now cancelled.
	confirm := b.get("/console/jobs/" + pending.ID + "/cancel")
	p = b.post("/console/jobs/"+pending.ID+"/cancel", url.Values{"csrf_token": {csrf(t, confirm)}})
	require.Equal(t, http.StatusConflict, p.status, p.body)
	require.Contains(t, p.body, "already failed")

	// Delete, then the jobs say so and the job is gone.
	confirm = b.get("/console/jobs/" + failed.ID + "/delete?service=translations")
	require.Contains(t, confirm.body, "cannot be undone")
	p = b.post("/console/jobs/"+failed.ID+"/delete", url.Values{"csrf_token": {csrf(t, confirm)}, "service": {"translations"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "/console/jobs?deleted="+failed.ID, p.header.Get("Location"))
	require.Contains(t, ops.called(), "delete "+failed.ID+" by key:"+strings.Split(key, "_")[1])
	p = b.get(p.header.Get("Location"))
	require.Contains(t, p.body, "was deleted")
	p = b.get("/console/jobs/" + failed.ID)
	require.Equal(t, http.StatusGone, p.status)

	// Another tenant's job: no confirmation, no action.
	theirs := h.seed(t, jobs.Record{Tenant: "globex"})
	require.Equal(t, http.StatusNotFound, b.get("/console/jobs/"+theirs.ID+"/cancel").status)
	p = b.post("/console/jobs/"+theirs.ID+"/cancel", url.Values{"csrf_token": {csrf(t, confirm)}})
	require.Equal(t, http.StatusNotFound, p.status)
	require.NotContains(t, ops.called(), "cancel "+theirs.ID)
}

func TestConsoleJobLinksItsDownload(t *testing.T) {
	t.Parallel()
	h, _ := newActionHarness(t)
	key, _ := h.key(t, "acme")
	done := time.Now().UTC()
	job := h.seed(t, jobs.Record{Tenant: "acme", Status: jobs.StatusCompleted, Provider: "alpha",
		Input:       `{"type":"document","url":"https://example.test/a.docx","target_language":"de"}`,
		Result:      `{"source_language":"en","target_language":"de","download_url":"https://files.example.test/r.docx?sig=1","character_count":5}`,
		ProcessedAt: &done, CompletedAt: &done})
	b := h.browser(t)
	b.signIn(key)
	p := b.get("/console/jobs/" + job.ID)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `href="https://files.example.test/r.docx?sig=1" download>Download the result</a>`)
	require.NotContains(t, p.body, "/retry?")
	require.NotContains(t, p.body, "/cancel?")
}
