package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// seedUsage bills a job of tenant: one ledger entry per cost, its
// attempts, at the times given.
func seedUsage(t *testing.T, b *bundle, tenant, app string, service jobs.ServiceID, currency string, at time.Time, nanos ...int64) {
	t.Helper()
	ctx := context.Background()
	job := &jobs.Record{ID: uuid.Must(uuid.NewV7()).String(), Service: service, Tenant: tenant, UserID: "u", Application: app,
		Status: jobs.StatusPending, Input: `{}`, Options: `{}`, CreatedAt: at}
	require.NoError(t, b.store.Jobs.SaveJob(ctx, job))
	for i, n := range nanos {
		done := *job
		done.Status, done.Revision, done.Result, done.Usage = jobs.StatusCompleted, 3+i, `{}`, `{}`
		require.NoError(t, b.store.Jobs.SaveJobUsage(ctx, &done, &store.UsageEntry{JobID: job.ID, Attempt: i + 1, Tenant: tenant,
			Application: app, Service: service, Provider: "alpha", Unit: "minute", Quantity: 0.5, Native: `{}`,
			CostNanos: n, Currency: currency, PriceVersion: "v1", BilledAt: at.Add(time.Duration(i) * time.Minute)}))
	}
}

// usageBundle is an API whose ledger holds, in fixedNow's month (March
// 2025): acme 3 transcriptions at 0.1 USD (web, two on the 2nd, one on
// the 3rd) and a translation at 0.02 EUR; globex a transcription at 0.7
// USD on the 2nd; and a February entry of acme's, outside the default
// period.
func usageBundle(t *testing.T) *bundle {
	b := setup(t)
	march2 := time.Date(2025, 3, 2, 10, 0, 0, 0, time.UTC)
	seedUsage(t, b, tenantA, "web", jobs.Transcriptions, "USD", march2, 100_000_000)
	seedUsage(t, b, tenantA, "web", jobs.Transcriptions, "USD", march2.Add(time.Hour), 100_000_000)
	seedUsage(t, b, tenantA, "", jobs.Transcriptions, "USD", march2.AddDate(0, 0, 1), 100_000_000)
	seedUsage(t, b, tenantA, "", jobs.Translations, "EUR", march2, 20_000_000)
	seedUsage(t, b, tenantB, "", jobs.Transcriptions, "USD", march2, 700_000_000)
	seedUsage(t, b, tenantA, "web", jobs.Transcriptions, "USD", march2.AddDate(0, -1, 0), 5_000_000_000)
	return b
}

// usageReport is GET /v1/usage's JSON answer.
type usageReport struct {
	Data []struct {
		Type       string          `json:"type"`
		Attributes json.RawMessage `json:"attributes"`
	} `json:"data"`
	Meta struct {
		From    string   `json:"from"`
		To      string   `json:"to"`
		Tenant  *string  `json:"tenant"`
		GroupBy []string `json:"group_by"`
		Totals  []struct {
			Currency string      `json:"currency"`
			Amount   json.Number `json:"amount"`
			Jobs     int         `json:"jobs"`
			Entries  int         `json:"entries"`
		} `json:"totals"`
	} `json:"meta"`
}

// getUsage requires GET /v1/usage?query to answer 200 and returns the
// report and its rows' attributes as raw JSON.
func getUsage(t *testing.T, b *bundle, token, query string, headers ...string) (usageReport, []string) {
	t.Helper()
	resp := b.do(t, http.MethodGet, "/v1/usage?"+query, token, nil, headers...)
	resp.requireStatus(t, http.StatusOK)
	var r usageReport
	require.NoError(t, json.Unmarshal(resp.Body, &r))
	rows := make([]string, len(r.Data))
	for i, d := range r.Data {
		require.Equal(t, "usage", d.Type)
		rows[i] = string(d.Attributes)
	}
	return r, rows
}

func TestUsageReportShowsTheTokensTenant(t *testing.T) {
	t.Parallel()
	b := usageBundle(t)

	r, rows := getUsage(t, b, b.token(t, api.ScopeUsageRead), "")
	require.Equal(t, []string{
		`{"unit":"minute","quantity":0.5,"jobs":1,"entries":1,"cost":{"amount":0.02,"currency":"EUR"}}`,
		`{"unit":"minute","quantity":1.5,"jobs":3,"entries":3,"cost":{"amount":0.3,"currency":"USD"}}`,
	}, rows, "one row per currency, 3 × 0.1 is 0.3 exactly; February is outside the default period")
	require.Equal(t, "2025-03-01T00:00:00Z", r.Meta.From, "the current month so far")
	require.Equal(t, fixedNowJSON, r.Meta.To)
	require.Equal(t, tenantA, *r.Meta.Tenant)
	require.Empty(t, r.Meta.GroupBy)
	require.Len(t, r.Meta.Totals, 2)
	require.Equal(t, "USD", r.Meta.Totals[1].Currency)
	require.Equal(t, json.Number("0.3"), r.Meta.Totals[1].Amount)
	require.Equal(t, 3, r.Meta.Totals[1].Jobs)

	_, rows = getUsage(t, b, b.tokenFor(t, tenantB, userB, api.ScopeUsageRead), "group_by=service,day")
	require.Equal(t, []string{
		`{"service":"transcriptions","day":"2025-03-02","unit":"minute","quantity":0.5,"jobs":1,"entries":1,"cost":{"amount":0.7,"currency":"USD"}}`,
	}, rows, "globex sees its own usage only")

	_, rows = getUsage(t, b, b.token(t, api.ScopeUsageRead), "group_by=day,application&filter[service]=transcriptions&from=2025-02-01")
	require.Equal(t, []string{
		`{"day":"2025-02-02","application":"web","unit":"minute","quantity":0.5,"jobs":1,"entries":1,"cost":{"amount":5,"currency":"USD"}}`,
		`{"day":"2025-03-02","application":"web","unit":"minute","quantity":1,"jobs":2,"entries":2,"cost":{"amount":0.2,"currency":"USD"}}`,
		`{"day":"2025-03-03","application":null,"unit":"minute","quantity":0.5,"jobs":1,"entries":1,"cost":{"amount":0.1,"currency":"USD"}}`,
	}, rows, "keys in group_by's order; no application is null")

	operator := b.token(t, api.ScopeUsageRead, auth.ScopeCrossTenant)
	r, rows = getUsage(t, b, operator, "filter[service]=transcriptions", auth.HeaderEffectiveTenant, tenantB)
	require.Equal(t, []string{`{"unit":"minute","quantity":0.5,"jobs":1,"entries":1,"cost":{"amount":0.7,"currency":"USD"}}`}, rows,
		"acting as globex shows globex's usage")
	require.Equal(t, tenantB, *r.Meta.Tenant)
	requireError(t, b.do(t, http.MethodGet, "/v1/usage?group_by=tenant", operator, nil),
		http.StatusUnprocessableEntity, "VALIDATION_ERROR", "group_by")

	requireError(t, b.do(t, http.MethodGet, "/v1/usage", b.readToken(t), nil), http.StatusForbidden, "INSUFFICIENT_SCOPE", api.ScopeUsageRead)
	requireError(t, b.do(t, http.MethodGet, "/v1/usage?filter[tenant]=globex", b.token(t, api.ScopeUsageRead), nil),
		http.StatusForbidden, "FORBIDDEN", "filter[tenant]")
	requireError(t, b.do(t, http.MethodGet, "/v1/usage?filter[tenant]=acme", b.token(t, api.ScopeUsageRead), nil),
		http.StatusForbidden, "FORBIDDEN", "filter[tenant]")
	requireError(t, b.do(t, http.MethodGet, "/v1/usage?group_by=tenant", b.token(t, api.ScopeUsageRead), nil),
		http.StatusUnprocessableEntity, "VALIDATION_ERROR", "group_by")
	requireError(t, b.do(t, http.MethodGet, "/v1/usage", b.mint(t, devidp.TokenRequest{Subject: "ops", Scopes: []string{api.ScopeUsageRead}, Audience: audience}), nil),
		http.StatusForbidden, "FORBIDDEN")
}

func TestUsageReportForASuperAdmin(t *testing.T) {
	t.Parallel()
	b := usageBundle(t)
	admin := b.mint(t, devidp.TokenRequest{Subject: "ops", Scopes: []string{api.ScopeUsageRead}, Roles: []string{"super-admin"}, Audience: audience})

	r, rows := getUsage(t, b, admin, "group_by=tenant")
	require.Equal(t, []string{
		`{"tenant":"acme","unit":"minute","quantity":0.5,"jobs":1,"entries":1,"cost":{"amount":0.02,"currency":"EUR"}}`,
		`{"tenant":"acme","unit":"minute","quantity":1.5,"jobs":3,"entries":3,"cost":{"amount":0.3,"currency":"USD"}}`,
		`{"tenant":"globex","unit":"minute","quantity":0.5,"jobs":1,"entries":1,"cost":{"amount":0.7,"currency":"USD"}}`,
	}, rows)
	require.Nil(t, r.Meta.Tenant, "every tenant")
	require.Equal(t, []string{"tenant"}, r.Meta.GroupBy)
	require.Equal(t, "EUR", r.Meta.Totals[0].Currency)
	require.Equal(t, json.Number("1"), r.Meta.Totals[1].Amount, "0.3 + 0.7, never with the euros")
	require.Equal(t, 4, r.Meta.Totals[1].Jobs)

	r, rows = getUsage(t, b, admin, "filter[tenant]=globex")
	require.Equal(t, []string{`{"unit":"minute","quantity":0.5,"jobs":1,"entries":1,"cost":{"amount":0.7,"currency":"USD"}}`}, rows)
	require.Equal(t, tenantB, *r.Meta.Tenant)

	requireError(t, b.do(t, http.MethodGet, "/v1/usage?filter[tenant]=globex&group_by=tenant", admin, nil),
		http.StatusUnprocessableEntity, "VALIDATION_ERROR", "group_by")
	requireError(t, b.do(t, http.MethodGet, "/v1/usage?filter[tenant]=Not_A_Slug", admin, nil),
		http.StatusUnprocessableEntity, "VALIDATION_ERROR", "filter[tenant]")
}

func TestUsageReportAsCSV(t *testing.T) {
	t.Parallel()
	b := usageBundle(t)
	resp := b.do(t, http.MethodGet, "/v1/usage?group_by=service,unit,day", b.token(t, api.ScopeUsageRead), nil, "Accept", "text/csv")
	resp.requireStatus(t, http.StatusOK)
	require.Equal(t, "text/csv; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, "Accept", resp.Header.Get("Vary"))
	require.Equal(t, "service,day,quantity,unit,jobs,cost_amount,currency\n"+
		"transcriptions,2025-03-02,1,minute,2,0.2,USD\n"+
		"transcriptions,2025-03-03,0.5,minute,1,0.1,USD\n"+
		"translations,2025-03-02,0.5,minute,1,0.02,EUR\n", string(resp.Body))

	resp = b.do(t, http.MethodGet, "/v1/usage", b.token(t, api.ScopeUsageRead), nil, "Accept", "text/csv;q=0.5, application/json")
	resp.requireStatus(t, http.StatusOK)
	require.Contains(t, resp.Header.Get("Content-Type"), "application/json")
}

func TestUsageReportValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.token(t, api.ScopeUsageRead)
	for query, param := range map[string]string{
		"from=2025-03-05":                         "from",
		"from=2025-03-02&to=2025-03-02":           "to",
		"from=2025-03-02T00:00:00Z&to=2025-03-01": "to",
		"from=2024-03-01":                         "from",
		"from=2024-01-01&to=2025-01-02":           "to",
		"to=yesterday":                            "to",
		"from=2025-03-01T00:00:00":                "from",
		"group_by=service,colour":                 "group_by",
		"group_by=service,service":                "group_by",
		"group_by=service,":                       "group_by",
		"group_by=day&group_by=service":           "group_by",
		"filter[service]=dubbing":                 "filter[service]",
		"filter[application]=Web%20App":           "filter[application]",
		"filter[provider]=":                       "filter[provider]",
		"filter[status]=completed":                "filter[status]",
	} {
		t.Run(url.QueryEscape(query), func(t *testing.T) {
			t.Parallel()
			requireError(t, b.do(t, http.MethodGet, "/v1/usage?"+query, token, nil), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "query "+param)
		})
	}
	// A full 366 days, with an offset, is allowed.
	r, _ := getUsage(t, b, token, "from=2024-03-01T00:00:00%2B01:00&to=2025-03-01T00:00:00%2B01:00")
	require.Equal(t, "2024-02-29T23:00:00Z", r.Meta.From)
	require.Empty(t, r.Data)
	require.Empty(t, r.Meta.Totals)
}
