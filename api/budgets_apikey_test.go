package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/app/budgets"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// minuteLimit is a budget's limit of n minutes.
func minuteLimit(n int) map[string]any { return map[string]any{"quantity": n, "unit": "minute"} }

// A budget may name an API key, as it names an application: the tenant
// reads it back, and only a key id's form is accepted.
func TestTenantBudgetsNameAnAPIKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := superAdminToken(t, b)
	createTenantOK(t, b, tenantA, map[string]any{"budgets": []any{
		map[string]any{"api_key": "k4v7q2mz6xw3r5ta", "period": "day", "limit": minuteLimit(10)},
		map[string]any{"id": "web-ci", "application": "web", "api_key": "aaaaaaaaaaaaaaaa", "period": "month",
			"limit": map[string]any{"amount": 5, "currency": "USD"}},
		map[string]any{"application": "web", "api_key": nil, "period": "day", "limit": minuteLimit(1)},
	}})
	r := b.do(t, http.MethodGet, "/v1/tenants/"+tenantA, b.tokenFor(t, tenantA, userA, "transcriptions:read"), nil)
	r.requireStatus(t, http.StatusOK)
	requireJSON(t, `[
		{"id": "k4v7q2mz6xw3r5ta-day-minute", "application": null, "api_key": "k4v7q2mz6xw3r5ta", "period": "day", "limit": {"quantity": 10, "unit": "minute"}, "thresholds": []},
		{"id": "web-ci", "application": "web", "api_key": "aaaaaaaaaaaaaaaa", "period": "month", "limit": {"amount": 5, "currency": "USD"}, "thresholds": []},
		{"id": "web-day-minute", "application": "web", "api_key": null, "period": "day", "limit": {"quantity": 1, "unit": "minute"}, "thresholds": []}]`,
		r.data(t)["attributes"].(map[string]any)["budgets"])

	for name, key := range map[string]any{
		"uppercase":     "AAAAAAAAAAAAAAAA",
		"too short":     "aaaaaaaaaaaaaaa",
		"too long":      "aaaaaaaaaaaaaaaaa",
		"not base32":    "aaaaaaaaaaaaaaa1",
		"the whole key": "gwk_aaaaaaaaaaaaaaaa",
		"not a string":  16,
		"empty":         "",
	} {
		r := b.do(t, http.MethodPatch, "/v1/tenants/"+tenantA, admin, tenantDoc(tenantA, map[string]any{"budgets": []any{
			map[string]any{"period": "day", "limit": minuteLimit(1)},
			map[string]any{"api_key": key, "period": "day", "limit": minuteLimit(1)},
		}}))
		requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/budgets/1/api_key")
		require.Contains(t, string(r.Body), "API key's id", name)
	}
}

// A key's budget refuses the key's job that does not fit, 402
// BUDGET_EXCEEDED, while a job of the same tenant created with a token
// goes in: the budget covers the key's jobs only.
func TestKeyBudgetRefusesTheKeysJobsOnly(t *testing.T) {
	t.Parallel()
	var opened *store.Store
	b := setupJobOps(t, sqliteInto(&opened), func(cfg *jobops.Config) {
		cfg.Budgets = &budgets.Reserver{Store: opened.Usage, Prices: providers.NewPriceBook(cfg.Catalog)}
	}, nil)
	createTenantOK(t, b, tenantA, nil)
	write := b.token(t, "keys:write", "translations:write")
	keyID, secret := issueKey(t, b, write, map[string]any{"name": "ci", "scopes": []string{"translations:write"}})
	r := b.do(t, http.MethodPatch, "/v1/tenants/"+tenantA, superAdminToken(t, b), tenantDoc(tenantA, map[string]any{"budgets": []any{
		map[string]any{"id": "ci-chars", "api_key": keyID, "period": "day", "limit": map[string]any{"quantity": 15, "unit": "character"}},
	}}))
	r.requireStatus(t, http.StatusOK)

	// "Hello world" is 11 characters: one fits in 15, a second does not.
	b.do(t, http.MethodPost, "/v1/translations", secret, body(t, "translations")).requireStatus(t, http.StatusAccepted)
	r = b.do(t, http.MethodPost, "/v1/translations", secret, body(t, "translations"))
	requireError(t, r, http.StatusPaymentRequired, "BUDGET_EXCEEDED")
	require.Contains(t, string(r.Body), "budget ci-chars")
	for range 2 {
		b.do(t, http.MethodPost, "/v1/translations", write, body(t, "translations")).requireStatus(t, http.StatusAccepted)
	}

	r = b.do(t, http.MethodGet, "/v1/budgets", b.token(t, api.ScopeUsageRead), nil)
	r.requireStatus(t, http.StatusOK)
	attrs := r.object(t)["data"].([]any)[0].(map[string]any)["attributes"].(map[string]any)
	require.Equal(t, keyID, attrs["api_key"])
	require.EqualValues(t, 11, attrs["current"].(map[string]any)["reserved"], "the key's one job, not the token's")
}
