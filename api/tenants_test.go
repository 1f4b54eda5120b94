package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// adminTenant is the tenant of the super-admin tokens these tests mint.
const adminTenant = "platform"

// superAdminToken mints a super-admin token with scopes.
func superAdminToken(t *testing.T, b *bundle, scopes ...string) string {
	t.Helper()
	return b.mint(t, devidp.TokenRequest{Tenant: adminTenant, Subject: "root", Scopes: scopes,
		Roles: []string{auth.RoleSuperAdmin}, Audience: audience})
}

// tenantDoc is a tenant write body; attrs nil leaves attributes out.
func tenantDoc(id string, attrs map[string]any) map[string]any {
	data := map[string]any{"id": id, "type": "tenant"}
	if attrs != nil {
		data["attributes"] = attrs
	}
	return map[string]any{"data": data}
}

// createTenantOK creates a tenant as a super-admin and requires 201.
func createTenantOK(t *testing.T, b *bundle, id string, attrs map[string]any) map[string]any {
	t.Helper()
	r := b.do(t, http.MethodPost, "/v1/tenants", superAdminToken(t, b), tenantDoc(id, attrs))
	r.requireStatus(t, http.StatusCreated)
	return r.data(t)
}

// requireJSON compares a value with a JSON document.
func requireJSON(t *testing.T, want string, got any) {
	t.Helper()
	raw, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, want, string(raw))
}

// noRetention is the retention, fairness and budgets of a tenant that sets none, on a
// deployment without defaults (the harness's).
const noRetention = `"retention": {"results_seconds": null, "jobs_seconds": null, "effective": {"results_seconds": null, "jobs_seconds": null}}, "fairness_weight": 1, "budgets": [], "notification_url": null, "max_in_flight": null`

const somePolicy = "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f"

// seedPolicy stores a gateway-wide policy with the given id, so a tenant
// may name it as its default.
func seedPolicy(t *testing.T, b *bundle, id string) {
	t.Helper()
	_, err := b.store.Routing.CreatePolicy(context.Background(), policy.Policy{ID: id, Name: "default", Strategy: policy.StrategyPrice,
		Providers: []policy.Entry{{ProviderID: "alpha", Priority: 1, Weight: 1}}})
	require.NoError(t, err)
}

func TestCreateTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seedPolicy(t, b, somePolicy)
	admin := superAdminToken(t, b)

	r := b.do(t, http.MethodPost, "/v1/tenants", admin, tenantDoc("acme", map[string]any{
		"default_policy_id": somePolicy,
		"services":          map[string]any{"transcriptions": map[string]any{"enabled": false}, "llm-tasks": map[string]any{"enabled": true}},
		"providers":         map[string]any{"narrow": map[string]any{"enabled": false}},
	}))
	r.requireStatus(t, http.StatusCreated)
	require.Equal(t, "/v1/tenants/acme", r.Header.Get("Location"))
	want := `{"data": {"id": "acme", "type": "tenant", "attributes": {
		"default_policy_id": "` + somePolicy + `",
		"services": {"transcriptions": {"enabled": false}, "llm-tasks": {"enabled": true}},
		"providers": {"narrow": {"enabled": false}}, ` + noRetention + `}}}`
	require.JSONEq(t, want, string(r.Body))

	got := b.do(t, http.MethodGet, "/v1/tenants/acme", admin, nil)
	got.requireStatus(t, http.StatusOK)
	require.JSONEq(t, want, string(got.Body), "the record reads back as created")

	t.Run("minimal", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodPost, "/v1/tenants", admin, tenantDoc("bare-1", nil))
		r.requireStatus(t, http.StatusCreated)
		require.JSONEq(t, `{"data": {"id": "bare-1", "type": "tenant", "attributes": {
			"default_policy_id": null, "services": {}, "providers": {}, `+noRetention+`}}}`, string(r.Body))
	})
	t.Run("longest slug", func(t *testing.T) {
		t.Parallel()
		slug := "a" + strings.Repeat("0", 62)
		createTenantOK(t, b, slug, map[string]any{"default_policy_id": nil})
	})
	t.Run("existing slug", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodPost, "/v1/tenants", admin, tenantDoc("acme", map[string]any{"services": map[string]any{}}))
		requireError(t, r, http.StatusConflict, "CONFLICT")
		require.Empty(t, r.Header.Get("Location"))
		// The record is untouched.
		got := b.do(t, http.MethodGet, "/v1/tenants/acme", admin, nil)
		require.JSONEq(t, want, string(got.Body))
	})
	t.Run("not a super-admin", func(t *testing.T) {
		t.Parallel()
		token := b.token(t, allScopes(auth.ScopeCrossTenant, "services:write", "providers:write")...)
		requireError(t, b.do(t, http.MethodPost, "/v1/tenants", token, tenantDoc("other", nil)), http.StatusForbidden, "FORBIDDEN")
		requireError(t, b.do(t, http.MethodGet, "/v1/tenants/other", admin, nil), http.StatusNotFound, "NOT_FOUND")
	})
	t.Run("no token", func(t *testing.T) {
		t.Parallel()
		requireError(t, b.do(t, http.MethodPost, "/v1/tenants", "", tenantDoc("other", nil)), http.StatusUnauthorized, "UNAUTHORIZED")
	})
}

func TestCreateTenantRejectsInvalidBodies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := superAdminToken(t, b)
	enabled := func(v any) map[string]any { return map[string]any{"enabled": v} }

	requireRejects(t, []rejectCase{
		{name: "malformed JSON", body: `{"data": {"id": "x"`, status: http.StatusBadRequest, code: "MALFORMED_JSON"},
		{name: "array body", body: `[]`, pointers: []string{"/"}},
		{name: "no data", body: `{}`, pointers: []string{"/data"}},
		{name: "data not an object", body: `{"data": "acme"}`, pointers: []string{"/data"}},
		{name: "unknown data member", body: map[string]any{"data": map[string]any{"id": "x1", "type": "tenant", "meta": map[string]any{}}}, pointers: []string{"/data/meta"}},
		{name: "id missing", body: map[string]any{"data": map[string]any{"type": "tenant"}}, pointers: []string{"/data/id"}},
		{name: "id number", body: map[string]any{"data": map[string]any{"id": 7, "type": "tenant"}}, pointers: []string{"/data/id"}},
		{name: "id empty", body: tenantDoc("", nil), pointers: []string{"/data/id"}},
		{name: "id uppercase", body: tenantDoc("Acme", nil), pointers: []string{"/data/id"}},
		{name: "id one character", body: tenantDoc("a", nil), pointers: []string{"/data/id"}},
		{name: "id starts with a digit", body: tenantDoc("1acme", nil), pointers: []string{"/data/id"}},
		{name: "id starts with a hyphen", body: tenantDoc("-acme", nil), pointers: []string{"/data/id"}},
		{name: "id ends with a hyphen", body: tenantDoc("acme-", nil), pointers: []string{"/data/id"}},
		{name: "id with underscore", body: tenantDoc("ac_me", nil), pointers: []string{"/data/id"}},
		{name: "id too long", body: tenantDoc("a"+strings.Repeat("0", 63), nil), pointers: []string{"/data/id"}},
		{name: "type missing", body: map[string]any{"data": map[string]any{"id": "x1"}}, pointers: []string{"/data/type"}},
		{name: "type wrong", body: map[string]any{"data": map[string]any{"id": "x1", "type": "tenants"}}, pointers: []string{"/data/type"}},
		{name: "attributes not an object", body: map[string]any{"data": map[string]any{"id": "x1", "type": "tenant", "attributes": []any{}}}, pointers: []string{"/data/attributes"}},
		{name: "unknown attribute", body: tenantDoc("x1", map[string]any{"name": "X"}), pointers: []string{"/data/attributes/name"}},
		{name: "default_policy_id not a UUID", body: tenantDoc("x1", map[string]any{"default_policy_id": "policy-1"}), pointers: []string{"/data/attributes/default_policy_id"}},
		{name: "default_policy_id number", body: tenantDoc("x1", map[string]any{"default_policy_id": 1}), pointers: []string{"/data/attributes/default_policy_id"}},
		{name: "services array", body: tenantDoc("x1", map[string]any{"services": []any{"transcriptions"}}), pointers: []string{"/data/attributes/services"}},
		{name: "services unknown key", body: tenantDoc("x1", map[string]any{"services": map[string]any{"transcription": enabled(true)}}), pointers: []string{"/data/attributes/services/transcription"}},
		{name: "services entry boolean", body: tenantDoc("x1", map[string]any{"services": map[string]any{"translations": false}}), pointers: []string{"/data/attributes/services/translations"}},
		{name: "services entry without enabled", body: tenantDoc("x1", map[string]any{"services": map[string]any{"translations": map[string]any{}}}), pointers: []string{"/data/attributes/services/translations/enabled"}},
		{name: "services enabled string", body: tenantDoc("x1", map[string]any{"services": map[string]any{"translations": enabled("false")}}), pointers: []string{"/data/attributes/services/translations/enabled"}},
		{name: "services enabled null", body: tenantDoc("x1", map[string]any{"services": map[string]any{"translations": enabled(nil)}}), pointers: []string{"/data/attributes/services/translations/enabled"}},
		{name: "services entry unknown member", body: tenantDoc("x1", map[string]any{"services": map[string]any{"translations": map[string]any{"enabled": true, "status": "active"}}}), pointers: []string{"/data/attributes/services/translations/status"}},
		{name: "providers unknown provider", body: tenantDoc("x1", map[string]any{"providers": map[string]any{"nope": enabled(true)}}), code: "UNKNOWN_PROVIDER", pointers: []string{"/data/attributes/providers/nope"}},
		{name: "providers enabled number", body: tenantDoc("x1", map[string]any{"providers": map[string]any{"alpha": enabled(0)}}), pointers: []string{"/data/attributes/providers/alpha/enabled"}},
	}, func(t *testing.T, body any) *response { return b.do(t, http.MethodPost, "/v1/tenants", admin, body) },
		func(t *testing.T, r *response) { require.Empty(t, r.Header.Get("Location")) })
	t.Cleanup(func() {
		r := b.do(t, http.MethodGet, "/v1/tenants", admin, nil)
		r.requireStatus(t, http.StatusOK)
		require.EqualValues(t, 0, r.object(t)["meta"].(map[string]any)["total"], "no invalid request created a tenant")
	})
}

func TestGetTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	createTenantOK(t, b, tenantA, map[string]any{"services": map[string]any{"translations": map[string]any{"enabled": false}}})
	createTenantOK(t, b, tenantB, nil)
	want := `{"data": {"id": "acme", "type": "tenant", "attributes": {
		"default_policy_id": null, "services": {"translations": {"enabled": false}}, "providers": {}, ` + noRetention + `}}}`

	t.Run("own tenant, no scope needed", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodGet, "/v1/tenants/"+tenantA, b.token(t), nil)
		r.requireStatus(t, http.StatusOK)
		require.JSONEq(t, want, string(r.Body))
	})
	t.Run("super-admin reads any tenant", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodGet, "/v1/tenants/"+tenantA, superAdminToken(t, b), nil)
		r.requireStatus(t, http.StatusOK)
		require.JSONEq(t, want, string(r.Body))
	})
	t.Run("another tenant is not found", func(t *testing.T) {
		t.Parallel()
		// Even with admin:cross-tenant: reading tenants is super-admin or own.
		token := b.tokenFor(t, tenantB, userB, auth.ScopeCrossTenant)
		requireError(t, b.do(t, http.MethodGet, "/v1/tenants/"+tenantA, token, nil), http.StatusNotFound, "NOT_FOUND")
		requireError(t, b.do(t, http.MethodGet, "/v1/tenants/"+tenantA, token, nil, auth.HeaderEffectiveTenant, tenantA), http.StatusNotFound, "NOT_FOUND")
		// The answer is the same as for a tenant that does not exist.
		requireError(t, b.do(t, http.MethodGet, "/v1/tenants/initech", token, nil), http.StatusNotFound, "NOT_FOUND")
	})
	t.Run("own tenant without a record", func(t *testing.T) {
		t.Parallel()
		token := b.tokenFor(t, "initech", "carol")
		requireError(t, b.do(t, http.MethodGet, "/v1/tenants/initech", token, nil), http.StatusNotFound, "NOT_FOUND")
	})
	t.Run("unknown tenant", func(t *testing.T) {
		t.Parallel()
		admin := superAdminToken(t, b)
		for _, slug := range []string{"initech", "ACME", "a"} {
			requireError(t, b.do(t, http.MethodGet, "/v1/tenants/"+slug, admin, nil), http.StatusNotFound, "NOT_FOUND")
		}
	})
}

func TestListTenants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := superAdminToken(t, b)
	for _, id := range []string{"delta", "alpha", "charlie", "bravo", "echo"} {
		createTenantOK(t, b, id, nil)
	}

	t.Run("first page", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodGet, "/v1/tenants?page[size]=2", admin, nil)
		r.requireStatus(t, http.StatusOK)
		doc := r.object(t)
		requireJSON(t, `[
			{"id": "alpha", "type": "tenant", "attributes": {"default_policy_id": null, "services": {}, "providers": {}, `+noRetention+`}},
			{"id": "bravo", "type": "tenant", "attributes": {"default_policy_id": null, "services": {}, "providers": {}, `+noRetention+`}}]`, doc["data"])
		requireJSON(t, `{"total": 5, "page_count": 3, "page": 1, "per_page": 2}`, doc["meta"])
		links := doc["links"].(map[string]any)
		require.Nil(t, links["prev"])
		require.Contains(t, links["next"], "page%5Bnumber%5D=2")
		require.Contains(t, links["last"], "page%5Bnumber%5D=3")
	})
	t.Run("last page", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodGet, "/v1/tenants?page[number]=3&page[size]=2", admin, nil)
		r.requireStatus(t, http.StatusOK)
		doc := r.object(t)
		data := doc["data"].([]any)
		require.Len(t, data, 1)
		require.Equal(t, "echo", data[0].(map[string]any)["id"])
		require.Nil(t, doc["links"].(map[string]any)["next"])
	})
	t.Run("past the last page", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodGet, "/v1/tenants?page[number]=9", admin, nil)
		r.requireStatus(t, http.StatusOK)
		require.Empty(t, r.object(t)["data"])
	})
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodGet, "/v1/tenants", admin, nil)
		r.requireStatus(t, http.StatusOK)
		requireJSON(t, `{"total": 5, "page_count": 1, "page": 1, "per_page": 20}`, r.object(t)["meta"])
	})
	for _, query := range []string{"page[size]=0", "page[size]=101", "page[number]=0", "page[number]=x"} {
		t.Run("invalid "+query, func(t *testing.T) {
			t.Parallel()
			requireError(t, b.do(t, http.MethodGet, "/v1/tenants?"+query, admin, nil), http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		})
	}
	t.Run("not a super-admin", func(t *testing.T) {
		t.Parallel()
		requireError(t, b.do(t, http.MethodGet, "/v1/tenants", b.token(t, auth.ScopeCrossTenant), nil), http.StatusForbidden, "FORBIDDEN")
	})
}

func TestUpdateTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seedPolicy(t, b, somePolicy)
	admin := superAdminToken(t, b)
	path := "/v1/tenants/" + tenantA
	createTenantOK(t, b, tenantA, map[string]any{
		"default_policy_id": somePolicy,
		"services":          map[string]any{"transcriptions": map[string]any{"enabled": false}, "translations": map[string]any{"enabled": true}},
		"providers":         map[string]any{"narrow": map[string]any{"enabled": false}, "alpha": map[string]any{"enabled": true}},
	})
	patch := func(t *testing.T, attrs map[string]any) string {
		t.Helper()
		r := b.do(t, http.MethodPatch, path, admin, tenantDoc(tenantA, attrs))
		r.requireStatus(t, http.StatusOK)
		got := b.do(t, http.MethodGet, path, admin, nil)
		require.JSONEq(t, string(r.Body), string(got.Body), "the answer is what is stored")
		return string(r.Body)
	}

	// One entry changes; every other entry and member is kept.
	require.JSONEq(t, `{"data": {"id": "acme", "type": "tenant", "attributes": {
		"default_policy_id": "`+somePolicy+`",
		"services": {"transcriptions": {"enabled": true}, "translations": {"enabled": true}},
		"providers": {"narrow": {"enabled": false}, "alpha": {"enabled": true}}, `+noRetention+`}}}`,
		patch(t, map[string]any{"services": map[string]any{"transcriptions": map[string]any{"enabled": true}}}))

	// A new entry is added.
	require.JSONEq(t, `{"data": {"id": "acme", "type": "tenant", "attributes": {
		"default_policy_id": "`+somePolicy+`",
		"services": {"transcriptions": {"enabled": true}, "translations": {"enabled": true}, "llm-tasks": {"enabled": false}},
		"providers": {"narrow": {"enabled": false}, "alpha": {"enabled": true}}, `+noRetention+`}}}`,
		patch(t, map[string]any{"services": map[string]any{"llm-tasks": map[string]any{"enabled": false}}}))

	// null clears the default policy; an entry given as null goes back to
	// the platform default.
	require.JSONEq(t, `{"data": {"id": "acme", "type": "tenant", "attributes": {
		"default_policy_id": null,
		"services": {"transcriptions": {"enabled": true}, "translations": {"enabled": true}, "llm-tasks": {"enabled": false}},
		"providers": {"alpha": {"enabled": true}}, `+noRetention+`}}}`,
		patch(t, map[string]any{"default_policy_id": nil, "providers": map[string]any{"narrow": nil}}))

	// No attributes: nothing changes.
	before := b.do(t, http.MethodGet, path, admin, nil).Body
	require.JSONEq(t, string(before), patch(t, nil))

	// A policy id is stored in canonical lowercase.
	upper := strings.ToUpper(somePolicy)
	out := patch(t, map[string]any{"default_policy_id": upper})
	require.Contains(t, out, `"default_policy_id":"`+somePolicy+`"`)

	requireRejects(t, []rejectCase{
		{name: "id mismatch", body: tenantDoc(tenantB, map[string]any{"services": map[string]any{"transcriptions": map[string]any{"enabled": false}}}),
			status: http.StatusUnprocessableEntity, code: "VALIDATION_ERROR", pointers: []string{"/data/id"}},
		{name: "id missing", body: map[string]any{"data": map[string]any{"type": "tenant", "attributes": map[string]any{}}},
			status: http.StatusUnprocessableEntity, code: "VALIDATION_ERROR", pointers: []string{"/data/id"}},
		{name: "invalid entry", body: tenantDoc(tenantA, map[string]any{"services": map[string]any{"transcriptions": map[string]any{"enabled": "no"}}}),
			status: http.StatusUnprocessableEntity, code: "VALIDATION_ERROR", pointers: []string{"/data/attributes/services/transcriptions/enabled"}},
		{name: "unknown provider", body: tenantDoc(tenantA, map[string]any{"providers": map[string]any{"nope": map[string]any{"enabled": true}}}),
			status: http.StatusUnprocessableEntity, code: "UNKNOWN_PROVIDER", pointers: []string{"/data/attributes/providers/nope"}},
	}, func(t *testing.T, body any) *response { return b.do(t, http.MethodPatch, path, admin, body) })
	t.Run("unknown tenant", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodPatch, "/v1/tenants/initech", admin, tenantDoc("initech", map[string]any{}))
		requireError(t, r, http.StatusNotFound, "NOT_FOUND")
	})
	t.Run("own tenant is not enough", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodPatch, path, b.token(t, allScopes(auth.ScopeCrossTenant)...), tenantDoc(tenantA, map[string]any{}))
		requireError(t, r, http.StatusForbidden, "FORBIDDEN")
	})
	t.Cleanup(func() {
		// The rejected requests changed nothing.
		got := b.do(t, http.MethodGet, path, admin, nil)
		require.JSONEq(t, out, string(got.Body))
	})
}

// Settings of a tenant's record gate job creation; keys it does not list,
// and tenants without a record, may use everything.
func TestTenantAccessAtJobCreation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	createTenantOK(t, b, tenantA, map[string]any{
		"services":  map[string]any{"translations": map[string]any{"enabled": false}, "transcriptions": map[string]any{"enabled": true}},
		"providers": map[string]any{"alpha": map[string]any{"enabled": false}, "narrow": map[string]any{"enabled": true}},
	})
	write := b.writeToken(t)
	const providerPointer = "/data/attributes/provider"

	t.Run("service not enabled", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodPost, "/v1/translations", write, body(t, "translations"))
		requireError(t, r, http.StatusForbidden, "SERVICE_NOT_ENABLED", "translations")
		// Naming a provider does not get around it.
		r = b.do(t, http.MethodPost, "/v1/translations", write, body(t, "translations", set(providerPointer, "narrow")))
		requireError(t, r, http.StatusForbidden, "SERVICE_NOT_ENABLED")
	})
	t.Run("provider not enabled", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodPost, "/v1/transcriptions", write, body(t, "transcriptions", set(providerPointer, "alpha")))
		requireError(t, r, http.StatusForbidden, "PROVIDER_NOT_ENABLED", providerPointer)
		r = b.do(t, http.MethodPost, "/v1/llm-tasks", write, body(t, "llm-tasks", set(providerPointer, "alpha")))
		requireError(t, r, http.StatusForbidden, "PROVIDER_NOT_ENABLED", providerPointer)
	})
	t.Run("acting as the tenant", func(t *testing.T) {
		t.Parallel()
		token := b.tokenFor(t, tenantB, userB, allScopes(auth.ScopeCrossTenant)...)
		r := b.do(t, http.MethodPost, "/v1/translations", token, body(t, "translations"), auth.HeaderEffectiveTenant, tenantA)
		requireError(t, r, http.StatusForbidden, "SERVICE_NOT_ENABLED")
	})
	t.Run("enabled and unlisted entries", func(t *testing.T) {
		t.Parallel()
		b.create(t, "transcriptions", write, body(t, "transcriptions", set(providerPointer, "narrow")))
		b.create(t, "transcriptions", write, body(t, "transcriptions"))
		b.create(t, "video-analyses", write, body(t, "video-analyses"))
	})
	t.Run("tenant without a record", func(t *testing.T) {
		t.Parallel()
		token := b.tokenFor(t, tenantB, userB, allScopes()...)
		b.create(t, "translations", token, body(t, "translations", set(providerPointer, "alpha")))
	})
}

// A tenant's access changes take effect for the next job.
func TestTenantAccessFollowsUpdates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := superAdminToken(t, b)
	write := b.writeToken(t)
	createTenantOK(t, b, tenantA, map[string]any{"services": map[string]any{"llm-tasks": map[string]any{"enabled": false}}})

	requireError(t, b.do(t, http.MethodPost, "/v1/llm-tasks", write, body(t, "llm-tasks")), http.StatusForbidden, "SERVICE_NOT_ENABLED")
	require.Empty(t, b.started(), "a rejected job starts no workflow")

	r := b.do(t, http.MethodPatch, "/v1/tenants/"+tenantA, admin, tenantDoc(tenantA, map[string]any{
		"services": map[string]any{"llm-tasks": map[string]any{"enabled": true}}}))
	r.requireStatus(t, http.StatusOK)
	b.create(t, "llm-tasks", write, body(t, "llm-tasks"))
	require.Len(t, b.started(), 1)
}

func TestTenantDefaultPolicyMustExist(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := superAdminToken(t, b)
	r := b.do(t, http.MethodPost, "/v1/tenants", admin, tenantDoc("acme", map[string]any{"default_policy_id": somePolicy}))
	requireError(t, r, http.StatusUnprocessableEntity, "UNKNOWN_POLICY", "/data/attributes/default_policy_id")

	other, err := b.store.Routing.CreatePolicy(context.Background(), policy.Policy{Tenant: "globex", Name: "theirs", Strategy: policy.StrategyPrice})
	require.NoError(t, err)
	r = b.do(t, http.MethodPost, "/v1/tenants", admin, tenantDoc("acme", map[string]any{"default_policy_id": other.ID}))
	requireError(t, r, http.StatusUnprocessableEntity, "UNKNOWN_POLICY", "/data/attributes/default_policy_id")
}

// A tenant's retention settings are set, merged and reset with null; the
// effective values take the deployment's defaults where it sets none.
func TestTenantRetention(t *testing.T) {
	t.Parallel()
	const week = 7 * 24 * 3600
	b := setupConfigured(t, storetest.SQLite, func(cfg *api.Config) {
		cfg.RetentionDefaults = store.RetentionDefaults{Results: week * time.Second}
	})
	admin := superAdminToken(t, b)
	path := "/v1/tenants/" + tenantA
	retention := func(t *testing.T, data map[string]any) any {
		t.Helper()
		return data["attributes"].(map[string]any)["retention"]
	}
	patch := func(t *testing.T, r any) any {
		t.Helper()
		resp := b.do(t, http.MethodPatch, path, admin, tenantDoc(tenantA, map[string]any{"retention": r}))
		resp.requireStatus(t, http.StatusOK)
		got := b.do(t, http.MethodGet, path, admin, nil)
		require.JSONEq(t, string(resp.Body), string(got.Body), "the answer is what is stored")
		return retention(t, resp.data(t))
	}

	created := createTenantOK(t, b, tenantA, map[string]any{"retention": map[string]any{"results_seconds": 3600}})
	requireJSON(t, `{"results_seconds": 3600, "jobs_seconds": null,
		"effective": {"results_seconds": 3600, "jobs_seconds": null}}`, retention(t, created))

	// A member given changes; the other is kept.
	requireJSON(t, `{"results_seconds": 3600, "jobs_seconds": 86400,
		"effective": {"results_seconds": 3600, "jobs_seconds": 86400}}`, patch(t, map[string]any{"jobs_seconds": 86400}))
	// Other attributes leave it alone.
	r := b.do(t, http.MethodPatch, path, admin, tenantDoc(tenantA, map[string]any{"services": map[string]any{"translations": map[string]any{"enabled": false}}}))
	r.requireStatus(t, http.StatusOK)
	requireJSON(t, `{"results_seconds": 3600, "jobs_seconds": 86400,
		"effective": {"results_seconds": 3600, "jobs_seconds": 86400}}`, retention(t, r.data(t)))
	// null goes back to the default, which results cannot outlive their
	// job by.
	requireJSON(t, `{"results_seconds": null, "jobs_seconds": 86400,
		"effective": {"results_seconds": 86400, "jobs_seconds": 86400}}`, patch(t, map[string]any{"results_seconds": nil}))
	// The bounds; equal settings are fine.
	requireJSON(t, `{"results_seconds": 60, "jobs_seconds": 60,
		"effective": {"results_seconds": 60, "jobs_seconds": 60}}`, patch(t, map[string]any{"results_seconds": 60, "jobs_seconds": 60}))
	requireJSON(t, `{"results_seconds": 315360000, "jobs_seconds": 315360000,
		"effective": {"results_seconds": 315360000, "jobs_seconds": 315360000}}`, patch(t, map[string]any{"results_seconds": 315360000, "jobs_seconds": 315360000}))
	// null for the whole object resets both.
	requireJSON(t, `{"results_seconds": null, "jobs_seconds": null,
		"effective": {"results_seconds": 604800, "jobs_seconds": null}}`, patch(t, nil))
	out := patch(t, map[string]any{"results_seconds": 7200, "jobs_seconds": 86400})

	const results, jobs = "/data/attributes/retention/results_seconds", "/data/attributes/retention/jobs_seconds"
	cases := func(id string) []rejectCase {
		withRetention := func(r any) map[string]any { return tenantDoc(id, map[string]any{"retention": r}) }
		return []rejectCase{
			{name: "negative", body: withRetention(map[string]any{"results_seconds": -3600}), pointers: []string{results}},
			{name: "zero", body: withRetention(map[string]any{"jobs_seconds": 0}), pointers: []string{jobs}},
			{name: "too small", body: withRetention(map[string]any{"results_seconds": 59}), pointers: []string{results}},
			{name: "too large", body: withRetention(map[string]any{"jobs_seconds": 315360001}), pointers: []string{jobs}},
			{name: "fraction", body: withRetention(map[string]any{"results_seconds": 3600.5}), pointers: []string{results}},
			{name: "string", body: withRetention(map[string]any{"jobs_seconds": "3600"}), pointers: []string{jobs}},
			{name: "boolean", body: withRetention(map[string]any{"results_seconds": true}), pointers: []string{results}},
			{name: "not an object", body: withRetention(3600), pointers: []string{"/data/attributes/retention"}},
			{name: "unknown member", body: withRetention(map[string]any{"result_seconds": 3600}), pointers: []string{"/data/attributes/retention/result_seconds"}},
			{name: "jobs below results", body: withRetention(map[string]any{"results_seconds": 7200, "jobs_seconds": 3600}), pointers: []string{jobs}},
			// Against the stored settings: 7200 and 86400.
			{name: "jobs below the stored results", body: withRetention(map[string]any{"jobs_seconds": 3600}), pointers: []string{jobs}},
			{name: "results above the stored jobs", body: withRetention(map[string]any{"results_seconds": 86401}), pointers: []string{results}},
		}
	}
	requireRejects(t, cases(tenantA), func(t *testing.T, body any) *response { return b.do(t, http.MethodPatch, path, admin, body) })
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		requireRejects(t, cases("initech")[:10], func(t *testing.T, body any) *response {
			return b.do(t, http.MethodPost, "/v1/tenants", admin, body)
		})
	})
	t.Cleanup(func() {
		// The rejected requests changed nothing and created nothing.
		got := b.do(t, http.MethodGet, path, admin, nil)
		requireJSON(t, `{"results_seconds": 7200, "jobs_seconds": 86400,
			"effective": {"results_seconds": 7200, "jobs_seconds": 86400}}`, retention(t, got.data(t)))
		requireJSON(t, `{"results_seconds": 7200, "jobs_seconds": 86400,
			"effective": {"results_seconds": 7200, "jobs_seconds": 86400}}`, out)
		requireError(t, b.do(t, http.MethodGet, "/v1/tenants/initech", admin, nil), http.StatusNotFound, "NOT_FOUND")
	})
}

// A tenant's own callers read its retention too.
func TestTenantRetentionReadByItsTenant(t *testing.T) {
	t.Parallel()
	b := setupConfigured(t, storetest.SQLite, func(cfg *api.Config) {
		cfg.RetentionDefaults = store.RetentionDefaults{Results: 24 * time.Hour, Jobs: 30 * 24 * time.Hour}
	})
	createTenantOK(t, b, tenantA, map[string]any{"retention": map[string]any{"jobs_seconds": 7 * 24 * 3600}})
	r := b.do(t, http.MethodGet, "/v1/tenants/"+tenantA, b.token(t), nil)
	r.requireStatus(t, http.StatusOK)
	requireJSON(t, `{"results_seconds": null, "jobs_seconds": 604800,
		"effective": {"results_seconds": 86400, "jobs_seconds": 604800}}`, r.data(t)["attributes"].(map[string]any)["retention"])
}

func TestTenantFairnessWeight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := superAdminToken(t, b)
	createTenantOK(t, b, tenantA, map[string]any{"fairness_weight": 2.5})
	got := b.do(t, http.MethodGet, "/v1/tenants/"+tenantA, admin, nil)
	got.requireStatus(t, http.StatusOK)
	require.InDelta(t, 2.5, got.data(t)["attributes"].(map[string]any)["fairness_weight"], 1e-9)

	id := b.create(t, "llm-tasks", b.writeToken(t), map[string]any{"data": map[string]any{"type": "llm-task-job",
		"attributes": map[string]any{"input": map[string]any{"type": "text", "text": "x", "prompt": "y"}}}})["id"].(string)
	priority := b.startedFor(t, id).Options.Priority
	require.Equal(t, tenantA, priority.FairnessKey, "the tenant is the fairness key")
	require.InDelta(t, 2.5, priority.FairnessWeight, 1e-6)

	for _, bad := range []any{0, -1, 0.001, 1001, "2", true} {
		r := b.do(t, http.MethodPatch, "/v1/tenants/"+tenantA, admin, tenantDoc(tenantA, map[string]any{"fairness_weight": bad}))
		requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/fairness_weight")
	}
	r := b.do(t, http.MethodPatch, "/v1/tenants/"+tenantA, admin, tenantDoc(tenantA, map[string]any{"fairness_weight": nil}))
	r.requireStatus(t, http.StatusOK)
	require.EqualValues(t, 1, r.data(t)["attributes"].(map[string]any)["fairness_weight"], "null is the default")

	other := b.create(t, "llm-tasks", b.tokenFor(t, tenantB, userB, "llm-tasks:write"), map[string]any{"data": map[string]any{"type": "llm-task-job",
		"attributes": map[string]any{"input": map[string]any{"type": "text", "text": "x", "prompt": "y"}}}})["id"].(string)
	priority = b.startedFor(t, other).Options.Priority
	require.Equal(t, tenantB, priority.FairnessKey)
	require.InDelta(t, 1, priority.FairnessWeight, 1e-6, "a tenant without a record weighs 1")
}
