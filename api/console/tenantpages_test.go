package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// issue makes a key of tenant with scopes.
func (h *harness) issue(t *testing.T, tenant string, scopes ...string) apikeys.Issued {
	t.Helper()
	issued, err := h.keys.Issue(context.Background(), apikeys.Creator{Subject: "tester", Tenant: tenant, Scopes: scopes},
		apikeys.NewKey{Name: "reader", Scopes: scopes})
	require.NoError(t, err)
	return issued
}

// bill records a completed job of tenant with one ledger entry.
func (h *harness) bill(t *testing.T, tenant string, service jobs.ServiceID, provider, unit string, quantity float64, nanos int64, at time.Time) jobs.Record {
	t.Helper()
	ctx := context.Background()
	job := h.seed(t, jobs.Record{Tenant: tenant, Service: service, CreatedAt: at})
	done := job
	done.Status, done.Revision, done.Result, done.Usage = jobs.StatusCompleted, 3, `{}`, `{}`
	require.NoError(t, h.store.Jobs.SaveJobUsage(ctx, &done, &store.UsageEntry{JobID: job.ID, Attempt: 1, Tenant: tenant,
		Service: service, Provider: provider, Unit: unit, Quantity: quantity, Native: `{}`, CostNanos: nanos, Currency: "USD",
		PriceVersion: "v1", BilledAt: at}))
	return done
}

// requirePlainPage checks what every console page keeps to
// (docs/console.md, Security).
func requirePlainPage(t *testing.T, p page) {
	t.Helper()
	require.NotContains(t, p.body, "<script")
	require.NotContains(t, p.body, "style=")
	require.NotRegexp(t, `(src|href)="(https?:)?//`, p.body)
}

func TestConsoleUsageChartTableAndCSV(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	day1 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	day2 := day1.AddDate(0, 0, 1)
	h.bill(t, "acme", jobs.Translations, "alpha", "character", 100, 100_000_000, day1)
	h.bill(t, "acme", jobs.Translations, "beta", "character", 50, 200_000_000, day1)
	h.bill(t, "acme", jobs.Translations, "alpha", "character", 10, 50_000_000, day2)
	h.bill(t, "acme", jobs.LLMTasks, "alpha", "token", 1000, 300_000_000, day2)
	h.bill(t, "globex", jobs.Translations, "alpha", "character", 1, 900_000_000, day1)
	reader := h.issue(t, "acme", "usage:read", "translations:read")
	b := h.browser(t)
	b.signIn(reader.Secret)

	period := "&from=2025-03-01&to=2025-03-04"
	p := b.get("/console/usage?group=service" + period)
	require.Equal(t, http.StatusOK, p.status, p.body)
	requirePlainPage(t, p)
	require.Contains(t, p.body, `<option value="service" selected>`)
	require.Contains(t, p.body, `<svg class="usage-chart"`)
	require.Contains(t, p.body, `role="img" aria-label="Cost in USD per day by service, 2025-03-01 to 2025-03-03: 3 bars`)
	// One bar per day and service with usage, each titled with its value.
	require.Equal(t, 3, strings.Count(p.body, `<rect class="bar `), p.body)
	require.Contains(t, p.body, "<title>2025-03-01, translations: 0.3 USD</title>")
	require.Contains(t, p.body, "<title>2025-03-02, translations: 0.05 USD</title>")
	require.Contains(t, p.body, "<title>2025-03-02, llm-tasks: 0.3 USD</title>")
	for _, label := range []string{">03-01</text>", ">03-02</text>", ">03-03</text>"} {
		require.Contains(t, p.body, label, "a label a day")
	}
	require.Contains(t, p.body, "0.65 USD over 4 jobs", "the tenant's total only")
	require.NotContains(t, p.body, "0.9")
	require.Regexp(t, `<td>2025-03-02</td><td>llm-tasks</td><td class="num">1000</td><td>token</td><td class="num">1</td><td class="num">0.3 USD</td>`, p.body)

	p = b.get("/console/usage?group=provider&measure=quantity" + period)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "Quantity in character per day")
	require.Contains(t, p.body, "Quantity in token per day")
	require.Equal(t, 4, strings.Count(p.body, `<rect class="bar `), "day 1: alpha, beta; day 2: alpha in characters and in tokens")
	require.Contains(t, p.body, "<title>2025-03-01, beta: 50 character</title>")
	csvLink := regexp.MustCompile(`href="(/console/usage\.csv\?[^"]+)"`).FindStringSubmatch(p.body)
	require.NotNil(t, csvLink, p.body)

	resp, err := b.client.Get(h.server.URL + strings.ReplaceAll(csvLink[1], "&amp;", "&"))
	require.NoError(t, err)
	csv := read(t, resp)
	require.Equal(t, http.StatusOK, csv.status, csv.body)
	require.Equal(t, "text/csv; charset=utf-8", csv.header.Get("Content-Type"))
	require.Equal(t, `attachment; filename="usage-by-provider.csv"`, csv.header.Get("Content-Disposition"))
	lines := strings.Split(strings.TrimSpace(csv.body), "\n")
	require.Equal(t, "day,provider,quantity,unit,jobs,cost_amount,currency", lines[0])
	require.Contains(t, lines, "2025-03-01,beta,50,character,1,0.2,USD")
	require.Contains(t, lines, "2025-03-01,alpha,100,character,1,0.1,USD")
	require.Len(t, lines, 1+4, "a header and a row per day and provider (and unit)")

	// By key: entries of jobs made with a token have none.
	p = b.get("/console/usage?group=api_key" + period)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "<td>2025-03-01</td><td>(none)</td>")

	// The API's refusal of the period is shown, not a crash.
	p = b.get("/console/usage?from=2025-03-04&to=2025-03-01")
	require.Equal(t, http.StatusUnprocessableEntity, p.status)
	require.Contains(t, p.body, `class="error" role="alert"`)
}

func TestConsoleUsageAndBudgetsWithoutUsageRead(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme") // job scopes, no usage:read
	b := h.browser(t)
	b.signIn(key)
	for _, path := range []string{"/console/usage", "/console/budgets", "/console/usage.csv"} {
		p := b.get(path)
		require.Equal(t, http.StatusForbidden, p.status, path)
		require.Contains(t, p.body, "usage:read", "the API's message: %s", p.body)
		require.Contains(t, p.body, `role="alert"`)
		require.Contains(t, p.body, "Tenant <strong>acme</strong>", "a page of the console, still signed in")
	}
}

func TestConsoleBudgetsShowSettledAndReserved(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	month := store.Budget{ID: "month-usd", Period: "month", Currency: "USD", Limit: 1_000_000_000, Thresholds: []int{50, 80}}
	chars := store.Budget{ID: "day-chars", Period: "day", Unit: "character", Limit: 1000_000_000_000}
	require.NoError(t, h.store.Routing.CreateTenant(ctx, &store.Tenant{ID: "acme", Budgets: []store.Budget{month, chars}}))
	h.bill(t, "acme", jobs.Translations, "alpha", "character", 400, 250_000_000, time.Now().UTC())
	out, err := h.store.Usage.ReserveBudget(ctx, uuid.NewString(), "acme", []store.BudgetCharge{{Budget: month, Amount: 100_000_000}}, time.Now())
	require.NoError(t, err)
	require.True(t, out.OK)
	reader := h.issue(t, "acme", "usage:read", "translations:read")
	b := h.browser(t)
	b.signIn(reader.Secret)

	p := b.get("/console/budgets")
	require.Equal(t, http.StatusOK, p.status, p.body)
	requirePlainPage(t, p)
	require.Contains(t, p.body, `<h2 id="b-month-usd">month-usd</h2>`)
	require.Contains(t, p.body, `aria-label="0.25 settled and 0.1 reserved of 1 USD (35% used)"`)
	require.Contains(t, p.body, `<rect class="budget-settled" x="0" y="0" width="25" height="10">`)
	require.Contains(t, p.body, `<rect class="budget-reserved" x="25" y="0" width="10" height="10">`)
	require.Contains(t, p.body, `<line class="budget-threshold" x1="80"`)
	require.Contains(t, p.body, "<dt>Remaining</dt><dd>0.65 USD</dd>")
	require.Contains(t, p.body, `aria-label="400 settled and 0 reserved of 1000 character (40% used)"`)
	require.Contains(t, p.body, `width="40" height="10"`)
}

var secretPattern = regexp.MustCompile(`gwk_[a-z2-7]{16}_[a-z2-7]{52}`)

func TestConsoleKeysCreateShowsTheSecretOnceAndRevokeEndsItsSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	admin := h.browser(t)
	admin.signInAs("alice", "acme", []string{"keys:read", "keys:write", "translations:read", "translations:write", "usage:read"}, nil)

	list := admin.get("/console/keys")
	require.Equal(t, http.StatusOK, list.status, list.body)
	requirePlainPage(t, list)
	require.Contains(t, list.body, `<label for="k-name">Name</label>`)
	require.Contains(t, list.body, `<label for="k-scope-0">`)
	require.Contains(t, list.body, `<label for="k-expires">`)
	token := csrf(t, list)

	// Without the CSRF token nothing is created.
	p := admin.post("/console/keys", url.Values{"name": {"ci"}, "scopes": {"translations:read"}})
	require.Equal(t, http.StatusForbidden, p.status)
	keys, err := h.keys.List(context.Background(), "acme")
	require.NoError(t, err)
	require.Empty(t, keys)

	expires := time.Now().UTC().AddDate(0, 1, 0).Format(time.DateOnly)
	p = admin.post("/console/keys", url.Values{"csrf_token": {token}, "name": {"ci <pipeline>"},
		"scopes": {"translations:read", "translations:write", "not:offered"}, "expires": {expires}})
	require.Equal(t, http.StatusCreated, p.status, p.body)
	require.Equal(t, "no-store", p.header.Get("Cache-Control"))
	require.Contains(t, p.body, "shown this once")
	require.Contains(t, p.body, "ci &lt;pipeline&gt;")
	secret := secretPattern.FindString(p.body)
	require.NotEmpty(t, secret, p.body)
	require.Contains(t, p.body, expires+" 00:00:00 UTC")
	keys, err = h.keys.List(context.Background(), "acme")
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.ElementsMatch(t, []string{"translations:read", "translations:write"}, keys[0].Scopes, "only the offered scopes")
	id := keys[0].ID

	list = admin.get("/console/keys")
	require.Contains(t, list.body, id)
	require.Contains(t, list.body, "ci &lt;pipeline&gt;")
	require.NotContains(t, list.body, secret, "the secret is shown once")
	require.False(t, secretPattern.MatchString(list.body))

	// The key works on the API, and signs a person in.
	requireAPIStatus(t, h, secret, http.StatusOK)
	user := h.browser(t)
	user.signIn(secret)
	// A key never creates keys: the API's refusal, on the page.
	p = user.post("/console/keys", url.Values{"csrf_token": {csrf(t, user.get("/console/keys"))}, "name": {"x"}, "scopes": {"translations:read"}})
	require.Equal(t, http.StatusForbidden, p.status, p.body)
	require.Contains(t, p.body, "keys:write")

	// Revoking asks first, and without the CSRF token does nothing.
	p = admin.post("/console/keys/"+id+"/revoke", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusForbidden, p.status)
	p = admin.post("/console/keys/"+id+"/revoke", url.Values{"csrf_token": {token}})
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "cannot be undone")
	require.Contains(t, p.body, `<input type="hidden" name="confirm" value="yes">`)
	requireAPIStatus(t, h, secret, http.StatusOK)

	p = admin.post("/console/keys/"+id+"/revoke", url.Values{"csrf_token": {token}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "/console/keys?revoked="+id, p.header.Get("Location"))
	list = admin.get(p.header.Get("Location"))
	require.Contains(t, list.body, "was revoked")
	require.NotContains(t, list.body, "<td><code>"+id)

	time.Sleep(600 * time.Millisecond) // a key checked is taken as valid for 500 ms (app/apikeys)
	requireAPIStatus(t, h, secret, http.StatusUnauthorized)
	p = user.get("/console/usage")
	require.Equal(t, http.StatusSeeOther, p.status, "the key's session ends at its next page")
	require.Equal(t, "/console/sign-in?ended=1", p.header.Get("Location"))
	require.Empty(t, user.sessionCookie())

	// An unknown key is the API's 404, as a page.
	p = admin.post("/console/keys/abcdefghijklmnop/revoke", url.Values{"csrf_token": {token}})
	require.Equal(t, http.StatusNotFound, p.status)
}

// requireAPIStatus requires GET /v1/jobs with bearer to answer status.
func requireAPIStatus(t *testing.T, h *harness, bearer string, status int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.server.URL+"/v1/jobs", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, status, resp.StatusCode)
}

func TestConsoleBatchShowsProgressRefusalsAndResults(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	body := `{"data": {"type": "batch", "attributes": {"items": [
		{"custom_id": "doc-1", "type": "translation-job", "attributes": {"input": {"type": "text", "content": "Hallo", "target_language": "en"}}},
		{"custom_id": "doc-<2>", "type": "translation-job", "attributes": {"input": {"type": "text", "content": "Hallo"}}}]}}}`
	req, err := http.NewRequest(http.MethodPost, h.server.URL+"/v1/batches", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/vnd.api+json")
	req.Header.Set("Idempotency-Key", "console-test")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var created struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&created))
	_ = resp.Body.Close()
	id := created.Data.ID

	b := h.browser(t)
	b.signIn(key)
	p := b.get("/console/batches")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<label for="b-id">Batch id</label>`)

	p = b.get("/console/batches?id=" + id)
	require.Equal(t, http.StatusOK, p.status, p.body)
	requirePlainPage(t, p)
	require.Contains(t, p.body, "in_progress")
	require.Contains(t, p.body, `<th scope="col">total</th><th scope="col">pending</th>`)
	require.Contains(t, p.body, "All 1 refused items")
	require.Contains(t, p.body, "doc-&lt;2&gt;")
	require.Contains(t, p.body, "VALIDATION_ERROR")
	require.Contains(t, p.body, `href="/console/batches/`+id+`/results"`)

	// Results stream through the console as the session: a line per
	// finished job.
	p = b.get("/console/batches/" + id + "/results")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Equal(t, `attachment; filename="batch-`+id+`-results.jsonl"`, p.header.Get("Content-Disposition"))
	require.Equal(t, "application/x-ndjson", p.header.Get("Content-Type"))
	require.Empty(t, p.body, "no job finished yet")
	job := batchJob(t, h, key, id)
	done := *job
	done.Status, done.Revision, done.Result, done.Usage = jobs.StatusCompleted, job.Revision+1, `{}`, `{}`
	require.NoError(t, h.store.Jobs.SaveJobUsage(context.Background(), &done, &store.UsageEntry{JobID: job.ID, Attempt: 1, Tenant: "acme",
		Service: jobs.Translations, Provider: "alpha", Unit: "character", Quantity: 5, Native: `{}`, CostNanos: 1, Currency: "USD",
		PriceVersion: "v1", BilledAt: time.Now()}))
	p = b.get("/console/batches/" + id + "/results")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `"custom_id":"doc-1"`)
	require.Contains(t, p.body, `"status":"completed"`)
	require.Equal(t, 1, strings.Count(p.body, "\n"))

	p = b.get("/console/batches?id=" + uuid.NewString())
	require.Equal(t, http.StatusNotFound, p.status)
	require.Contains(t, p.body, `role="alert"`)
	p = b.get("/console/batches/" + uuid.NewString() + "/results")
	require.Equal(t, http.StatusNotFound, p.status)
	require.Contains(t, p.body, "Tenant <strong>acme</strong>")
}

// batchJob is the one job of batch id, found through the API.
func batchJob(t *testing.T, h *harness, key, id string) *jobs.Record {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.server.URL+"/v1/jobs?filter[batch]="+id, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	require.Len(t, list.Data, 1)
	job, err := h.store.Jobs.GetJob(context.Background(), list.Data[0].ID)
	require.NoError(t, err)
	return job
}
