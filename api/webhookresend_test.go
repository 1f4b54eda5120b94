package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
	"github.com/ai-job-gateway/gateway/workflows"
)

// hookedJob seeds a completed transcription of tenant whose submission
// had a webhook, and the delivery log of messages -1 (progress, recorded),
// -2 (progress, sent before messages were recorded) and -3 (completed,
// likewise).
func (b *bundle) hookedJob(t *testing.T, tenant string) *jobs.Record {
	t.Helper()
	ctx := context.Background()
	job := b.seed(t, jobs.Record{Service: "transcriptions", Tenant: tenant, Status: jobs.StatusCompleted,
		Result: `{"text":"hi","language":"en","duration":1,"segments":[]}`})
	b.ranWith(t, job, func(s *jobs.Submission) { s.Webhook = &jobs.Webhook{URL: "https://hooks.example/in"} })
	for i, event := range []string{"transcription.progress", "transcription.progress", "transcription.completed"} {
		id := job.ID + "-" + string(rune('1'+i))
		require.NoError(t, b.store.Webhooks.RecordDelivery(ctx, &store.WebhookDelivery{JobID: job.ID, Event: event, MessageID: id,
			Attempt: 1, AttemptedAt: fixedNow.Add(time.Duration(i) * time.Second), StatusCode: 200}))
	}
	snap, err := job.Snapshot()
	require.NoError(t, err)
	m, err := store.NewWebhookMessage(job.ID+"-1", "transcription.progress", snap)
	require.NoError(t, err)
	require.NoError(t, b.store.Webhooks.RecordWebhookMessage(ctx, m))
	return job
}

// resendStarted is the webhook resend started as workflow id.
func (b *bundle) resendStarted(t *testing.T, id string) startedWorkflow {
	t.Helper()
	for _, s := range b.started() {
		if s.Options.ID == id {
			return s
		}
	}
	t.Fatalf("no workflow %s was started", id)
	return startedWorkflow{}
}

func TestWebhookResend(t *testing.T) {
	t.Parallel()
	b := setupJobOps(t, storetest.SQLite, nil, func(c *api.Config) { c.Webhooks = c.Jobs.(api.WebhookOps) })
	// Without a webhook store, jobops refuses: 503.
	job := b.hookedJob(t, tenantA)
	requireError(t, b.do(t, http.MethodPost, jobPath("transcriptions", job.ID, "/webhooks/resend"), b.writeToken(t), nil),
		http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")

	var opened *store.Store
	b = setupJobOps(t, sqliteInto(&opened), func(c *jobops.Config) { c.Webhooks = opened.Webhooks },
		func(c *api.Config) { c.Webhooks = c.Jobs.(api.WebhookOps) })
	job = b.hookedJob(t, tenantA)
	path := jobPath("transcriptions", job.ID, "/webhooks/resend")
	r := b.do(t, http.MethodPost, path, b.writeToken(t), nil)
	r.requireStatus(t, http.StatusAccepted)
	attrs := r.data(t)["attributes"].(map[string]any)
	require.EqualValues(t, 2, attrs["count"])
	require.Equal(t, []any{job.ID + "-1", job.ID + "-3"}, attrs["message_ids"], "in order; the completed event rebuilt from the job")
	require.Equal(t, []any{job.ID + "-2"}, attrs["skipped_message_ids"], "a progress event sent before messages were recorded")
	require.True(t, strings.HasPrefix(r.data(t)["id"].(string), "webhook-resend-"+job.ID+"-"))
	start := b.resendStarted(t, r.data(t)["id"].(string))
	require.Equal(t, workflows.WebhookResendWorkflowName, start.Workflow)
	require.NotNil(t, start.Resend)
	require.Equal(t, "https://hooks.example/in", start.Resend.Target.URL)
	require.Equal(t, store.TriggerResend, start.Resend.Trigger)
	require.Len(t, start.Resend.Messages, 2)
	require.Equal(t, "transcription.completed", start.Resend.Messages[1].Event)
	require.Equal(t, jobs.StatusCompleted, start.Resend.Messages[1].Job.Status)

	// The job's other routes' rules: another tenant's is 404, a read
	// scope 403, another service's route 404.
	requireError(t, b.do(t, http.MethodPost, path, b.tokenFor(t, tenantB, userB, allScopes()...), nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, b.do(t, http.MethodPost, path, b.readToken(t), nil), http.StatusForbidden, "INSUFFICIENT_SCOPE")
	requireError(t, b.do(t, http.MethodPost, jobPath("translations", job.ID, "/webhooks/resend"), b.writeToken(t), nil), http.StatusNotFound, "NOT_FOUND")

	// No webhook; no history.
	plain := b.seed(t, jobs.Record{Service: "llm-tasks", Status: jobs.StatusCompleted, Result: `{"content":"x","finish_reason":"completed"}`})
	b.ran(t, plain)
	requireError(t, b.do(t, http.MethodPost, jobPath("llm-tasks", plain.ID, "/webhooks/resend"), b.writeToken(t), nil), http.StatusConflict, "JOB_HAS_NO_WEBHOOK")
	gone := b.seed(t, jobs.Record{Service: "llm-tasks", Status: jobs.StatusCompleted, Result: `{"content":"x","finish_reason":"completed"}`})
	requireError(t, b.do(t, http.MethodPost, jobPath("llm-tasks", gone.ID, "/webhooks/resend"), b.writeToken(t), nil), http.StatusConflict, "WEBHOOK_NOT_RESENDABLE")
}

func TestWebhookRecoverAndFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var opened *store.Store
	b := setupJobOps(t, sqliteInto(&opened), func(c *jobops.Config) { c.Webhooks = opened.Webhooks },
		func(c *api.Config) { c.Webhooks = c.Jobs.(api.WebhookOps) })
	own := b.hookedJob(t, tenantA)
	other := b.hookedJob(t, tenantB)
	givenUp := time.Now().UTC()
	for _, j := range []*jobs.Record{own, other} {
		snap, err := j.Snapshot()
		require.NoError(t, err)
		m, err := store.NewWebhookMessage(j.ID+"-3", "transcription.completed", snap)
		require.NoError(t, err)
		require.NoError(t, b.store.Webhooks.WebhookGivenUp(ctx, m, givenUp))
	}

	listed := func(token, query string) []string {
		r := b.do(t, http.MethodGet, "/v1/jobs?"+query, token, nil)
		r.requireStatus(t, http.StatusOK)
		var ids []string
		for _, d := range r.object(t)["data"].([]any) {
			ids = append(ids, d.(map[string]any)["id"].(string))
		}
		return ids
	}
	require.Equal(t, []string{own.ID}, listed(b.readToken(t), "filter[webhook]=failed"))
	requireError(t, b.do(t, http.MethodGet, "/v1/jobs?filter[webhook]=ok", b.readToken(t), nil), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "filter[webhook]")

	since := givenUp.Add(-time.Minute).Format(time.RFC3339)
	requireError(t, b.do(t, http.MethodPost, "/v1/webhooks/recover", b.writeToken(t), `{}`), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/since")
	requireError(t, b.do(t, http.MethodPost, "/v1/webhooks/recover", b.writeToken(t), `{"since":"yesterday"}`), http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	requireError(t, b.do(t, http.MethodPost, "/v1/webhooks/recover", b.writeToken(t), `{"since":"`+since+`","tenant":"globex"}`), http.StatusForbidden, "FORBIDDEN")
	requireError(t, b.do(t, http.MethodPost, "/v1/webhooks/recover", b.readToken(t), `{"since":"`+since+`"}`), http.StatusForbidden, "FORBIDDEN")

	// A dry run: the caller's tenant only; nothing started.
	r := b.do(t, http.MethodPost, "/v1/webhooks/recover", b.writeToken(t), `{"since":"`+since+`","dry_run":true}`)
	r.requireStatus(t, http.StatusOK)
	meta := r.object(t)["meta"].(map[string]any)
	require.EqualValues(t, 1, meta["messages"])
	require.Equal(t, own.ID, r.object(t)["data"].([]any)[0].(map[string]any)["attributes"].(map[string]any)["job_id"])
	for _, s := range b.started() {
		require.Nil(t, s.Resend, "a dry run starts nothing")
	}

	// A super-admin recovers every tenant's, or one tenant's.
	admin := b.mint(t, devidp.TokenRequest{Subject: "root", Roles: []string{"super-admin"}, Audience: audience})
	r = b.do(t, http.MethodPost, "/v1/webhooks/recover", admin, `{"since":"`+since+`","tenant":"globex"}`)
	r.requireStatus(t, http.StatusAccepted)
	require.EqualValues(t, 1, r.object(t)["meta"].(map[string]any)["messages"])
	start := b.resendStarted(t, r.object(t)["data"].([]any)[0].(map[string]any)["id"].(string))
	require.Equal(t, store.TriggerRecover, start.Resend.Trigger)
	require.Equal(t, other.ID+"-3", start.Resend.Messages[0].MessageID)
	r = b.do(t, http.MethodPost, "/v1/webhooks/recover", admin, `{"since":"`+since+`"}`)
	r.requireStatus(t, http.StatusAccepted)
	require.EqualValues(t, 1, r.object(t)["meta"].(map[string]any)["messages"], "globex's was recovered already")
	r = b.do(t, http.MethodPost, "/v1/webhooks/recover", admin, `{"since":"`+since+`"}`)
	require.EqualValues(t, 0, r.object(t)["meta"].(map[string]any)["messages"])
}

// encryptHistory re-encrypts the submission ran recorded for job with
// key k1 in the job's tenant's scope, as a worker of another key would.
func (b *bundle) encryptHistory(t *testing.T, job *jobs.Record, secrets payloadcodec.ScopeSecrets) {
	t.Helper()
	keys, err := payloadcodec.NewKeyring("k1", map[string][]byte{"k1": payloadcodec.GenerateKey()})
	require.NoError(t, err)
	codec := payloadcodec.New(keys, secrets, payloadcodec.Options{}).Codec(job.Tenant)
	b.mu.Lock()
	defer b.mu.Unlock()
	input := b.histories[job.ID].GetWorkflowExecutionStartedEventAttributes().GetInput()
	encrypted, err := codec.Encode(input.GetPayloads())
	require.NoError(t, err)
	input.Payloads = encrypted
}

// TestWebhookResendUndecryptable: a job whose history this server's
// payload keys cannot decrypt answers 409 PAYLOAD_UNDECRYPTABLE, never
// 500: another key under the same id, an unknown key id, a shredded
// scope, or no keys at all; so does a retry. A recovery skips the job,
// saying why.
func TestWebhookResendUndecryptable(t *testing.T) {
	t.Parallel()
	secrets := payloadcodec.NewMemorySecrets(true)
	readers := map[string]converter.DataConverter{
		"another key under k1": nil,
		"no key k1":            nil,
		"no keys":              converter.GetDefaultDataConverter(),
	}
	for name, id := range map[string]string{"another key under k1": "k1", "no key k1": "k2"} {
		keys, err := payloadcodec.NewKeyring(id, map[string][]byte{id: payloadcodec.GenerateKey()})
		require.NoError(t, err)
		readers[name] = converter.NewCodecDataConverter(converter.GetDefaultDataConverter(),
			payloadcodec.New(keys, secrets, payloadcodec.Options{}).Decoder())
	}
	for name, reader := range readers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var opened *store.Store
			b := setupJobOps(t, sqliteInto(&opened), func(c *jobops.Config) { c.Webhooks = opened.Webhooks; c.DataConverter = reader },
				func(c *api.Config) { c.Webhooks = c.Jobs.(api.WebhookOps) })
			job := b.hookedJob(t, tenantA)
			b.encryptHistory(t, job, secrets)
			r := b.do(t, http.MethodPost, jobPath("transcriptions", job.ID, "/webhooks/resend"), b.writeToken(t), nil)
			requireError(t, r, http.StatusConflict, "PAYLOAD_UNDECRYPTABLE", "cannot be decrypted with this server's payload keys")
			require.NotContains(t, string(r.Body), "payloadcodec", "the codec's own words stay in the log")

			// A retry reads the same history.
			failed := b.seed(t, jobs.Record{Service: "transcriptions", Tenant: tenantA, Status: jobs.StatusFailed,
				ErrorCode: jobs.CodeProvidersExhausted, ErrorMessage: "every provider failed"})
			b.ranWith(t, failed, nil)
			b.encryptHistory(t, failed, secrets)
			r = b.do(t, http.MethodPost, jobPath("transcriptions", failed.ID, "/retry"), b.writeToken(t), nil)
			requireError(t, r, http.StatusConflict, "PAYLOAD_UNDECRYPTABLE", "cannot be decrypted with this server's payload keys")
		})
	}

	t.Run("shredded scope", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		keys, err := payloadcodec.NewKeyring("k1", map[string][]byte{"k1": payloadcodec.GenerateKey()})
		require.NoError(t, err)
		own := payloadcodec.NewMemorySecrets(true)
		reader := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), payloadcodec.New(keys, own, payloadcodec.Options{}).Decoder())
		var opened *store.Store
		b := setupJobOps(t, sqliteInto(&opened), func(c *jobops.Config) { c.Webhooks = opened.Webhooks; c.DataConverter = reader },
			func(c *api.Config) { c.Webhooks = c.Jobs.(api.WebhookOps) })
		job := b.hookedJob(t, tenantA)
		b.encryptHistory(t, job, own)
		own.Delete(job.Tenant)
		requireError(t, b.do(t, http.MethodPost, jobPath("transcriptions", job.ID, "/webhooks/resend"), b.writeToken(t), nil),
			http.StatusConflict, "PAYLOAD_UNDECRYPTABLE")

		snap, err := job.Snapshot()
		require.NoError(t, err)
		m, err := store.NewWebhookMessage(job.ID+"-3", "transcription.completed", snap)
		require.NoError(t, err)
		givenUp := time.Now().UTC()
		require.NoError(t, b.store.Webhooks.WebhookGivenUp(ctx, m, givenUp))
		r := b.do(t, http.MethodPost, "/v1/webhooks/recover", b.writeToken(t), `{"since":"`+givenUp.Add(-time.Minute).Format(time.RFC3339)+`"}`)
		r.requireStatus(t, http.StatusAccepted)
		skipped := r.object(t)["meta"].(map[string]any)["skipped_jobs"].([]any)
		require.Len(t, skipped, 1, "the recovery goes on, skipping the job")
		require.Equal(t, job.ID, skipped[0].(map[string]any)["job_id"])
		require.Contains(t, skipped[0].(map[string]any)["reason"], "cannot be decrypted")
	})
}
