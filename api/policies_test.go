package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// polTenantOps is the token tenant of the cross-tenant administrator.
const polTenantOps = "ops"

// polCallers are the tokens the policy tests use.
type polCallers struct {
	acme, acmeRead, globex, admin, superAdmin, adminRead, noTenant, noScope string
}

func polTokens(t *testing.T, b *bundle) polCallers {
	t.Helper()
	rw := []string{"policies:read", "policies:write"}
	return polCallers{
		acme:     b.token(t, rw...),
		acmeRead: b.token(t, "policies:read"),
		globex:   b.tokenFor(t, tenantB, userB, rw...),
		admin:    b.tokenFor(t, polTenantOps, "root", append(rw, "admin:cross-tenant")...),
		superAdmin: b.mint(t, devidp.TokenRequest{Tenant: polTenantOps, Subject: "root", Roles: []string{"super-admin"},
			Scopes: append(rw, "admin:cross-tenant"), Audience: audience}),
		adminRead: b.tokenFor(t, polTenantOps, "root", "policies:read", "admin:cross-tenant"),
		noTenant:  b.mint(t, devidp.TokenRequest{Subject: "tool", Scopes: rw, Audience: audience}),
		noScope:   b.token(t, allScopes()...),
	}
}

// polAttrs are valid create attributes: a transcriptions policy with alpha
// and narrow; edits are applied on top (pointers relative to attributes).
func polAttrs(t *testing.T, edits ...edit) map[string]any {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{
		"name": "Cheap first",
		"description": "narrow before alpha",
		"routing_strategy": "price",
		"service": "transcriptions",
		"providers": [
			{"provider_id": "alpha", "priority": 2, "weight": 3, "conditions": {"max_file_size_mb": 200, "languages": ["en", "pt-BR"]}},
			{"provider_id": "narrow", "priority": 1}
		]}`), &doc))
	for _, e := range edits {
		applyEdit(t, doc, e)
	}
	return doc
}

// polDoc wraps attributes in the request envelope; id is omitted when "".
func polDoc(id string, attrs map[string]any) map[string]any {
	data := map[string]any{"type": "policy", "attributes": attrs}
	if id != "" {
		data["id"] = id
	}
	return map[string]any{"data": data}
}

// polCreate creates a policy and returns its data.
func (b *bundle) polCreate(t *testing.T, token string, attrs map[string]any) map[string]any {
	t.Helper()
	r := b.do(t, http.MethodPost, "/v1/policies", token, polDoc("", attrs))
	r.requireStatus(t, http.StatusCreated)
	return r.data(t)
}

// polGet reads a policy, requiring status, and returns the response.
func (b *bundle) polGet(t *testing.T, token, id string, status int) *response {
	t.Helper()
	r := b.do(t, http.MethodGet, "/v1/policies/"+id, token, nil)
	r.requireStatus(t, status)
	return r
}

func polAttributes(t *testing.T, data map[string]any) map[string]any {
	t.Helper()
	attrs, ok := data["attributes"].(map[string]any)
	require.True(t, ok, "attributes must be an object: %v", data)
	return attrs
}

func polID(t *testing.T, data map[string]any) string {
	t.Helper()
	id, ok := data["id"].(string)
	require.True(t, ok)
	return id
}

// polIDs are the ids of a collection response.
func polIDs(t *testing.T, r *response) []string {
	t.Helper()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &list), "body: %s", r.Body)
	out := []string{}
	for _, d := range list.Data {
		out = append(out, d.ID)
	}
	return out
}

func polTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok, "a timestamp string, not %v", v)
	ts, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return ts
}

func TestPoliciesCreate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	t.Cleanup(func() { b.assertNoStarts(t) })

	r := b.do(t, http.MethodPost, "/v1/policies", tok.acme, polDoc("", polAttrs(t)))
	r.requireStatus(t, http.StatusCreated)
	data := r.data(t)
	id := polID(t, data)
	require.Equal(t, uuid.Version(7), uuid.MustParse(id).Version())
	require.Equal(t, "/v1/policies/"+id, r.Header.Get("Location"))
	require.Equal(t, "policy", data["type"])
	attrs := polAttributes(t, data)
	created := attrs["created_at"]
	require.Equal(t, created, attrs["updated_at"])
	polTime(t, created)
	delete(attrs, "created_at")
	delete(attrs, "updated_at")
	require.Equal(t, map[string]any{
		"tenant":           tenantA,
		"name":             "Cheap first",
		"description":      "narrow before alpha",
		"version":          float64(1),
		"routing_strategy": "price",
		"service":          "transcriptions",
		"application":      nil,
		"providers": []any{ // sorted by priority, weight defaults to 1
			map[string]any{"provider_id": "narrow", "provider_name": "Narrow", "priority": float64(1), "weight": float64(1)},
			map[string]any{"provider_id": "alpha", "provider_name": "Alpha", "priority": float64(2), "weight": float64(3),
				"conditions": map[string]any{"max_file_size_mb": float64(200), "languages": []any{"en", "pt-BR"}}},
		},
	}, attrs)

	got := b.polGet(t, tok.acmeRead, id, http.StatusOK)
	require.JSONEq(t, string(r.Body), string(got.Body), "GET shows what create answered")
	upper := b.polGet(t, tok.acmeRead, strings.ToUpper(id), http.StatusOK)
	require.Equal(t, id, upper.data(t)["id"])

	t.Run("application scope", func(t *testing.T) {
		t.Parallel()
		data := b.polCreate(t, tok.acme, polAttrs(t, set("/application", "mobile-app")))
		attrs := polAttributes(t, data)
		require.Equal(t, "mobile-app", attrs["application"])
		require.Equal(t, "transcriptions", attrs["service"])
		require.NotContains(t, attrs, "services")
	})
	t.Run("providers may be empty", func(t *testing.T) {
		t.Parallel()
		data := b.polCreate(t, tok.acme, polAttrs(t, set("/providers", []any{}), del("/description")))
		attrs := polAttributes(t, data)
		require.Equal(t, []any{}, attrs["providers"])
		require.Equal(t, "", attrs["description"])
	})
	t.Run("a representation can be sent back as is", func(t *testing.T) {
		t.Parallel()
		echoed := polAttributes(t, b.polGet(t, tok.acme, id, http.StatusOK).data(t))
		again := b.polCreate(t, tok.acme, echoed)
		require.NotEqual(t, id, polID(t, again))
		require.Equal(t, float64(1), polAttributes(t, again)["version"])
	})
}

func TestPoliciesCreateConfinement(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	tenantOf := func(t *testing.T, token string, attrs map[string]any, headers ...string) any {
		t.Helper()
		r := b.do(t, http.MethodPost, "/v1/policies", token, polDoc("", attrs), headers...)
		r.requireStatus(t, http.StatusCreated)
		return polAttributes(t, r.data(t))["tenant"]
	}
	forbidden := func(t *testing.T, token string, attrs map[string]any, headers ...string) {
		t.Helper()
		requireError(t, b.do(t, http.MethodPost, "/v1/policies", token, polDoc("", attrs), headers...), http.StatusForbidden, "FORBIDDEN")
	}

	t.Run("regular caller", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, tenantA, tenantOf(t, tok.acme, polAttrs(t)), "an omitted tenant is the token's")
		require.Equal(t, tenantA, tenantOf(t, tok.acme, polAttrs(t, set("/tenant", tenantA))), "naming its own tenant is fine")
		forbidden(t, tok.acme, polAttrs(t, set("/tenant", tenantB)))
		forbidden(t, tok.acme, polAttrs(t, set("/tenant", nil)))
	})
	t.Run("token without tenant", func(t *testing.T) {
		t.Parallel()
		forbidden(t, tok.noTenant, polAttrs(t))
		forbidden(t, tok.noTenant, polAttrs(t, set("/tenant", nil)))
	})
	t.Run("admin:cross-tenant", func(t *testing.T) {
		t.Parallel()
		require.Nil(t, tenantOf(t, tok.admin, polAttrs(t)), "omitted means gateway-wide")
		require.Nil(t, tenantOf(t, tok.admin, polAttrs(t, set("/tenant", nil))), "null means gateway-wide")
		require.Equal(t, tenantB, tenantOf(t, tok.admin, polAttrs(t, set("/tenant", tenantB))))
		requireError(t, b.do(t, http.MethodPost, "/v1/policies", tok.admin, polDoc("", polAttrs(t, set("/tenant", "Not A Slug")))),
			http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/tenant")
	})
	t.Run("X-Effective-Tenant-Id", func(t *testing.T) {
		t.Parallel()
		forbidden(t, tok.acme, polAttrs(t), "X-Effective-Tenant-Id", tenantB)
		// An administrator acting as a tenant is confined to it.
		require.Equal(t, tenantB, tenantOf(t, tok.admin, polAttrs(t), "X-Effective-Tenant-Id", tenantB))
		forbidden(t, tok.admin, polAttrs(t, set("/tenant", tenantA)), "X-Effective-Tenant-Id", tenantB)
	})
	t.Run("scopes", func(t *testing.T) {
		t.Parallel()
		requireError(t, b.do(t, http.MethodPost, "/v1/policies", tok.acmeRead, polDoc("", polAttrs(t))), http.StatusForbidden, "INSUFFICIENT_SCOPE", "policies:write")
		requireError(t, b.do(t, http.MethodGet, "/v1/policies", tok.noScope, nil), http.StatusForbidden, "INSUFFICIENT_SCOPE", "policies:read")
		requireError(t, b.do(t, http.MethodPost, "/v1/policies", "", polDoc("", polAttrs(t))), http.StatusUnauthorized, "UNAUTHORIZED")
	})
}

func TestPoliciesLegacyServicesForm(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	legacy := func(edits ...edit) map[string]any {
		return polAttrs(t, append([]edit{del("/service")}, edits...)...)
	}
	create := func(t *testing.T, attrs map[string]any) map[string]any {
		t.Helper()
		return polAttributes(t, b.polCreate(t, tok.acme, attrs))
	}

	t.Run("several services", func(t *testing.T) {
		t.Parallel()
		attrs := create(t, legacy(set("/services", []any{"transcriptions", "translations"})))
		require.NotContains(t, attrs, "service", "the earlier form carries services in place of service and application")
		require.NotContains(t, attrs, "application")
		require.Equal(t, []any{"transcriptions", "translations"}, attrs["services"])
	})
	t.Run("empty or omitted means every service", func(t *testing.T) {
		t.Parallel()
		for _, attrs := range []map[string]any{legacy(set("/services", []any{})), legacy(), legacy(set("/services", nil))} {
			got := create(t, attrs)
			require.NotContains(t, got, "service")
			require.Equal(t, []any{}, got["services"])
		}
	})
	t.Run("one service is the current form", func(t *testing.T) {
		t.Parallel()
		attrs := create(t, legacy(set("/services", []any{"translations"})))
		require.Equal(t, "translations", attrs["service"])
		require.NotContains(t, attrs, "services")
	})
	t.Run("a provider needs to support one of the services", func(t *testing.T) {
		t.Parallel()
		attrs := create(t, legacy(set("/services", []any{"transcriptions", "llm-tasks"}),
			set("/providers", []any{map[string]any{"provider_id": "llm-only", "priority": 1}})))
		require.Equal(t, []any{"transcriptions", "llm-tasks"}, attrs["services"])
		r := b.do(t, http.MethodPost, "/v1/policies", tok.acme, polDoc("", legacy(set("/services", []any{"transcriptions", "translations"}),
			set("/providers", []any{map[string]any{"provider_id": "alpha", "priority": 1}, map[string]any{"provider_id": "llm-only", "priority": 2}}))))
		requireError(t, r, http.StatusUnprocessableEntity, "UNSUPPORTED_OPTION", "/data/attributes/providers/1/provider_id")
	})
	t.Run("a representation of the earlier form can be sent back", func(t *testing.T) {
		t.Parallel()
		attrs := create(t, legacy(set("/services", []any{"transcriptions", "translations"})))
		again := create(t, attrs)
		require.Equal(t, []any{"transcriptions", "translations"}, again["services"])
	})
	for _, tc := range []struct {
		name    string
		attrs   map[string]any
		pointer string
	}{
		{"both forms", polAttrs(t, set("/services", []any{"transcriptions"})), "/data/attributes/services"},
		{"services with application", legacy(set("/services", []any{"transcriptions"}), set("/application", "web")), "/data/attributes/services"},
		{"unknown service", legacy(set("/services", []any{"transcriptions", "faxes"})), "/data/attributes/services/1"},
		{"repeated service", legacy(set("/services", []any{"translations", "translations"})), "/data/attributes/services/1"},
		{"not an array", legacy(set("/services", "transcriptions")), "/data/attributes/services"},
		{"application without a service", legacy(set("/application", "web")), "/data/attributes/application"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireError(t, b.do(t, http.MethodPost, "/v1/policies", tok.acme, polDoc("", tc.attrs)),
				http.StatusUnprocessableEntity, "VALIDATION_ERROR", tc.pointer)
		})
	}
}

func TestPoliciesValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	t.Cleanup(func() { b.assertNoStarts(t) })
	entry := func(fields ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(fields); i += 2 {
			m[fields[i].(string)] = fields[i+1]
		}
		return m
	}
	providersOf := func(entries ...map[string]any) edit {
		list := make([]any, 0, len(entries))
		for _, e := range entries {
			list = append(list, e)
		}
		return set("/providers", list)
	}
	const p = "/data/attributes"
	cases := []struct {
		name    string
		body    any
		status  int
		code    string
		pointer string
	}{
		{"malformed JSON", `{"data": `, http.StatusBadRequest, "MALFORMED_JSON", ""},
		{"no data", map[string]any{}, 422, "VALIDATION_ERROR", "/data"},
		{"wrong type", map[string]any{"data": map[string]any{"type": "tenant", "attributes": polAttrs(t)}}, 422, "VALIDATION_ERROR", "/data/type"},
		{"id on create", polDoc(uuid.NewString(), polAttrs(t)), 422, "VALIDATION_ERROR", "/data/id"},
		{"no attributes", map[string]any{"data": map[string]any{"type": "policy"}}, 422, "VALIDATION_ERROR", p},
		{"unknown attribute", polDoc("", polAttrs(t, set("/colour", "red"))), 422, "VALIDATION_ERROR", p + "/colour"},
		{"name missing", polDoc("", polAttrs(t, del("/name"))), 422, "VALIDATION_ERROR", p + "/name"},
		{"name empty", polDoc("", polAttrs(t, set("/name", ""))), 422, "VALIDATION_ERROR", p + "/name"},
		{"name blank", polDoc("", polAttrs(t, set("/name", "   "))), 422, "VALIDATION_ERROR", p + "/name"},
		{"name null", polDoc("", polAttrs(t, set("/name", nil))), 422, "VALIDATION_ERROR", p + "/name"},
		{"name too long", polDoc("", polAttrs(t, set("/name", strings.Repeat("n", 256)))), 422, "VALIDATION_ERROR", p + "/name"},
		{"name not a string", polDoc("", polAttrs(t, set("/name", 7))), 422, "VALIDATION_ERROR", p + "/name"},
		{"description not a string", polDoc("", polAttrs(t, set("/description", []any{}))), 422, "VALIDATION_ERROR", p + "/description"},
		{"tenant not a string", polDoc("", polAttrs(t, set("/tenant", 5))), 422, "VALIDATION_ERROR", p + "/tenant"},
		{"strategy missing", polDoc("", polAttrs(t, del("/routing_strategy"))), 422, "VALIDATION_ERROR", p + "/routing_strategy"},
		{"strategy unknown", polDoc("", polAttrs(t, set("/routing_strategy", "fastest"))), 422, "VALIDATION_ERROR", p + "/routing_strategy"},
		{"service unknown", polDoc("", polAttrs(t, set("/service", "faxes"))), 422, "VALIDATION_ERROR", p + "/service"},
		{"application without service", polDoc("", polAttrs(t, del("/service"), set("/application", "web"))), 422, "VALIDATION_ERROR", p + "/application"},
		{"application malformed", polDoc("", polAttrs(t, set("/application", "Web_App"))), 422, "VALIDATION_ERROR", p + "/application"},
		{"application too short", polDoc("", polAttrs(t, set("/application", "w"))), 422, "VALIDATION_ERROR", p + "/application"},
		{"providers missing", polDoc("", polAttrs(t, del("/providers"))), 422, "VALIDATION_ERROR", p + "/providers"},
		{"providers null", polDoc("", polAttrs(t, set("/providers", nil))), 422, "VALIDATION_ERROR", p + "/providers"},
		{"providers not an array", polDoc("", polAttrs(t, set("/providers", map[string]any{}))), 422, "VALIDATION_ERROR", p + "/providers"},
		{"entry not an object", polDoc("", polAttrs(t, set("/providers", []any{"alpha"}))), 422, "VALIDATION_ERROR", p + "/providers/0"},
		{"provider_id missing", polDoc("", polAttrs(t, providersOf(entry("priority", 1)))), 422, "VALIDATION_ERROR", p + "/providers/0/provider_id"},
		{"unknown provider", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 1), entry("provider_id", "ghost", "priority", 2)))),
			422, "UNKNOWN_PROVIDER", p + "/providers/1/provider_id"},
		{"provider twice", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 1), entry("provider_id", "alpha", "priority", 2)))),
			422, "VALIDATION_ERROR", p + "/providers/1/provider_id"},
		{"duplicate priority", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 1), entry("provider_id", "narrow", "priority", 1)))),
			422, "VALIDATION_ERROR", p + "/providers/1/priority"},
		{"priority missing", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha")))), 422, "VALIDATION_ERROR", p + "/providers/0/priority"},
		{"priority zero", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 0)))), 422, "VALIDATION_ERROR", p + "/providers/0/priority"},
		{"priority fractional", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 1.5)))), 422, "VALIDATION_ERROR", p + "/providers/0/priority"},
		{"priority a string", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", "1")))), 422, "VALIDATION_ERROR", p + "/providers/0/priority"},
		{"weight zero", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 1, "weight", 0)))), 422, "VALIDATION_ERROR", p + "/providers/0/weight"},
		{"unknown entry field", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 1, "share", 2)))), 422, "VALIDATION_ERROR", p + "/providers/0/share"},
		{"provider without the service", polDoc("", polAttrs(t, set("/service", "llm-tasks"), providersOf(entry("provider_id", "alpha", "priority", 1), entry("provider_id", "narrow", "priority", 2)))),
			422, "UNSUPPORTED_OPTION", p + "/providers/1/provider_id"},
		{"unknown condition", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 1, "conditions", map[string]any{"max_duration_seconds": 60})))),
			422, "VALIDATION_ERROR", p + "/providers/0/conditions/max_duration_seconds"},
		{"conditions not an object", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 1, "conditions", []any{})))),
			422, "VALIDATION_ERROR", p + "/providers/0/conditions"},
		{"max_file_size_mb zero", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 1, "conditions", map[string]any{"max_file_size_mb": 0})))),
			422, "VALIDATION_ERROR", p + "/providers/0/conditions/max_file_size_mb"},
		{"max_file_size_mb a string", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 1, "conditions", map[string]any{"max_file_size_mb": "10"})))),
			422, "VALIDATION_ERROR", p + "/providers/0/conditions/max_file_size_mb"},
		{"languages empty", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 1, "conditions", map[string]any{"languages": []any{}})))),
			422, "VALIDATION_ERROR", p + "/providers/0/conditions/languages"},
		{"language malformed", polDoc("", polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 1, "conditions", map[string]any{"languages": []any{"en", "not a tag!"}})))),
			422, "VALIDATION_ERROR", p + "/providers/0/conditions/languages/1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := b.do(t, http.MethodPost, "/v1/policies", tok.acme, tc.body)
			if tc.pointer == "" {
				requireError(t, r, tc.status, tc.code)
				return
			}
			requireError(t, r, tc.status, tc.code, tc.pointer)
			got, ok := errorPointer(t, r)
			require.True(t, ok, "error.pointer: %s", r.Body)
			require.Equal(t, tc.pointer, got)
		})
	}
	t.Run("nothing was stored", func(t *testing.T) {
		t.Parallel()
		// Wait for the other subtests by listing after them: subtests of
		// this group run in parallel, so check a fresh bundle's rule
		// instead: an invalid create leaves the list as it was.
		before := polIDs(t, b.do(t, http.MethodGet, "/v1/policies?page[size]=100", tok.globex, nil))
		requireError(t, b.do(t, http.MethodPost, "/v1/policies", tok.globex, polDoc("", polAttrs(t, del("/name")))), 422, "VALIDATION_ERROR")
		require.Equal(t, before, polIDs(t, b.do(t, http.MethodGet, "/v1/policies?page[size]=100", tok.globex, nil)))
	})
	t.Run("conditions {} and null mean none", func(t *testing.T) {
		t.Parallel()
		for _, conditions := range []any{map[string]any{}, nil} {
			data := b.polCreate(t, tok.acme, polAttrs(t, providersOf(entry("provider_id", "alpha", "priority", 1, "conditions", conditions))))
			require.NotContains(t, polAttributes(t, data)["providers"].([]any)[0], "conditions")
		}
	})
}

// polFixture is one tenant's, another tenant's and a gateway-wide policy.
type polFixture struct {
	acme, globex, global string
}

func (b *bundle) polFixture(t *testing.T, tok polCallers) polFixture {
	t.Helper()
	return polFixture{
		acme:   polID(t, b.polCreate(t, tok.acme, polAttrs(t, set("/name", "acme")))),
		globex: polID(t, b.polCreate(t, tok.globex, polAttrs(t, set("/name", "globex")))),
		global: polID(t, b.polCreate(t, tok.admin, polAttrs(t, set("/name", "global")))),
	}
}

func TestPoliciesGet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	f := b.polFixture(t, tok)

	b.polGet(t, tok.acmeRead, f.acme, http.StatusOK)
	global := b.polGet(t, tok.acmeRead, f.global, http.StatusOK)
	require.Nil(t, polAttributes(t, global.data(t))["tenant"], "gateway-wide policies are readable by every tenant")
	requireError(t, b.do(t, http.MethodGet, "/v1/policies/"+f.globex, tok.acmeRead, nil), http.StatusNotFound, "NOT_FOUND")
	b.polGet(t, tok.globex, f.globex, http.StatusOK)
	requireError(t, b.do(t, http.MethodGet, "/v1/policies/"+f.acme, tok.noTenant, nil), http.StatusNotFound, "NOT_FOUND")
	b.polGet(t, tok.noTenant, f.global, http.StatusOK)
	for _, id := range []string{f.acme, f.globex, f.global} {
		b.polGet(t, tok.adminRead, id, http.StatusOK)
	}
	// An administrator acting as a tenant sees what the tenant sees.
	requireError(t, b.do(t, http.MethodGet, "/v1/policies/"+f.globex, tok.adminRead, nil, "X-Effective-Tenant-Id", tenantA), http.StatusNotFound, "NOT_FOUND")
	requireError(t, b.do(t, http.MethodGet, "/v1/policies/"+f.acme, tok.acmeRead, nil, "X-Effective-Tenant-Id", tenantA), http.StatusForbidden, "FORBIDDEN")
	for _, id := range []string{"nope", uuid.NewString(), uuid.Must(uuid.NewV7()).String(), strings.ReplaceAll(f.acme, "-", "")} {
		requireError(t, b.do(t, http.MethodGet, "/v1/policies/"+id, tok.adminRead, nil), http.StatusNotFound, "NOT_FOUND")
	}
}

func TestPoliciesList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	f := b.polFixture(t, tok)
	newer := polID(t, b.polCreate(t, tok.acme, polAttrs(t, set("/name", "acme newer"))))

	list := func(t *testing.T, token, query string) []string {
		t.Helper()
		r := b.do(t, http.MethodGet, "/v1/policies"+query, token, nil)
		r.requireStatus(t, http.StatusOK)
		return polIDs(t, r)
	}
	require.Equal(t, []string{newer, f.global, f.acme}, list(t, tok.acmeRead, ""), "own and gateway-wide policies, newest first")
	require.Equal(t, []string{f.global, f.globex}, list(t, tok.globex, ""))
	require.Equal(t, []string{f.global}, list(t, tok.noTenant, ""), "no tenant claim: only gateway-wide policies")
	require.Equal(t, []string{newer, f.global, f.globex, f.acme}, list(t, tok.adminRead, ""), "every policy")
	require.Equal(t, []string{f.globex}, list(t, tok.adminRead, "?filter[tenant]="+tenantB), "one tenant's, without gateway-wide ones")
	require.Equal(t, []string{newer, f.acme}, list(t, tok.adminRead, "?filter[tenant]="+tenantA))
	require.Empty(t, list(t, tok.adminRead, "?filter[tenant]=initech"))

	t.Run("an administrator acting as a tenant is confined to it", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodGet, "/v1/policies", tok.adminRead, nil, "X-Effective-Tenant-Id", tenantA)
		r.requireStatus(t, http.StatusOK)
		require.Equal(t, []string{newer, f.global, f.acme}, polIDs(t, r))
		requireError(t, b.do(t, http.MethodGet, "/v1/policies?filter[tenant]="+tenantB, tok.adminRead, nil, "X-Effective-Tenant-Id", tenantA),
			http.StatusForbidden, "FORBIDDEN")
		requireError(t, b.do(t, http.MethodGet, "/v1/policies", tok.acmeRead, nil, "X-Effective-Tenant-Id", tenantB), http.StatusForbidden, "FORBIDDEN")
	})

	t.Run("filter[tenant] needs admin:cross-tenant", func(t *testing.T) {
		t.Parallel()
		for _, tenant := range []string{tenantA, tenantB, ""} {
			requireError(t, b.do(t, http.MethodGet, "/v1/policies?filter[tenant]="+tenant, tok.acmeRead, nil), http.StatusForbidden, "FORBIDDEN", "filter[tenant]")
		}
		requireError(t, b.do(t, http.MethodGet, "/v1/policies?filter[tenant]=", tok.adminRead, nil), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "filter[tenant]")
	})
	t.Run("pagination", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodGet, "/v1/policies?page[size]=2&page[number]=2", tok.adminRead, nil)
		r.requireStatus(t, http.StatusOK)
		require.Equal(t, []string{f.globex, f.acme}, polIDs(t, r))
		var page struct {
			Meta  map[string]any `json:"meta"`
			Links map[string]any `json:"links"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &page))
		require.Equal(t, map[string]any{"total": float64(4), "page_count": float64(2), "page": float64(2), "per_page": float64(2)}, page.Meta)
		require.Nil(t, page.Links["next"])
		require.Contains(t, page.Links["prev"], "page%5Bnumber%5D=1")
		past := b.do(t, http.MethodGet, "/v1/policies?page[number]=9", tok.adminRead, nil)
		past.requireStatus(t, http.StatusOK)
		require.Empty(t, polIDs(t, past))
		for _, q := range []string{"page[number]=0", "page[size]=101", "page[size]=x"} {
			requireError(t, b.do(t, http.MethodGet, "/v1/policies?"+q, tok.acmeRead, nil), http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		}
	})
}

func TestPoliciesReplace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	put := func(t *testing.T, token, id string, body any, headers ...string) *response {
		t.Helper()
		return b.do(t, http.MethodPut, "/v1/policies/"+id, token, body, headers...)
	}

	t.Run("replaces every field and increments the version", func(t *testing.T) {
		t.Parallel()
		created := b.polCreate(t, tok.acme, polAttrs(t, set("/application", "mobile")))
		id := polID(t, created)
		r := put(t, tok.acme, id, polDoc(id, map[string]any{
			"name": "Quality", "routing_strategy": "quality", "service": "translations",
			"providers": []any{map[string]any{"provider_id": "alpha", "priority": 5}},
		}))
		r.requireStatus(t, http.StatusOK)
		attrs := polAttributes(t, r.data(t))
		before := polAttributes(t, created)
		require.Equal(t, float64(2), attrs["version"])
		require.Equal(t, "Quality", attrs["name"])
		require.Equal(t, "", attrs["description"], "an omitted description is cleared")
		require.Nil(t, attrs["application"], "an omitted application means service level")
		require.Equal(t, "translations", attrs["service"])
		require.Equal(t, tenantA, attrs["tenant"], "an omitted tenant keeps the owner")
		require.Equal(t, []any{map[string]any{"provider_id": "alpha", "provider_name": "Alpha", "priority": float64(5), "weight": float64(1)}}, attrs["providers"])
		require.Equal(t, before["created_at"], attrs["created_at"])
		require.True(t, polTime(t, attrs["updated_at"]).After(polTime(t, before["updated_at"])))
		require.JSONEq(t, string(r.Body), string(b.polGet(t, tok.acme, id, http.StatusOK).Body))

		again := put(t, tok.acme, strings.ToUpper(id), polDoc(strings.ToUpper(id), polAttrs(t)))
		again.requireStatus(t, http.StatusOK)
		require.Equal(t, float64(3), polAttributes(t, again.data(t))["version"])
	})
	t.Run("body errors", func(t *testing.T) {
		t.Parallel()
		id := polID(t, b.polCreate(t, tok.acme, polAttrs(t)))
		requireError(t, put(t, tok.acme, id, polDoc(uuid.NewString(), polAttrs(t))), 422, "VALIDATION_ERROR", "/data/id")
		requireError(t, put(t, tok.acme, id, polDoc("", polAttrs(t))), 422, "VALIDATION_ERROR", "/data/id")
		requireError(t, put(t, tok.acme, id, polDoc(id, polAttrs(t, del("/name")))), 422, "VALIDATION_ERROR", "/data/attributes/name")
		requireError(t, put(t, tok.acme, id, polDoc(id, polAttrs(t, del("/routing_strategy")))), 422, "VALIDATION_ERROR", "/data/attributes/routing_strategy")
		requireError(t, put(t, tok.acme, id, polDoc(id, polAttrs(t, del("/providers")))), 422, "VALIDATION_ERROR", "/data/attributes/providers")
		requireError(t, put(t, tok.acme, id, polDoc(id, polAttrs(t, set("/providers/1/priority", 2)))), 422, "VALIDATION_ERROR", "/data/attributes/providers/1/priority")
		requireError(t, put(t, tok.acme, id, `{"data":`), http.StatusBadRequest, "MALFORMED_JSON")
		require.Equal(t, float64(1), polAttributes(t, b.polGet(t, tok.acme, id, http.StatusOK).data(t))["version"], "failed writes leave the version")
	})
	t.Run("not found", func(t *testing.T) {
		t.Parallel()
		id := uuid.Must(uuid.NewV7()).String()
		requireError(t, put(t, tok.admin, id, polDoc(id, polAttrs(t))), http.StatusNotFound, "NOT_FOUND")
		requireError(t, put(t, tok.admin, "nope", polDoc("nope", polAttrs(t))), http.StatusNotFound, "NOT_FOUND")
	})
	t.Run("confinement", func(t *testing.T) {
		t.Parallel()
		f := b.polFixture(t, tok)
		requireError(t, put(t, tok.acme, f.global, polDoc(f.global, polAttrs(t))), http.StatusForbidden, "FORBIDDEN")
		requireError(t, put(t, tok.acme, f.globex, polDoc(f.globex, polAttrs(t))), http.StatusNotFound, "NOT_FOUND")
		requireError(t, put(t, tok.acme, f.acme, polDoc(f.acme, polAttrs(t, set("/tenant", tenantB)))), http.StatusForbidden, "FORBIDDEN")
		requireError(t, put(t, tok.acme, f.acme, polDoc(f.acme, polAttrs(t, set("/tenant", nil)))), http.StatusForbidden, "FORBIDDEN")
		requireError(t, put(t, tok.acmeRead, f.acme, polDoc(f.acme, polAttrs(t))), http.StatusForbidden, "INSUFFICIENT_SCOPE", "policies:write")
		r := put(t, tok.acme, f.acme, polDoc(f.acme, polAttrs(t, set("/tenant", tenantA))))
		r.requireStatus(t, http.StatusOK)
		require.Equal(t, tenantA, polAttributes(t, r.data(t))["tenant"])
	})
	t.Run("a super-admin changes the scope", func(t *testing.T) {
		t.Parallel()
		f := b.polFixture(t, tok)
		requireError(t, put(t, tok.admin, f.acme, polDoc(f.acme, polAttrs(t, set("/tenant", tenantB)))), http.StatusForbidden, "FORBIDDEN",
			ptrAttrs+"/tenant")
		r := put(t, tok.superAdmin, f.acme, polDoc(f.acme, polAttrs(t, set("/tenant", tenantB))))
		r.requireStatus(t, http.StatusOK)
		require.Equal(t, tenantB, polAttributes(t, r.data(t))["tenant"])
		requireError(t, b.do(t, http.MethodGet, "/v1/policies/"+f.acme, tok.acme, nil), http.StatusNotFound, "NOT_FOUND")
		b.polGet(t, tok.globex, f.acme, http.StatusOK)

		r = put(t, tok.superAdmin, f.globex, polDoc(f.globex, polAttrs(t, set("/tenant", nil))))
		r.requireStatus(t, http.StatusOK)
		require.Nil(t, polAttributes(t, r.data(t))["tenant"], "null makes it gateway-wide")
		b.polGet(t, tok.acme, f.globex, http.StatusOK)

		r = put(t, tok.superAdmin, f.global, polDoc(f.global, polAttrs(t, set("/tenant", tenantA))))
		r.requireStatus(t, http.StatusOK)
		require.Equal(t, tenantA, polAttributes(t, r.data(t))["tenant"])
		r = put(t, tok.superAdmin, f.global, polDoc(f.global, polAttrs(t)))
		r.requireStatus(t, http.StatusOK)
		require.Equal(t, tenantA, polAttributes(t, r.data(t))["tenant"], "an omitted tenant keeps the owner, also for administrators")
	})
}

func TestPoliciesPatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	patch := func(t *testing.T, token, id string, attrs map[string]any) *response {
		t.Helper()
		return b.do(t, http.MethodPatch, "/v1/policies/"+id, token, polDoc(id, attrs))
	}
	patched := func(t *testing.T, id string, attrs map[string]any) map[string]any {
		t.Helper()
		r := patch(t, tok.acme, id, attrs)
		r.requireStatus(t, http.StatusOK)
		return polAttributes(t, r.data(t))
	}

	t.Run("only given fields change", func(t *testing.T) {
		t.Parallel()
		data := b.polCreate(t, tok.acme, polAttrs(t, set("/application", "mobile")))
		id, before := polID(t, data), polAttributes(t, data)
		after := patched(t, id, map[string]any{"name": "Renamed"})
		require.Equal(t, float64(2), after["version"])
		require.Equal(t, "Renamed", after["name"])
		for _, key := range []string{"tenant", "description", "routing_strategy", "service", "application", "providers", "created_at"} {
			require.Equal(t, before[key], after[key], key)
		}
		require.True(t, polTime(t, after["updated_at"]).After(polTime(t, before["updated_at"])))

		after = patched(t, id, map[string]any{"providers": []any{map[string]any{"provider_id": "alpha", "priority": 9, "weight": 4}}})
		require.Equal(t, float64(3), after["version"])
		require.Equal(t, []any{map[string]any{"provider_id": "alpha", "provider_name": "Alpha", "priority": float64(9), "weight": float64(4)}},
			after["providers"], "a given providers list replaces the whole list")
		require.Equal(t, "Renamed", after["name"])

		after = patched(t, id, map[string]any{"description": nil, "application": nil})
		require.Equal(t, "", after["description"])
		require.Nil(t, after["application"])
		require.Equal(t, "transcriptions", after["service"])

		after = patched(t, id, map[string]any{})
		require.Equal(t, float64(5), after["version"], "every update is a version, even one that changes nothing")
	})
	t.Run("switching between the forms", func(t *testing.T) {
		t.Parallel()
		id := polID(t, b.polCreate(t, tok.acme, polAttrs(t, set("/application", "mobile"))))
		after := patched(t, id, map[string]any{"services": []any{"transcriptions", "translations"}})
		require.Nil(t, after["service"])
		require.Nil(t, after["application"], "the earlier form has no application")
		require.Equal(t, []any{"transcriptions", "translations"}, after["services"])
		after = patched(t, id, map[string]any{"service": "translations", "application": "web"})
		require.Equal(t, "translations", after["service"])
		require.Equal(t, "web", after["application"])
		require.NotContains(t, after, "services")
	})
	t.Run("the result is validated as a whole", func(t *testing.T) {
		t.Parallel()
		id := polID(t, b.polCreate(t, tok.acme, polAttrs(t)))
		requireError(t, patch(t, tok.acme, id, map[string]any{"service": "llm-tasks"}), 422, "UNSUPPORTED_OPTION", "/data/attributes/providers/0/provider_id")
		requireError(t, patch(t, tok.acme, id, map[string]any{"service": nil, "application": "web"}), 422, "VALIDATION_ERROR", "/data/attributes/application")
		requireError(t, patch(t, tok.acme, id, map[string]any{"name": nil}), 422, "VALIDATION_ERROR", "/data/attributes/name")
		requireError(t, patch(t, tok.acme, id, map[string]any{"name": ""}), 422, "VALIDATION_ERROR", "/data/attributes/name")
		requireError(t, patch(t, tok.acme, id, map[string]any{"routing_strategy": nil}), 422, "VALIDATION_ERROR", "/data/attributes/routing_strategy")
		requireError(t, patch(t, tok.acme, id, map[string]any{"providers": nil}), 422, "VALIDATION_ERROR", "/data/attributes/providers")
		requireError(t, patch(t, tok.acme, id, map[string]any{"services": []any{"llm-tasks"}}), 422, "UNSUPPORTED_OPTION", "/data/attributes/providers/0/provider_id")
		requireError(t, patch(t, tok.acme, id, map[string]any{"service": "translations", "services": []any{"translations"}}), 422, "VALIDATION_ERROR", "/data/attributes/services")
		requireError(t, b.do(t, http.MethodPatch, "/v1/policies/"+id, tok.acme, polDoc(uuid.NewString(), map[string]any{})), 422, "VALIDATION_ERROR", "/data/id")
		require.Equal(t, float64(1), polAttributes(t, b.polGet(t, tok.acme, id, http.StatusOK).data(t))["version"])

		after := patched(t, id, map[string]any{"service": "llm-tasks", "providers": []any{map[string]any{"provider_id": "llm-only", "priority": 1}}})
		require.Equal(t, "llm-tasks", after["service"], "service and providers change together")
	})
	t.Run("confinement", func(t *testing.T) {
		t.Parallel()
		f := b.polFixture(t, tok)
		requireError(t, patch(t, tok.acme, f.global, map[string]any{"name": "mine"}), http.StatusForbidden, "FORBIDDEN")
		requireError(t, patch(t, tok.acme, f.globex, map[string]any{"name": "mine"}), http.StatusNotFound, "NOT_FOUND")
		requireError(t, patch(t, tok.acme, f.acme, map[string]any{"tenant": tenantB}), http.StatusForbidden, "FORBIDDEN")
		requireError(t, patch(t, tok.acme, uuid.NewString(), map[string]any{"name": "x"}), http.StatusNotFound, "NOT_FOUND")
		r := patch(t, tok.superAdmin, f.globex, map[string]any{"tenant": tenantA})
		r.requireStatus(t, http.StatusOK)
		require.Equal(t, tenantA, polAttributes(t, r.data(t))["tenant"])
		require.Equal(t, "globex", polAttributes(t, r.data(t))["name"])
		r = patch(t, tok.admin, f.global, map[string]any{"name": "global v2"})
		r.requireStatus(t, http.StatusOK)
		require.Nil(t, polAttributes(t, r.data(t))["tenant"])
	})
}

func TestPoliciesDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	f := b.polFixture(t, tok)
	del := func(token, id string) *response { return b.do(t, http.MethodDelete, "/v1/policies/"+id, token, nil) }

	requireError(t, del(tok.acme, f.global), http.StatusForbidden, "FORBIDDEN")
	requireError(t, del(tok.acme, f.globex), http.StatusNotFound, "NOT_FOUND")
	requireError(t, del(tok.acmeRead, f.acme), http.StatusForbidden, "INSUFFICIENT_SCOPE", "policies:write")
	requireError(t, del(tok.acme, "nope"), http.StatusNotFound, "NOT_FOUND")

	r := del(tok.acme, f.acme)
	require.Equal(t, http.StatusNoContent, r.Status)
	require.Empty(t, r.Body)
	requireError(t, b.do(t, http.MethodGet, "/v1/policies/"+f.acme, tok.acme, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, del(tok.acme, f.acme), http.StatusNotFound, "NOT_FOUND")
	require.NotContains(t, polIDs(t, b.do(t, http.MethodGet, "/v1/policies", tok.acme, nil)), f.acme)

	// Its versions stay readable: jobs routed with it keep pointing at them.
	v := b.do(t, http.MethodGet, "/v1/policies/"+f.acme+"/versions/1", tok.acme, nil)
	v.requireStatus(t, http.StatusOK)
	require.Equal(t, "acme", polAttributes(t, v.data(t))["name"])

	require.Equal(t, http.StatusNoContent, del(tok.admin, f.globex).Status)
	require.Equal(t, http.StatusNoContent, del(tok.admin, f.global).Status)
	require.Empty(t, polIDs(t, b.do(t, http.MethodGet, "/v1/policies", tok.adminRead, nil)))
}

func TestPoliciesVersions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	data := b.polCreate(t, tok.acme, polAttrs(t, set("/name", "v1")))
	id := polID(t, data)
	v1 := polAttributes(t, data)
	for _, name := range []string{"v2", "v3"} {
		b.do(t, http.MethodPatch, "/v1/policies/"+id, tok.acme, polDoc(id, map[string]any{"name": name})).requireStatus(t, http.StatusOK)
	}
	path := "/v1/policies/" + id + "/versions"

	r := b.do(t, http.MethodGet, path, tok.acmeRead, nil)
	r.requireStatus(t, http.StatusOK)
	var list struct {
		Data []map[string]any `json:"data"`
		Meta map[string]any   `json:"meta"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &list))
	require.Len(t, list.Data, 3)
	for i, want := range []string{"v3", "v2", "v1"} {
		attrs := polAttributes(t, list.Data[i])
		require.Equal(t, id, list.Data[i]["id"])
		require.Equal(t, want, attrs["name"], "newest first")
		require.Equal(t, float64(3-i), attrs["version"])
	}
	require.Equal(t, float64(3), list.Meta["total"])

	got := b.do(t, http.MethodGet, path+"/1", tok.acmeRead, nil)
	got.requireStatus(t, http.StatusOK)
	require.Equal(t, v1, polAttributes(t, got.data(t)), "version 1 is unchanged by later updates")
	page := b.do(t, http.MethodGet, path+"?page[size]=1&page[number]=3", tok.acmeRead, nil)
	page.requireStatus(t, http.StatusOK)
	require.Len(t, polIDs(t, page), 1)

	for _, v := range []string{"0", "4", "x", "-1"} {
		requireError(t, b.do(t, http.MethodGet, path+"/"+v, tok.acmeRead, nil), http.StatusNotFound, "NOT_FOUND")
	}
	requireError(t, b.do(t, http.MethodGet, path, tok.globex, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, b.do(t, http.MethodGet, path+"/1", tok.globex, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, b.do(t, http.MethodGet, "/v1/policies/"+uuid.NewString()+"/versions", tok.adminRead, nil), http.StatusNotFound, "NOT_FOUND")
	b.do(t, http.MethodGet, path+"/2", tok.adminRead, nil).requireStatus(t, http.StatusOK)
	requireError(t, b.do(t, http.MethodGet, path+"?page[size]=0", tok.acmeRead, nil), http.StatusUnprocessableEntity, "VALIDATION_ERROR")
}

func TestScopedPolicies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	const path = "/v1/services/transcriptions/applications/mobile/policy"
	resolve := func(t *testing.T, token, path string) (string, any) {
		t.Helper()
		r := b.do(t, http.MethodGet, path, token, nil)
		r.requireStatus(t, http.StatusOK)
		data := r.data(t)
		meta, _ := data["meta"].(map[string]any)
		return polID(t, data), meta["resolved_from"]
	}
	put := func(t *testing.T, token, path string, body any, headers ...string) *response {
		t.Helper()
		return b.do(t, http.MethodPut, path, token, body, headers...)
	}
	scopedAttrs := func(edits ...edit) map[string]any { return polAttrs(t, append([]edit{del("/service")}, edits...)...) }

	// Nothing applies yet.
	requireError(t, b.do(t, http.MethodGet, path, tok.acmeRead, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, b.do(t, http.MethodDelete, path, tok.acme, nil), http.StatusNotFound, "NOT_FOUND")

	// The chain's last step: the gateway-wide service-level policy.
	globalService := polID(t, b.polCreate(t, tok.admin, polAttrs(t, set("/name", "global service"))))
	b.polCreate(t, tok.admin, polAttrs(t, set("/service", "translations"), set("/name", "global translations")))
	b.polCreate(t, tok.acme, polAttrs(t, set("/application", "web"), set("/name", "acme web")))
	b.polCreate(t, tok.globex, polAttrs(t, set("/application", "mobile"), set("/name", "globex mobile")))
	id, from := resolve(t, tok.acmeRead, path)
	require.Equal(t, globalService, id)
	require.Equal(t, "global_service", from)

	// Then the gateway-wide application default.
	globalApp := polID(t, b.polCreate(t, tok.admin, polAttrs(t, set("/application", "mobile"), set("/name", "global mobile"))))
	id, from = resolve(t, tok.acmeRead, path)
	require.Equal(t, globalApp, id)
	require.Equal(t, "global_application", from)

	// The tenant's own record: PUT creates it with the scope of the path
	// and the token.
	r := put(t, tok.acme, path, polDoc("", scopedAttrs(set("/name", "acme mobile"))))
	r.requireStatus(t, http.StatusOK)
	created := r.data(t)
	own := polID(t, created)
	attrs := polAttributes(t, created)
	require.Equal(t, tenantA, attrs["tenant"])
	require.Equal(t, "transcriptions", attrs["service"])
	require.Equal(t, "mobile", attrs["application"])
	require.Equal(t, float64(1), attrs["version"])
	id, from = resolve(t, tok.acmeRead, path)
	require.Equal(t, own, id)
	require.Equal(t, "tenant", from)

	// A second PUT replaces it: same id, next version.
	r = put(t, tok.acme, path, polDoc(own, scopedAttrs(set("/name", "acme mobile v2"), set("/tenant", tenantA),
		set("/service", "transcriptions"), set("/application", "mobile"))))
	r.requireStatus(t, http.StatusOK)
	require.Equal(t, own, polID(t, r.data(t)))
	require.Equal(t, float64(2), polAttributes(t, r.data(t))["version"])
	require.Equal(t, "acme mobile v2", polAttributes(t, r.data(t))["name"])
	r = put(t, tok.acme, path, polDoc("", scopedAttrs(set("/name", "acme mobile v3"), set("/description", nil))))
	r.requireStatus(t, http.StatusOK)
	require.Equal(t, own, polID(t, r.data(t)))
	require.Equal(t, float64(3), polAttributes(t, r.data(t))["version"])
	require.Equal(t, "", polAttributes(t, r.data(t))["description"])

	// Other tenants and applications resolve on their own.
	id, _ = resolve(t, tok.globex, path)
	require.NotEqual(t, own, id)
	id, from = resolve(t, tok.acmeRead, "/v1/services/transcriptions/applications/backoffice/policy")
	require.Equal(t, globalService, id)
	require.Equal(t, "global_service", from)

	t.Run("PUT body errors", func(t *testing.T) {
		t.Parallel()
		requireError(t, put(t, tok.acme, path, polDoc("", scopedAttrs(set("/tenant", tenantB)))), http.StatusForbidden, "FORBIDDEN")
		requireError(t, put(t, tok.acme, path, polDoc("", scopedAttrs(set("/service", "translations")))), 422, "VALIDATION_ERROR", "/data/attributes/service")
		requireError(t, put(t, tok.acme, path, polDoc("", scopedAttrs(set("/application", "web")))), 422, "VALIDATION_ERROR", "/data/attributes/application")
		requireError(t, put(t, tok.acme, path, polDoc(globalApp, scopedAttrs())), 422, "VALIDATION_ERROR", "/data/id")
		requireError(t, put(t, tok.acme, path, polDoc("", scopedAttrs(del("/name")))), 422, "VALIDATION_ERROR", "/data/attributes/name")
		requireError(t, put(t, tok.acme, "/v1/services/llm-tasks/applications/mobile/policy", polDoc("", scopedAttrs())), 422, "UNSUPPORTED_OPTION", "/data/attributes/providers/1/provider_id")
		requireError(t, put(t, tok.acme, "/v1/services/transcriptions/applications/Mobile_App/policy", polDoc("", scopedAttrs())), 422, "VALIDATION_ERROR", "path app")
	})
	t.Run("the token's tenant and nothing else", func(t *testing.T) {
		t.Parallel()
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
			body := any(nil)
			if method == http.MethodPut {
				body = polDoc("", scopedAttrs())
			}
			requireError(t, b.do(t, method, path, tok.admin, body, "X-Effective-Tenant-Id", tenantA), http.StatusForbidden, "FORBIDDEN", "X-Effective-Tenant-Id")
			requireError(t, b.do(t, method, path, tok.acme, body, "X-Effective-Tenant-Id", tenantB), http.StatusForbidden, "FORBIDDEN")
			requireError(t, b.do(t, method, path+"?filter[tenant]="+tenantB, tok.admin, body), http.StatusForbidden, "FORBIDDEN", "filter[tenant]")
			requireError(t, b.do(t, method, path, tok.noTenant, body), http.StatusForbidden, "FORBIDDEN")
			requireError(t, b.do(t, method, "/v1/services/faxes/applications/mobile/policy", tok.admin, body), http.StatusNotFound, "NOT_FOUND")
		}
		requireError(t, b.do(t, http.MethodGet, "/v1/services/transcriptions/applications/Mobile_App/policy", tok.acme, nil), http.StatusNotFound, "NOT_FOUND")
		requireError(t, b.do(t, http.MethodDelete, "/v1/services/transcriptions/applications/x/policy", tok.acme, nil), http.StatusNotFound, "NOT_FOUND")
		requireError(t, b.do(t, http.MethodPut, path, tok.acmeRead, polDoc("", scopedAttrs())), http.StatusForbidden, "INSUFFICIENT_SCOPE", "policies:write")
		requireError(t, b.do(t, http.MethodDelete, path, tok.acmeRead, nil), http.StatusForbidden, "INSUFFICIENT_SCOPE", "policies:write")
		requireError(t, b.do(t, http.MethodGet, path, tok.noScope, nil), http.StatusForbidden, "INSUFFICIENT_SCOPE", "policies:read")
	})
	t.Run("an administrator's scoped policy is its token tenant's", func(t *testing.T) {
		t.Parallel()
		r := put(t, tok.admin, "/v1/services/translations/applications/mobile/policy", polDoc("", scopedAttrs()))
		r.requireStatus(t, http.StatusOK)
		require.Equal(t, polTenantOps, polAttributes(t, r.data(t))["tenant"])
	})
	t.Run("a resolved gateway-wide policy sent back becomes the tenant's own", func(t *testing.T) {
		t.Parallel()
		const webPath = "/v1/services/transcriptions/applications/reports/policy"
		got := b.do(t, http.MethodGet, webPath, tok.globex, nil)
		got.requireStatus(t, http.StatusOK)
		fallback := got.data(t)
		require.Equal(t, globalService, polID(t, fallback))
		r := put(t, tok.globex, webPath, map[string]any{"data": fallback})
		r.requireStatus(t, http.StatusOK)
		copied := r.data(t)
		require.NotEqual(t, globalService, polID(t, copied))
		require.Equal(t, tenantB, polAttributes(t, copied)["tenant"])
		require.Equal(t, "reports", polAttributes(t, copied)["application"])
		require.Equal(t, float64(1), polAttributes(t, copied)["version"])
		global := b.polGet(t, tok.adminRead, globalService, http.StatusOK)
		require.Nil(t, polAttributes(t, global.data(t))["tenant"], "the template is untouched")
		require.Equal(t, float64(1), polAttributes(t, global.data(t))["version"])
	})
}

// TestScopedPolicyDelete deletes only the tenant's exact record, never a
// fallback.
func TestScopedPolicyDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	const path = "/v1/services/transcriptions/applications/mobile/policy"
	globalApp := polID(t, b.polCreate(t, tok.admin, polAttrs(t, set("/application", "mobile"))))
	serviceLevel := polID(t, b.polCreate(t, tok.acme, polAttrs(t)))

	requireError(t, b.do(t, http.MethodDelete, path, tok.acme, nil), http.StatusNotFound, "NOT_FOUND")
	b.polGet(t, tok.adminRead, globalApp, http.StatusOK)

	r := b.do(t, http.MethodPut, path, tok.acme, polDoc("", polAttrs(t, del("/service"))))
	r.requireStatus(t, http.StatusOK)
	own := polID(t, r.data(t))
	// Another tenant's delete does not touch it.
	requireError(t, b.do(t, http.MethodDelete, path, tok.globex, nil), http.StatusNotFound, "NOT_FOUND")

	del := b.do(t, http.MethodDelete, path, tok.acme, nil)
	require.Equal(t, http.StatusNoContent, del.Status, "body: %s", del.Body)
	requireError(t, b.do(t, http.MethodGet, "/v1/policies/"+own, tok.acme, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, b.do(t, http.MethodDelete, path, tok.acme, nil), http.StatusNotFound, "NOT_FOUND")
	b.polGet(t, tok.adminRead, globalApp, http.StatusOK)
	b.polGet(t, tok.acme, serviceLevel, http.StatusOK)

	got := b.do(t, http.MethodGet, path, tok.acme, nil)
	got.requireStatus(t, http.StatusOK)
	require.Equal(t, globalApp, polID(t, got.data(t)), "resolution falls back again")
	require.Equal(t, "global_application", got.data(t)["meta"].(map[string]any)["resolved_from"])
}

// TestPoliciesOnPostgres runs the main flows against PostgreSQL (the other
// tests use SQLite): NULL tenants and applications, JSON columns, versions.
func TestPoliciesOnPostgres(t *testing.T) {
	t.Parallel()
	b := setupWith(t, storetest.Postgres)
	tok := polTokens(t, b)

	f := b.polFixture(t, tok)
	legacy := polID(t, b.polCreate(t, tok.acme, polAttrs(t, del("/service"), set("/services", []any{"transcriptions", "translations"}))))
	list := b.do(t, http.MethodGet, "/v1/policies", tok.acmeRead, nil)
	list.requireStatus(t, http.StatusOK)
	require.Equal(t, []string{legacy, f.global, f.acme}, polIDs(t, list))
	filtered := b.do(t, http.MethodGet, "/v1/policies?filter[tenant]="+tenantB, tok.adminRead, nil)
	filtered.requireStatus(t, http.StatusOK)
	require.Equal(t, []string{f.globex}, polIDs(t, filtered))

	r := b.do(t, http.MethodPatch, "/v1/policies/"+legacy, tok.acme, polDoc(legacy, map[string]any{"services": []any{}}))
	r.requireStatus(t, http.StatusOK)
	require.Equal(t, []any{}, polAttributes(t, r.data(t))["services"])
	require.Equal(t, float64(2), polAttributes(t, r.data(t))["version"])
	v1 := b.do(t, http.MethodGet, "/v1/policies/"+legacy+"/versions/1", tok.acme, nil)
	v1.requireStatus(t, http.StatusOK)
	require.Equal(t, []any{"transcriptions", "translations"}, polAttributes(t, v1.data(t))["services"])

	const path = "/v1/services/transcriptions/applications/mobile/policy"
	put := b.do(t, http.MethodPut, path, tok.acme, polDoc("", polAttrs(t, del("/service"))))
	put.requireStatus(t, http.StatusOK)
	got := b.do(t, http.MethodGet, path, tok.acmeRead, nil)
	got.requireStatus(t, http.StatusOK)
	require.Equal(t, polID(t, put.data(t)), polID(t, got.data(t)))
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, path, tok.acme, nil).Status)
	got = b.do(t, http.MethodGet, path, tok.acmeRead, nil)
	got.requireStatus(t, http.StatusOK)
	require.Equal(t, f.global, polID(t, got.data(t)), "the gateway-wide service-level policy")
	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, "/v1/policies/"+f.acme, tok.acme, nil).Status)
}
