package console_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// The jobs page filters by error code and application through GET
// /v1/jobs, and its search box opens a job by id (docs/console.md, Pages).
func TestConsoleJobsByErrorCodeApplicationAndID(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	done := time.Now().UTC()
	failed := func(app, code string) jobs.Record {
		return h.seed(t, jobs.Record{Tenant: "acme", Application: app, Status: jobs.StatusFailed, Provider: "alpha",
			ErrorCode: code, ErrorMessage: "no", ProcessedAt: &done, CompletedAt: &done})
	}
	webExhausted := failed("web", "PROVIDERS_EXHAUSTED")
	mobileExhausted := failed("mobile", "PROVIDERS_EXHAUSTED")
	webNoProvider := failed("web", "NO_ELIGIBLE_PROVIDER")
	b := h.browser(t)
	b.signIn(key)

	p := b.get("/console/jobs?error_code=PROVIDERS_EXHAUSTED")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, webExhausted.ID)
	require.Contains(t, p.body, mobileExhausted.ID)
	require.NotContains(t, p.body, webNoProvider.ID)
	require.Contains(t, p.body, `id="f-error_code" name="error_code" value="PROVIDERS_EXHAUSTED"`)

	p = b.get("/console/jobs?error_code=PROVIDERS_EXHAUSTED&application=web")
	require.Contains(t, p.body, webExhausted.ID)
	require.NotContains(t, p.body, mobileExhausted.ID)
	require.NotContains(t, p.body, webNoProvider.ID)
	require.Contains(t, p.body, "1 jobs")
	require.Contains(t, p.body, `id="f-application" name="application" value="web"`)

	p = b.get("/console/jobs?application=Not%20An%20App")
	require.Equal(t, http.StatusUnprocessableEntity, p.status)
	require.Contains(t, p.body, "filter[application]", "the API's refusal is shown")

	// The search box: an id opens the job's page.
	p = b.get("/console/jobs")
	require.Contains(t, p.body, `<label for="f-id">Job id</label>`)
	p = b.get("/console/jobs?id=+" + webNoProvider.ID + "+")
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/console/jobs/"+webNoProvider.ID, p.header.Get("Location"))
	p = b.get("/console/jobs/" + webNoProvider.ID)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "NO_ELIGIBLE_PROVIDER")
	p = b.get("/console/jobs?id=..%2F..%2Fsign-out")
	require.Equal(t, "/console/jobs/..%2F..%2Fsign-out", p.header.Get("Location"), "the id stays one path segment")
}

// The jobs page filters by a batch item's custom id and by the days the
// jobs were created (UTC days, the second excluded).
func TestConsoleJobsByCustomIDAndDays(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	day := func(d int) time.Time { return time.Date(2026, 11, d, 12, 0, 0, 0, time.UTC) }
	first := h.seed(t, jobs.Record{Tenant: "acme", CustomID: "row-1", CreatedAt: day(1)})
	second := h.seed(t, jobs.Record{Tenant: "acme", CustomID: "row-2", CreatedAt: day(2)})
	third := h.seed(t, jobs.Record{Tenant: "acme", CustomID: "row-1", CreatedAt: day(3)})
	b := h.browser(t)
	b.signIn(key)

	p := b.get("/console/jobs?custom_id=row-1")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, first.ID)
	require.Contains(t, p.body, third.ID)
	require.NotContains(t, p.body, second.ID)
	require.Contains(t, p.body, `id="f-custom_id" name="custom_id" value="row-1"`)

	p = b.get("/console/jobs?from=2026-11-02&to=2026-11-03")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, second.ID)
	require.NotContains(t, p.body, first.ID)
	require.NotContains(t, p.body, third.ID, "the second day is excluded")
	require.Contains(t, p.body, `id="f-from" name="from" type="date" value="2026-11-02"`)

	p = b.get("/console/jobs?from=yesterday")
	require.Equal(t, http.StatusUnprocessableEntity, p.status)
	require.Contains(t, p.body, "filter[created_from]", "the API's refusal is shown")
}
