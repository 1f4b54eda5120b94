package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// setupWebhookAPI is setup with the API's configuration adjusted by
// configure (webhook key).
func setupWebhookAPI(t *testing.T, configure func(*api.Config)) *bundle {
	t.Helper()
	return setupConfigured(t, storetest.SQLite, configure)
}

func TestWebhookPublicKeyNeedsNoToken(t *testing.T) {
	t.Parallel()
	seed, err := webhooksign.GenerateSeed()
	require.NoError(t, err)
	signer, err := webhooksign.NewSigner(seed)
	require.NoError(t, err)
	b := setupWebhookAPI(t, func(c *api.Config) { c.WebhookKey = signer })

	r := b.do(t, http.MethodGet, "/v1/webhooks/public-key", "", nil)
	r.requireStatus(t, http.StatusOK)
	require.Contains(t, r.Header.Get("Cache-Control"), "max-age=")
	var doc struct {
		Data struct {
			ID         string            `json:"id"`
			Type       string            `json:"type"`
			Attributes map[string]string `json:"attributes"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	require.Equal(t, signer.KeyID(), doc.Data.ID)
	require.Equal(t, "webhook-public-key", doc.Data.Type)
	require.Equal(t, "ed25519", doc.Data.Attributes["algorithm"])
	require.Equal(t, "standard-webhooks v1a", doc.Data.Attributes["signature_scheme"])
	require.Len(t, doc.Data.Attributes, 3)
	pub, err := webhooksign.DecodePublicKey(doc.Data.Attributes["public_key"])
	require.NoError(t, err)
	require.Equal(t, signer.PublicKey(), pub)

	// A token, even a useless one, changes nothing.
	r = b.do(t, http.MethodGet, "/v1/webhooks/public-key", "not-a-jwt", nil)
	r.requireStatus(t, http.StatusOK)
}

func TestWebhookPublicKeyNotConfigured(t *testing.T) {
	t.Parallel()
	b := setupWebhookAPI(t, func(*api.Config) {})
	r := b.do(t, http.MethodGet, "/v1/webhooks/public-key", "", nil)
	requireError(t, r, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
}

func TestListWebhookDeliveries(t *testing.T) {
	t.Parallel()
	b := setupWebhookAPI(t, func(*api.Config) {})
	ctx := context.Background()
	job := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusCompleted})
	at := time.Date(2025, 3, 4, 5, 6, 10, 250_000_000, time.UTC)
	for _, d := range []store.WebhookDelivery{
		{JobID: job.ID, Event: "transcription.progress", MessageID: job.ID + "-1", Attempt: 1, AttemptedAt: at, Error: "no answer within 10s", DurationMS: 10000},
		{JobID: job.ID, Event: "transcription.progress", MessageID: job.ID + "-1", Attempt: 2, AttemptedAt: at.Add(time.Second), StatusCode: 500, Error: "receiver answered 500 Internal Server Error", DurationMS: 15},
		{JobID: job.ID, Event: "transcription.progress", MessageID: job.ID + "-1", Attempt: 3, AttemptedAt: at.Add(3 * time.Second), StatusCode: 200, DurationMS: 9},
		{JobID: job.ID, Event: "transcription.progress", MessageID: job.ID + "-1", Attempt: 1, AttemptedAt: at.Add(5 * time.Second), StatusCode: 204, DurationMS: 3, Trigger: store.TriggerResend},
		{JobID: "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f", Event: "transcription.completed", MessageID: "other", Attempt: 1, AttemptedAt: at, StatusCode: 200},
	} {
		require.NoError(t, b.store.Webhooks.RecordDelivery(ctx, &d))
	}

	r := b.do(t, http.MethodGet, "/v1/transcriptions/"+job.ID+"/webhook-deliveries", b.readToken(t), nil)
	r.requireStatus(t, http.StatusOK)
	var doc struct {
		Data []struct {
			ID         string         `json:"id"`
			Type       string         `json:"type"`
			Attributes map[string]any `json:"attributes"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	require.Len(t, doc.Data, 4)
	for _, d := range doc.Data {
		require.Equal(t, "webhook-delivery", d.Type)
		require.NotEmpty(t, d.ID)
	}
	require.Equal(t, map[string]any{
		"event": "transcription.progress", "message_id": job.ID + "-1", "attempt": 1.0,
		"attempted_at": "2025-03-04T05:06:10.25Z", "error": "no answer within 10s", "duration_ms": 10000.0, "trigger": "delivery",
	}, doc.Data[0].Attributes, "status_code is omitted when there was no answer")
	require.Equal(t, 500.0, doc.Data[1].Attributes["status_code"])
	require.Equal(t, map[string]any{
		"event": "transcription.progress", "message_id": job.ID + "-1", "attempt": 3.0,
		"attempted_at": "2025-03-04T05:06:13.25Z", "status_code": 200.0, "duration_ms": 9.0, "trigger": "delivery",
	}, doc.Data[2].Attributes, "error is omitted on success")
	require.Equal(t, "resend", doc.Data[3].Attributes["trigger"], "a resent message keeps its id and numbers its attempts anew")
	require.Equal(t, 1.0, doc.Data[3].Attributes["attempt"])

	// A job without attempts has an empty list.
	quiet := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusPending})
	r = b.do(t, http.MethodGet, "/v1/transcriptions/"+quiet.ID+"/webhook-deliveries", b.readToken(t), nil)
	r.requireStatus(t, http.StatusOK)
	require.JSONEq(t, `{"data":[]}`, string(r.Body))
}

func TestListWebhookDeliveriesVisibility(t *testing.T) {
	t.Parallel()
	b := setupWebhookAPI(t, func(*api.Config) {})
	job := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusProcessing})
	path := "/v1/transcriptions/" + job.ID + "/webhook-deliveries"

	requireError(t, b.do(t, http.MethodGet, path, "", nil), http.StatusUnauthorized, "UNAUTHORIZED")
	requireError(t, b.do(t, http.MethodGet, path, b.token(t, "transcriptions:write"), nil), http.StatusForbidden, "INSUFFICIENT_SCOPE", "transcriptions:read")
	other := b.tokenFor(t, tenantB, userB, "transcriptions:read")
	requireError(t, b.do(t, http.MethodGet, path, other, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, b.do(t, http.MethodGet, "/v1/translations/"+job.ID+"/webhook-deliveries", b.readToken(t), nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, b.do(t, http.MethodGet, "/v1/transcriptions/not-a-uuid/webhook-deliveries", b.readToken(t), nil), http.StatusNotFound, "NOT_FOUND")
	crossTenant := b.tokenFor(t, tenantB, userB, "transcriptions:read", "admin:cross-tenant")
	b.do(t, http.MethodGet, path, crossTenant, nil).requireStatus(t, http.StatusOK)
}

// deliveryAttributes reads the attributes of a webhook-deliveries answer.
func deliveryAttributes(t *testing.T, r *response) []map[string]any {
	t.Helper()
	r.requireStatus(t, http.StatusOK)
	var doc struct {
		Data []struct {
			Type       string         `json:"type"`
			Attributes map[string]any `json:"attributes"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	out := make([]map[string]any, 0, len(doc.Data))
	for _, d := range doc.Data {
		require.Equal(t, "webhook-delivery", d.Type)
		out = append(out, d.Attributes)
	}
	return out
}

func TestListBatchWebhookDeliveries(t *testing.T) {
	t.Parallel()
	b := setupWebhookAPI(t, func(*api.Config) {})
	ctx := context.Background()
	now := time.Date(2025, 3, 4, 5, 6, 0, 0, time.UTC)
	batch := &store.Batch{ID: uuid.NewString(), Tenant: tenantA, UserID: userA, Fingerprint: "f", Services: "llm-tasks",
		Refused: "[]", Webhook: `{"url":"https://hooks.example.com/batches"}`, CreatedAt: now}
	created, err := b.store.Batches.CreateBatch(ctx, batch, nil, nil)
	require.NoError(t, err)
	require.True(t, created)
	log := store.BatchDeliveries(batch.ID)
	for _, d := range []store.WebhookDelivery{
		{Subject: log.Kind, JobID: log.ID, Event: "batch.completed", MessageID: "msg_batch_" + batch.ID, Attempt: 1, AttemptedAt: now, StatusCode: 502, Error: "receiver answered 502 Bad Gateway", DurationMS: 4},
		{Subject: log.Kind, JobID: log.ID, Event: "batch.completed", MessageID: "msg_batch_" + batch.ID, Attempt: 2, AttemptedAt: now.Add(time.Second), StatusCode: 204, DurationMS: 3},
		// A job's log with the batch's id is not the batch's.
		{JobID: batch.ID, Event: "llm-task.completed", MessageID: batch.ID + "-1", Attempt: 1, AttemptedAt: now, StatusCode: 200},
	} {
		require.NoError(t, b.store.Webhooks.RecordDelivery(ctx, &d))
	}
	path := "/v1/batches/" + batch.ID + "/webhook-deliveries"

	got := deliveryAttributes(t, b.do(t, http.MethodGet, path, b.token(t, "llm-tasks:read"), nil))
	require.Equal(t, []map[string]any{
		{"event": "batch.completed", "message_id": "msg_batch_" + batch.ID, "attempt": 1.0, "attempted_at": "2025-03-04T05:06:00Z",
			"status_code": 502.0, "error": "receiver answered 502 Bad Gateway", "duration_ms": 4.0, "trigger": "delivery"},
		{"event": "batch.completed", "message_id": "msg_batch_" + batch.ID, "attempt": 2.0, "attempted_at": "2025-03-04T05:06:01Z",
			"status_code": 204.0, "duration_ms": 3.0, "trigger": "delivery"},
	}, got, "the shape of a job's delivery log")

	// Visible as the batch is.
	requireError(t, b.do(t, http.MethodGet, path, b.token(t, "transcriptions:read"), nil), http.StatusForbidden, "INSUFFICIENT_SCOPE", "llm-tasks:read")
	requireError(t, b.do(t, http.MethodGet, path, b.tokenFor(t, tenantB, userB, "llm-tasks:read"), nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, b.do(t, http.MethodGet, "/v1/batches/"+uuid.NewString()+"/webhook-deliveries", b.token(t, "llm-tasks:read"), nil), http.StatusNotFound, "NOT_FOUND")
}

func TestListBudgetWebhookDeliveries(t *testing.T) {
	t.Parallel()
	b := setupWebhookAPI(t, func(*api.Config) {})
	ctx := context.Background()
	admin := superAdminToken(t, b, api.ScopeUsageRead)
	createTenantOK(t, b, tenantA, map[string]any{"budgets": []any{
		map[string]any{"id": "chars", "period": "day", "limit": map[string]any{"quantity": 25, "unit": "character"}, "thresholds": []int{50}},
	}, "notification_url": "https://hooks.example.com/budgets"})
	at := time.Date(2025, 3, 4, 5, 6, 0, 0, time.UTC)
	for _, d := range []struct {
		log store.DeliverySubject
		msg string
	}{
		{store.BudgetDeliveries(tenantA, "chars"), "msg_1"},
		{store.BudgetDeliveries(tenantB, "chars"), "msg_2"},
		{store.BudgetDeliveries(tenantA, "other"), "msg_3"},
	} {
		require.NoError(t, b.store.Webhooks.RecordDelivery(ctx, &store.WebhookDelivery{Subject: d.log.Kind, JobID: d.log.ID,
			Event: "budget.threshold", MessageID: d.msg, Attempt: 1, AttemptedAt: at, StatusCode: 204, DurationMS: 2}))
	}
	path := "/v1/budgets/chars/webhook-deliveries"
	want := []map[string]any{{"event": "budget.threshold", "message_id": "msg_1", "attempt": 1.0,
		"attempted_at": "2025-03-04T05:06:00Z", "status_code": 204.0, "duration_ms": 2.0, "trigger": "delivery"}}

	require.Equal(t, want, deliveryAttributes(t, b.do(t, http.MethodGet, path, b.token(t, api.ScopeUsageRead), nil)), "the tenant's budget only")
	require.Equal(t, want, deliveryAttributes(t, b.do(t, http.MethodGet, path+"?filter[tenant]="+tenantA, admin, nil)))
	requireError(t, b.do(t, http.MethodGet, path, admin, nil), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "filter[tenant]")
	b.do(t, http.MethodGet, path, b.token(t, "transcriptions:read"), nil).requireStatus(t, http.StatusForbidden)
	requireError(t, b.do(t, http.MethodGet, "/v1/budgets/other/webhook-deliveries", b.token(t, api.ScopeUsageRead), nil),
		http.StatusNotFound, "NOT_FOUND")
	requireError(t, b.do(t, http.MethodGet, path, b.tokenFor(t, tenantB, userB, api.ScopeUsageRead), nil), http.StatusNotFound, "NOT_FOUND")
}

func TestCreateRefusesPrivateURLsWhenChecking(t *testing.T) {
	t.Parallel()
	b := setupJobOps(t, storetest.SQLite, func(c *jobops.Config) { c.CheckURLs = true }, nil)
	token := b.writeToken(t)
	publicMedia := "https://93.184.215.14/talk.mp3"

	for _, tc := range []struct {
		name    string
		edits   []edit
		pointer string
	}{
		{"webhook on loopback", []edit{set(ptrInput+"/url", publicMedia), set(ptrWebhook, map[string]any{"url": "http://127.0.0.1:9000/hook"})}, ptrWebhook + "/url"},
		{"webhook on localhost", []edit{set(ptrInput+"/url", publicMedia), set(ptrWebhook, map[string]any{"url": "http://localhost/hook"})}, ptrWebhook + "/url"},
		{"webhook on metadata service", []edit{set(ptrInput+"/url", publicMedia), set(ptrWebhook, map[string]any{"url": "http://169.254.169.254/latest"})}, ptrWebhook + "/url"},
		{"webhook on private network", []edit{set(ptrInput+"/url", publicMedia), set(ptrWebhook, map[string]any{"url": "https://10.1.2.3/hook"})}, ptrWebhook + "/url"},
		{"webhook on IPv4-mapped loopback", []edit{set(ptrInput+"/url", publicMedia), set(ptrWebhook, map[string]any{"url": "http://[::ffff:127.0.0.1]/hook"})}, ptrWebhook + "/url"},
		{"media on private network", []edit{set(ptrInput+"/url", "http://192.168.1.10/talk.mp3")}, ptrInput + "/url"},
		{"media on unique local IPv6", []edit{set(ptrInput+"/url", "http://[fd00::1]/talk.mp3")}, ptrInput + "/url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(t, http.MethodPost, "/v1/transcriptions", token, body(t, "transcriptions", tc.edits...))
			requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", tc.pointer)
		})
	}
	require.Empty(t, b.started(), "no job may be started")

	// Public addresses pass.
	b.create(t, "transcriptions", token, body(t, "transcriptions",
		set(ptrInput+"/url", publicMedia), set(ptrWebhook, map[string]any{"url": "https://93.184.215.14/hook"})))
	b.create(t, "llm-tasks", token, body(t, "llm-tasks", set(ptrWebhook, map[string]any{"url": "https://[2606:4700::1111]/hook"})))
}

func TestCreateAllowsPrivateURLsWithoutChecking(t *testing.T) {
	t.Parallel()
	b := setupWebhookAPI(t, func(*api.Config) {})
	data := b.create(t, "transcriptions", b.writeToken(t), body(t, "transcriptions",
		set(ptrInput+"/url", "http://127.0.0.1:8000/talk.mp3"),
		set(ptrWebhook, map[string]any{"url": "http://localhost:9000/hook", "headers": map[string]any{"X-Hook-Token": "s3cret"}})))
	require.NotContains(t, data["attributes"], "webhook", "the webhook is never returned")

	// The job workflow gets the webhook.
	in := b.startedFor(t, data["id"].(string)).Input
	require.Equal(t, &jobs.Webhook{URL: "http://localhost:9000/hook", Headers: map[string]string{"X-Hook-Token": "s3cret"}}, in.Webhook)

	data = b.create(t, "llm-tasks", b.writeToken(t), body(t, "llm-tasks"))
	require.Nil(t, b.startedFor(t, data["id"].(string)).Input.Webhook)
}
