package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/app/budgets"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/stretchr/testify/require"
)

func TestTenantBudgets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := superAdminToken(t, b)
	createTenantOK(t, b, tenantA, map[string]any{
		"budgets": []any{
			map[string]any{"period": "month", "limit": map[string]any{"amount": 12.5, "currency": "USD"}, "thresholds": []int{50, 80, 100}},
			map[string]any{"id": "web-audio", "application": "web", "period": "day", "limit": map[string]any{"quantity": 10, "unit": "minute"}},
		},
		"notification_url": "https://hooks.example.com/budgets",
	})
	// The tenant reads its budgets.
	r := b.do(t, http.MethodGet, "/v1/tenants/"+tenantA, b.tokenFor(t, tenantA, userA, "transcriptions:read"), nil)
	r.requireStatus(t, http.StatusOK)
	attrs := r.data(t)["attributes"].(map[string]any)
	requireJSON(t, `[
		{"id": "month-usd", "application": null, "api_key": null, "period": "month", "limit": {"amount": 12.5, "currency": "USD"}, "thresholds": [50, 80, 100]},
		{"id": "web-audio", "application": "web", "api_key": null, "period": "day", "limit": {"quantity": 10, "unit": "minute"}, "thresholds": []}]`, attrs["budgets"])
	require.Equal(t, "https://hooks.example.com/budgets", attrs["notification_url"])

	// Only a super-admin sets them.
	r = b.do(t, http.MethodPatch, "/v1/tenants/"+tenantA, b.tokenFor(t, tenantA, userA, "transcriptions:write"), tenantDoc(tenantA, map[string]any{"budgets": nil}))
	r.requireStatus(t, http.StatusForbidden)

	bad := map[string]struct {
		attrs   map[string]any
		pointer string
	}{
		"not a list":        {map[string]any{"budgets": "x"}, "/data/attributes/budgets"},
		"unknown member":    {map[string]any{"budgets": []any{map[string]any{"period": "day", "limit": map[string]any{"quantity": 1, "unit": "minute"}, "x": 1}}}, "/data/attributes/budgets/0/x"},
		"period":            {map[string]any{"budgets": []any{map[string]any{"period": "week", "limit": map[string]any{"quantity": 1, "unit": "minute"}}}}, "/data/attributes/budgets/0/period"},
		"no limit":          {map[string]any{"budgets": []any{map[string]any{"period": "day"}}}, "/data/attributes/budgets/0/limit"},
		"both":              {map[string]any{"budgets": []any{map[string]any{"period": "day", "limit": map[string]any{"quantity": 1, "amount": 1}}}}, "/data/attributes/budgets/0/limit"},
		"negative amount":   {map[string]any{"budgets": []any{map[string]any{"period": "day", "limit": map[string]any{"amount": -1, "currency": "USD"}}}}, "/data/attributes/budgets/0/limit/amount"},
		"too many decimals": {map[string]any{"budgets": []any{map[string]any{"period": "day", "limit": map[string]any{"amount": 0.0000000001, "currency": "USD"}}}}, "/data/attributes/budgets/0/limit/amount"},
		"currency":          {map[string]any{"budgets": []any{map[string]any{"period": "day", "limit": map[string]any{"amount": 1, "currency": "usd"}}}}, "/data/attributes/budgets/0/limit/currency"},
		"unit":              {map[string]any{"budgets": []any{map[string]any{"period": "day", "limit": map[string]any{"quantity": 1, "unit": "hour"}}}}, "/data/attributes/budgets/0/limit/unit"},
		"threshold":         {map[string]any{"budgets": []any{map[string]any{"period": "day", "limit": map[string]any{"quantity": 1, "unit": "minute"}, "thresholds": []int{80, 50}}}}, "/data/attributes/budgets/0/thresholds/1"},
		"application":       {map[string]any{"budgets": []any{map[string]any{"application": "Web", "period": "day", "limit": map[string]any{"quantity": 1, "unit": "minute"}}}}, "/data/attributes/budgets/0/application"},
		"same id": {map[string]any{"budgets": []any{
			map[string]any{"period": "day", "limit": map[string]any{"quantity": 1, "unit": "minute"}},
			map[string]any{"period": "day", "limit": map[string]any{"quantity": 2, "unit": "minute"}}}}, "/data/attributes/budgets/1/id"},
		"url scheme":      {map[string]any{"notification_url": "ftp://x.example"}, "/data/attributes/notification_url"},
		"url credentials": {map[string]any{"notification_url": "https://u:p@x.example"}, "/data/attributes/notification_url"},
	}
	for name, c := range bad {
		r := b.do(t, http.MethodPatch, "/v1/tenants/"+tenantA, admin, tenantDoc(tenantA, c.attrs))
		requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", c.pointer)
		_ = name
	}

	// null removes them all.
	r = b.do(t, http.MethodPatch, "/v1/tenants/"+tenantA, admin, tenantDoc(tenantA, map[string]any{"budgets": nil, "notification_url": nil}))
	r.requireStatus(t, http.StatusOK)
	attrs = r.data(t)["attributes"].(map[string]any)
	requireJSON(t, `[]`, attrs["budgets"])
	require.Nil(t, attrs["notification_url"])
}

func TestBudgetsRefuseAtCreateAndShowWhatTheyUsed(t *testing.T) {
	t.Parallel()
	var catalog *providers.Catalog
	var opened *store.Store
	b := setupJobOps(t, sqliteInto(&opened), func(cfg *jobops.Config) {
		catalog = cfg.Catalog
		cfg.Budgets = &budgets.Reserver{Store: opened.Usage, Prices: providers.NewPriceBook(catalog)}
	}, nil)
	admin := superAdminToken(t, b, api.ScopeUsageRead)
	createTenantOK(t, b, tenantA, map[string]any{"budgets": []any{
		map[string]any{"id": "chars", "period": "day", "limit": map[string]any{"quantity": 25, "unit": "character"}, "thresholds": []int{50, 80}},
	}})
	write := b.token(t, "translations:write")

	// "Hello world" is 11 characters: two fit in 25, a third does not.
	for range 2 {
		b.do(t, http.MethodPost, "/v1/translations", write, body(t, "translations")).requireStatus(t, http.StatusAccepted)
	}
	r := b.do(t, http.MethodPost, "/v1/translations", write, body(t, "translations"))
	requireError(t, r, http.StatusPaymentRequired, "BUDGET_EXCEEDED")
	require.Contains(t, string(r.Body), "budget chars")
	// A shorter text that fits still goes in.
	b.do(t, http.MethodPost, "/v1/translations", write, body(t, "translations", edit{pointer: "/data/attributes/input/content", value: "Hi"})).
		requireStatus(t, http.StatusAccepted)

	due, err := b.store.Usage.DueBudgetNotifications(context.Background(), time.Now().Add(time.Minute), 10)
	require.NoError(t, err)
	var crossed []int
	for _, n := range due {
		crossed = append(crossed, n.Threshold)
	}
	require.ElementsMatch(t, []int{50, 80}, crossed, "each threshold queued once")

	// The tenant reads what its budgets used.
	r = b.do(t, http.MethodGet, "/v1/budgets", b.token(t, api.ScopeUsageRead), nil)
	r.requireStatus(t, http.StatusOK)
	requireJSON(t, `[{"type": "budget", "id": "chars", "attributes": {
		"id": "chars", "application": null, "api_key": null, "period": "day", "limit": {"quantity": 25, "unit": "character"}, "thresholds": [50, 80],
		"current": {"period_start": "2025-03-04T00:00:00Z", "period_end": "2025-03-05T00:00:00Z",
			"settled": 0, "reserved": 24, "remaining": 1, "used_percent": 96}}}]`, r.object(t)["data"])

	// Without usage:read, no; a super-admin names the tenant.
	b.do(t, http.MethodGet, "/v1/budgets", write, nil).requireStatus(t, http.StatusForbidden)
	requireError(t, b.do(t, http.MethodGet, "/v1/budgets", admin, nil), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "filter[tenant]")
	r = b.do(t, http.MethodGet, "/v1/budgets?filter[tenant]="+tenantA, admin, nil)
	r.requireStatus(t, http.StatusOK)
	require.Len(t, r.object(t)["data"], 1)
	requireError(t, b.do(t, http.MethodGet, "/v1/budgets?filter[tenant]="+tenantA, b.tokenFor(t, tenantB, userB, api.ScopeUsageRead), nil),
		http.StatusForbidden, "FORBIDDEN", "filter[tenant]")
	r = b.do(t, http.MethodGet, "/v1/budgets", b.tokenFor(t, tenantB, userB, api.ScopeUsageRead), nil)
	r.requireStatus(t, http.StatusOK)
	require.Empty(t, r.object(t)["data"], "a tenant without budgets")
}
