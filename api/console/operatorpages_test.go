package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/mocks"

	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// operator is the super-admin the operators' tests act as.
const operator = "ops-alice"

// opsHarness is harness with a Temporal that holds the histories of the
// jobs a test says ran, for retries.
type opsHarness struct {
	*harness

	mu        sync.Mutex
	histories map[string]*historypb.HistoryEvent
}

func newOpsHarness(t *testing.T) *opsHarness {
	t.Helper()
	h := &opsHarness{histories: map[string]*historypb.HistoryEvent{}}
	temporal := mocks.NewClient(t)
	temporal.On("GetWorkflowHistory", mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(h.history).Maybe()
	run := mocks.NewWorkflowRun(t)
	run.On("GetRunID").Return("retry-run").Maybe()
	temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(run, nil).Maybe()
	h.harness = newHarnessWith(t, temporal)
	return h
}

// ran records that job's workflow ran: its history starts with its
// submission, as a retry reads it (app/jobops).
func (h *opsHarness) ran(t *testing.T, job jobs.Record) {
	t.Helper()
	sub := jobs.Submission{JobID: job.ID, Service: job.Service, Tenant: job.Tenant, UserID: job.UserID,
		Input: json.RawMessage(job.Input), CreatedAt: job.CreatedAt}
	payload, err := converter.GetDefaultDataConverter().ToPayload(sub)
	require.NoError(t, err)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.histories[workflows.JobWorkflowID(job.ID)] = &historypb.HistoryEvent{EventId: 1, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
		Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
			WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
				Input: &commonpb.Payloads{Payloads: []*commonpb.Payload{payload}}}}}
}

// history is the mock Temporal's history of a workflow: what ran
// recorded, else Temporal's NotFound.
func (h *opsHarness) history(_ context.Context, workflowID, _ string, _ bool, _ enumspb.HistoryEventFilterType) client.HistoryEventIterator {
	h.mu.Lock()
	defer h.mu.Unlock()
	return &oneEvent{event: h.histories[workflowID]}
}

// oneEvent yields its event, or Temporal's NotFound without one.
type oneEvent struct{ event *historypb.HistoryEvent }

func (it *oneEvent) HasNext() bool { return true }

func (it *oneEvent) Next() (*historypb.HistoryEvent, error) {
	if it.event == nil {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	event := it.event
	it.event = nil
	return event, nil
}

// operatorToken is a tenant-less super-admin's token with the operators'
// scopes (docs/api.md, Authentication).
func (h *opsHarness) operatorToken(t *testing.T) string {
	t.Helper()
	token, err := h.issuer.Mint(devidp.TokenRequest{Subject: operator, Scopes: operatorScopes(), Roles: []string{auth.RoleSuperAdmin}})
	require.NoError(t, err)
	return token
}

// operatorBrowser is a browser signed in through the OIDC issuer as the
// operator, a tenant-less super-admin (no API key is one: app/apikeys
// gives keys no roles and no admin:cross-tenant), and its session's CSRF
// token.
func (h *opsHarness) operatorBrowser(t *testing.T) (*browser, string) {
	t.Helper()
	b := h.browser(t)
	p := b.signInAs(operator, "", operatorScopes(), []string{auth.RoleSuperAdmin})
	return b, csrf(t, p)
}

// operatorScopes are the operator's: every job scope and the operators'.
func operatorScopes() []string {
	scopes := []string{"providers:write", "services:write", "audit:read", auth.ScopeCrossTenant}
	for _, s := range jobs.Services() {
		scopes = append(scopes, string(s.ID)+":read", string(s.ID)+":write")
	}
	return scopes
}

// apiGet reads path from the API with token.
func (h *opsHarness) apiGet(t *testing.T, path, token string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.server.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := h.server.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var doc map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", doc)
	return doc
}

func TestConsoleOperatorForcesABreakerOpen(t *testing.T) {
	t.Parallel()
	h := newOpsHarness(t)
	b, token := h.operatorBrowser(t)

	p := b.get("/console/providers")
	require.Equal(t, http.StatusOK, p.status, p.body)
	for _, want := range []string{"Alpha", "Beta", `<th scope="row">translations</th>`, `breaker-closed`,
		`<label for="state-alpha-translations">`, `<label for="confirm-alpha-translations">I confirm</label>`, `name="csrf_token" value="` + token + `"`} {
		require.Contains(t, p.body, want)
	}
	require.Contains(t, p.body, `aria-current="page">Providers</a>`)

	force := "/console/providers/alpha/services/translations/breaker"
	for _, form := range []url.Values{{"state": {"open"}, "confirm": {"yes"}}, {"csrf_token": {"wrong"}, "state": {"open"}, "confirm": {"yes"}}} {
		refused := b.post(force, form)
		require.Equal(t, http.StatusForbidden, refused.status, refused.body)
		require.Contains(t, refused.body, "CSRF")
	}
	unconfirmed := b.post(force, url.Values{"csrf_token": {token}, "state": {"open"}})
	require.Equal(t, http.StatusUnprocessableEntity, unconfirmed.status)
	require.Contains(t, unconfirmed.body, "Tick the confirmation")
	breakers, err := h.store.Breakers.Breakers(context.Background())
	require.NoError(t, err)
	require.Empty(t, breakers, "nothing forced without CSRF token and confirmation")

	done := b.post(force, url.Values{"csrf_token": {token}, "state": {"open"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, done.status, done.body)
	require.Equal(t, "/console/providers?forced=alpha%2Ftranslations", done.header.Get("Location"))
	p = b.get(done.header.Get("Location"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "breaker-open")
	require.Contains(t, p.body, `<span class="forced">open</span> by <code class="forced-by">`+operator+`</code>`)

	// The API's provider document shows it, with who forced it.
	doc := h.apiGet(t, "/v1/providers/alpha", h.operatorToken(t))
	health := doc["data"].(map[string]any)["attributes"].(map[string]any)["services"].(map[string]any)["translations"].(map[string]any)["health"].(map[string]any)
	require.Equal(t, "open", health["state"])
	require.Equal(t, "open", health["forced"])
	require.Equal(t, operator, health["forced_by"])
	require.NotEmpty(t, health["forced_at"])

	// The audit page shows the force, also filtered by action.
	for _, path := range []string{"/console/audit", "/console/audit?action=breaker.force&target=breaker%2Falpha%2Ftranslations"} {
		a := b.get(path)
		require.Equal(t, http.StatusOK, a.status, a.body)
		require.Contains(t, a.body, "<code>breaker.force</code>")
		require.Contains(t, a.body, "<code>breaker/alpha/translations</code>")
		require.Contains(t, a.body, "<code>"+operator+"</code>")
	}
	none := b.get("/console/audit?action=tenant.create")
	require.Contains(t, none.body, "No events match.")

	// Back to auto.
	done = b.post(force, url.Values{"csrf_token": {token}, "state": {"auto"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, done.status, done.body)
	require.Contains(t, b.get("/console/providers").body, `<span class="forced">auto</span>`)
}

func TestConsoleOperatorSetsAServiceStatus(t *testing.T) {
	t.Parallel()
	h := newOpsHarness(t)
	b, token := h.operatorBrowser(t)
	p := b.get("/console/services")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<label for="status-translations">Status of translations</label>`)
	require.Contains(t, p.body, `<option value="active" selected>`)

	require.Equal(t, http.StatusForbidden, b.post("/console/services/translations", url.Values{"status": {"disabled"}, "confirm": {"yes"}}).status)
	require.Equal(t, http.StatusUnprocessableEntity, b.post("/console/services/translations", url.Values{"csrf_token": {token}, "status": {"disabled"}}).status)
	done := b.post("/console/services/translations", url.Values{"csrf_token": {token}, "status": {"disabled"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, done.status, done.body)
	p = b.get(done.header.Get("Location"))
	require.Contains(t, p.body, `<span class="status status-disabled">disabled</span>`)
	doc := h.apiGet(t, "/v1/services/translations", h.operatorToken(t))
	require.Equal(t, "disabled", doc["data"].(map[string]any)["attributes"].(map[string]any)["status"])
	require.Contains(t, b.get("/console/audit?action=service.update").body, "<code>service/translations</code>")
}

func TestConsoleOperatorReadsTenants(t *testing.T) {
	t.Parallel()
	h := newOpsHarness(t)
	weight := 2.5
	require.NoError(t, h.store.Routing.CreateTenant(context.Background(), &store.Tenant{ID: "globex", FairnessWeight: &weight}))
	b, _ := h.operatorBrowser(t)
	p := b.get("/console/tenants")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<a href="/console/tenants/globex"><code>globex</code></a>`)
	require.Contains(t, p.body, "2.5")
	p = b.get("/console/tenants/globex")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "Tenant globex")
	require.Contains(t, p.body, "<dt>Fairness weight</dt><dd>2.5</dd>")
	require.Equal(t, http.StatusNotFound, b.get("/console/tenants/nobody").status)
}

func TestConsoleOperatorRetriesFailedJobsAcrossTenants(t *testing.T) {
	t.Parallel()
	h := newOpsHarness(t)
	done := time.Now().UTC()
	notStarted := h.seed(t, jobs.Record{Tenant: "acme", Status: jobs.StatusFailed, ErrorCode: jobs.CodeNotStarted,
		ErrorMessage: "never started", CompletedAt: &done})
	providerFailed := h.seed(t, jobs.Record{Tenant: "globex", Status: jobs.StatusFailed, Provider: "beta", ErrorCode: "PROVIDER_ERROR",
		ErrorMessage: "beta broke", CompletedAt: &done})
	pending := h.seed(t, jobs.Record{Tenant: "acme"})
	ranFailed := h.seed(t, jobs.Record{Tenant: "globex", Status: jobs.StatusFailed, Provider: "alpha", ErrorCode: "PROVIDER_ERROR",
		ErrorMessage: "alpha broke", CompletedAt: &done})
	h.ran(t, ranFailed)
	b, token := h.operatorBrowser(t)

	p := b.get("/console/failed")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "3 failed jobs")
	for _, want := range []string{notStarted.ID, providerFailed.ID, "globex", "acme", `<h2 id="h-code-PROVIDER_ERROR"><code>PROVIDER_ERROR</code> (2)</h2>`,
		`<h2 id="h-code-` + jobs.CodeNotStarted + `">`, `<label class="inline" for="job-` + providerFailed.ID + `">`} {
		require.Contains(t, p.body, want)
	}
	require.NotContains(t, p.body, pending.ID)

	p = b.get("/console/failed?code=PROVIDER_ERROR")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, providerFailed.ID)
	require.NotContains(t, p.body, notStarted.ID)
	p = b.get("/console/failed?tenant=acme")
	require.Contains(t, p.body, notStarted.ID)
	require.NotContains(t, p.body, providerFailed.ID)

	retry := url.Values{"csrf_token": {token}, "confirm": {"yes"}, "job": {notStarted.ID, providerFailed.ID, ranFailed.ID, "0195a3c4-0000-7000-8000-000000000000"}}
	require.Equal(t, http.StatusForbidden, b.post("/console/failed/retry", url.Values{"job": retry["job"], "confirm": {"yes"}}).status)
	p = b.post("/console/failed/retry", retry)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "never started (JOB_NOT_STARTED): submit it again", "each job's own answer")
	require.Contains(t, p.body, "has no workflow history")
	require.Equal(t, 3, strings.Count(p.body, `class="outcome-refused"`))
	require.Contains(t, p.body, "<td>409</td>")
	require.Contains(t, p.body, "<td>404</td>")
	require.Equal(t, 1, strings.Count(p.body, `class="outcome-ok"`))
	require.Contains(t, p.body, "<td>202</td>")
	require.Contains(t, p.body, "retry started")
	require.Contains(t, b.get("/console/audit?action=job.retry").body, "<code>job/"+ranFailed.ID+"</code>")
}

func TestConsoleOperatorPagesRefuseATenantsKey(t *testing.T) {
	t.Parallel()
	h := newOpsHarness(t)
	key, _ := h.key(t, "acme")
	b := h.browser(t)
	jobsPage := b.signIn(key)
	token := csrf(t, jobsPage)
	require.Contains(t, jobsPage.body, `href="/console/providers"`, "the nav names the operators' pages")

	for _, path := range []string{"/console/tenants", "/console/audit"} {
		p := b.get(path)
		require.Equal(t, http.StatusForbidden, p.status, path+": "+p.body)
		require.Contains(t, p.body, `class="error" role="alert"`)
	}
	for path, form := range map[string]url.Values{
		"/console/providers/alpha/services/translations/breaker": {"csrf_token": {token}, "state": {"open"}, "confirm": {"yes"}},
		"/console/services/translations":                         {"csrf_token": {token}, "status": {"disabled"}, "confirm": {"yes"}},
	} {
		p := b.post(path, form)
		require.Equal(t, http.StatusForbidden, p.status, path+": "+p.body)
		require.Contains(t, p.body, "The gateway refused")
	}
	breakers, err := h.store.Breakers.Breakers(context.Background())
	require.NoError(t, err)
	require.Empty(t, breakers)

	// A tenant's failed jobs are its own, and it may not retry by the
	// operators' route.
	done := time.Now().UTC()
	ours := h.seed(t, jobs.Record{Tenant: "acme", Status: jobs.StatusFailed, ErrorCode: "PROVIDER_ERROR", CompletedAt: &done})
	theirs := h.seed(t, jobs.Record{Tenant: "globex", Status: jobs.StatusFailed, ErrorCode: "PROVIDER_ERROR", CompletedAt: &done})
	p := b.get("/console/failed")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, ours.ID)
	require.NotContains(t, p.body, theirs.ID)
	p = b.post("/console/failed/retry", url.Values{"csrf_token": {token}, "confirm": {"yes"}, "job": {ours.ID}})
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "<td>403</td>")
}
