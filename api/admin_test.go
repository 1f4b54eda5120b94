package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// statusDoc is a service or provider status update body.
func statusDoc(typ, id string, attrs map[string]any) map[string]any {
	data := map[string]any{"id": id, "type": typ}
	if attrs != nil {
		data["attributes"] = attrs
	}
	return map[string]any{"data": data}
}

// mustJSON encodes v.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}

// statusOf reads data.attributes.status of a response.
func statusOf(t *testing.T, r *response) any {
	t.Helper()
	return r.data(t)["attributes"].(map[string]any)["status"]
}

// capabilityStatuses reads each capability's status of a provider response.
func capabilityStatuses(t *testing.T, provider map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	for id, c := range provider["attributes"].(map[string]any)["services"].(map[string]any) {
		out[id] = c.(map[string]any)["status"]
	}
	return out
}

func TestUpdateServiceStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.token(t, "services:write")
	write := b.writeToken(t)
	read := b.token(t)

	// Disabled: shown everywhere, and new jobs are refused.
	r := b.do(t, http.MethodPatch, "/v1/services/transcriptions", admin, statusDoc("service", "transcriptions", map[string]any{"status": "disabled"}))
	r.requireStatus(t, http.StatusOK)
	require.JSONEq(t, `{"id": "transcriptions", "type": "service", "attributes": {"name": "Transcriptions",
		"description": "Audio or video to time-aligned text.", "endpoint": "/v1/transcriptions",
		"job_type": "transcription-job", "status": "disabled"}}`, string(mustJSON(t, r.data(t))))
	require.Equal(t, "disabled", statusOf(t, b.do(t, http.MethodGet, "/v1/services/transcriptions", read, nil)))
	list := b.do(t, http.MethodGet, "/v1/services", read, nil)
	list.requireStatus(t, http.StatusOK)
	got := map[string]any{}
	for _, svc := range list.object(t)["data"].([]any) {
		got[svc.(map[string]any)["id"].(string)] = svc.(map[string]any)["attributes"].(map[string]any)["status"]
	}
	require.Equal(t, map[string]any{"transcriptions": "disabled", "translations": "active", "video-analyses": "active", "llm-tasks": "active"}, got)

	requireError(t, b.do(t, http.MethodPost, "/v1/transcriptions", write, body(t, "transcriptions")), http.StatusUnprocessableEntity, "SERVICE_DISABLED", "transcriptions")
	requireError(t, b.do(t, http.MethodPost, "/v1/transcriptions", write, body(t, "transcriptions", set("/data/attributes/provider", "alpha"))), http.StatusUnprocessableEntity, "SERVICE_DISABLED")
	require.Empty(t, b.started(), "a refused job starts no workflow")
	b.create(t, "translations", write, body(t, "translations"))

	// Deprecated: still accepts jobs.
	r = b.do(t, http.MethodPatch, "/v1/services/transcriptions", admin, statusDoc("service", "transcriptions", map[string]any{"status": "deprecated"}))
	r.requireStatus(t, http.StatusOK)
	require.Equal(t, "deprecated", statusOf(t, r))
	b.create(t, "transcriptions", write, body(t, "transcriptions"))
	require.Equal(t, "deprecated", statusOf(t, b.do(t, http.MethodGet, "/v1/services/transcriptions", read, nil)))

	// Active again.
	r = b.do(t, http.MethodPatch, "/v1/services/transcriptions", admin, statusDoc("service", "transcriptions", map[string]any{"status": "active"}))
	r.requireStatus(t, http.StatusOK)
	require.Equal(t, "active", statusOf(t, b.do(t, http.MethodGet, "/v1/services/transcriptions", read, nil)))
	require.Len(t, b.started(), 2)
}

func TestUpdateServiceStatusRejects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.token(t, "services:write")
	path := "/v1/services/llm-tasks"

	t.Run("scope missing", func(t *testing.T) {
		t.Parallel()
		token := superAdminToken(t, b, "providers:write", "llm-tasks:write")
		requireError(t, b.do(t, http.MethodPatch, path, token, statusDoc("service", "llm-tasks", map[string]any{"status": "disabled"})),
			http.StatusForbidden, "INSUFFICIENT_SCOPE", "services:write")
	})
	t.Run("unknown service", func(t *testing.T) {
		t.Parallel()
		requireError(t, b.do(t, http.MethodPatch, "/v1/services/llm-task", admin, statusDoc("service", "llm-task", map[string]any{"status": "disabled"})),
			http.StatusNotFound, "NOT_FOUND")
	})
	requireRejects(t, []rejectCase{
		{name: "malformed JSON", body: `{"data":`, status: http.StatusBadRequest, code: "MALFORMED_JSON"},
		{name: "id mismatch", body: statusDoc("service", "translations", map[string]any{"status": "disabled"}), pointers: []string{"/data/id"}},
		{name: "id missing", body: map[string]any{"data": map[string]any{"type": "service", "attributes": map[string]any{"status": "disabled"}}}, pointers: []string{"/data/id"}},
		{name: "type wrong", body: statusDoc("provider", "llm-tasks", map[string]any{"status": "disabled"}), pointers: []string{"/data/type"}},
		{name: "attributes missing", body: statusDoc("service", "llm-tasks", nil), pointers: []string{"/data/attributes/status"}},
		{name: "status missing", body: statusDoc("service", "llm-tasks", map[string]any{}), pointers: []string{"/data/attributes/status"}},
		{name: "status null", body: statusDoc("service", "llm-tasks", map[string]any{"status": nil}), pointers: []string{"/data/attributes/status"}},
		{name: "status not in enum", body: statusDoc("service", "llm-tasks", map[string]any{"status": "degraded"}), pointers: []string{"/data/attributes/status"}},
		{name: "status number", body: statusDoc("service", "llm-tasks", map[string]any{"status": 1}), pointers: []string{"/data/attributes/status"}},
		{name: "unknown attribute", body: statusDoc("service", "llm-tasks", map[string]any{"status": "disabled", "name": "LLM"}), pointers: []string{"/data/attributes/name"}},
	}, func(t *testing.T, body any) *response { return b.do(t, http.MethodPatch, path, admin, body) })
	t.Cleanup(func() {
		require.Equal(t, "active", statusOf(t, b.do(t, http.MethodGet, path, admin, nil)), "no rejected request changed the status")
	})
}

func TestUpdateProviderStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := superAdminToken(t, b, "providers:write")
	write := b.writeToken(t)
	read := b.token(t)
	patch := func(t *testing.T, id string, attrs map[string]any) map[string]any {
		t.Helper()
		r := b.do(t, http.MethodPatch, "/v1/providers/"+id, admin, statusDoc("provider", id, attrs))
		r.requireStatus(t, http.StatusOK)
		got := b.do(t, http.MethodGet, "/v1/providers/"+id, read, nil)
		got.requireStatus(t, http.StatusOK)
		require.JSONEq(t, string(mustJSON(t, r.data(t))), string(mustJSON(t, got.data(t))), "GET shows what PATCH answered")
		return r.data(t)
	}
	const providerPointer = "/data/attributes/provider"
	withProvider := func(resource, provider string) map[string]any {
		return body(t, resource, set(providerPointer, provider))
	}

	// Provider level: disabled for every service, capabilities keep their own.
	alpha := patch(t, "alpha", map[string]any{"status": "disabled"})
	require.Equal(t, "disabled", alpha["attributes"].(map[string]any)["status"])
	require.Equal(t, map[string]any{"transcriptions": "active", "translations": "active", "video-analyses": "active", "llm-tasks": "active"}, capabilityStatuses(t, alpha))
	for _, resource := range []string{"transcriptions", "translations", "llm-tasks"} {
		requireError(t, b.do(t, http.MethodPost, "/v1/"+resource, write, withProvider(resource, "alpha")),
			http.StatusUnprocessableEntity, "PROVIDER_DISABLED", providerPointer)
	}

	// Services only: the provider-level status is kept.
	alpha = patch(t, "alpha", map[string]any{"services": map[string]any{"transcriptions": map[string]any{"status": "degraded"}}})
	require.Equal(t, "disabled", alpha["attributes"].(map[string]any)["status"])
	require.Equal(t, map[string]any{"transcriptions": "degraded", "translations": "active", "video-analyses": "active", "llm-tasks": "active"}, capabilityStatuses(t, alpha))
	requireError(t, b.do(t, http.MethodPost, "/v1/transcriptions", write, withProvider("transcriptions", "alpha")),
		http.StatusUnprocessableEntity, "PROVIDER_DISABLED", providerPointer) // a degraded capability does not lift a provider-level disabled

	// Both at once, merged with the earlier entry.
	alpha = patch(t, "alpha", map[string]any{"status": "active", "services": map[string]any{"translations": map[string]any{"status": "disabled"}}})
	require.Equal(t, "active", alpha["attributes"].(map[string]any)["status"])
	require.Equal(t, map[string]any{"transcriptions": "degraded", "translations": "disabled", "video-analyses": "active", "llm-tasks": "active"}, capabilityStatuses(t, alpha))
	requireError(t, b.do(t, http.MethodPost, "/v1/translations", write, withProvider("translations", "alpha")),
		http.StatusUnprocessableEntity, "PROVIDER_DISABLED", providerPointer)
	b.create(t, "transcriptions", write, withProvider("transcriptions", "alpha"))
	b.create(t, "llm-tasks", write, withProvider("llm-tasks", "alpha"))

	// Overrides lift the catalog's disabled statuses too.
	requireError(t, b.do(t, http.MethodPost, "/v1/transcriptions", write, withProvider("transcriptions", "switched-off")),
		http.StatusUnprocessableEntity, "PROVIDER_DISABLED")
	patch(t, "switched-off", map[string]any{"status": "degraded"})
	b.create(t, "transcriptions", write, withProvider("transcriptions", "switched-off"))
	requireError(t, b.do(t, http.MethodPost, "/v1/transcriptions", write, withProvider("transcriptions", "half-off")),
		http.StatusUnprocessableEntity, "PROVIDER_DISABLED")
	halfOff := patch(t, "half-off", map[string]any{"services": map[string]any{"transcriptions": map[string]any{"status": "active"}}})
	require.Equal(t, map[string]any{"transcriptions": "active", "translations": "active"}, capabilityStatuses(t, halfOff))
	b.create(t, "transcriptions", write, withProvider("transcriptions", "half-off"))

	// The list shows every override, and the catalog for the rest.
	list := b.do(t, http.MethodGet, "/v1/providers", read, nil)
	list.requireStatus(t, http.StatusOK)
	statuses := map[string]any{}
	for _, p := range list.object(t)["data"].([]any) {
		statuses[p.(map[string]any)["id"].(string)] = p.(map[string]any)["attributes"].(map[string]any)["status"]
	}
	require.Equal(t, map[string]any{"alpha": "active", "narrow": "active", "switched-off": "degraded", "half-off": "active", "llm-only": "degraded"}, statuses)
	require.Len(t, b.started(), 4)
}

func TestUpdateProviderStatusRejects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := superAdminToken(t, b, "providers:write")
	path := "/v1/providers/narrow"
	transcriptionsDisabled := map[string]any{"services": map[string]any{"transcriptions": map[string]any{"status": "disabled"}}}

	t.Run("not a super-admin", func(t *testing.T) {
		t.Parallel()
		token := b.token(t, "providers:write", "services:write")
		requireError(t, b.do(t, http.MethodPatch, path, token, statusDoc("provider", "narrow", transcriptionsDisabled)), http.StatusForbidden, "FORBIDDEN")
	})
	t.Run("scope missing", func(t *testing.T) {
		t.Parallel()
		token := superAdminToken(t, b, "services:write")
		requireError(t, b.do(t, http.MethodPatch, path, token, statusDoc("provider", "narrow", transcriptionsDisabled)), http.StatusForbidden, "INSUFFICIENT_SCOPE", "providers:write")
	})
	t.Run("unknown provider", func(t *testing.T) {
		t.Parallel()
		requireError(t, b.do(t, http.MethodPatch, "/v1/providers/nope", admin, statusDoc("provider", "nope", transcriptionsDisabled)), http.StatusNotFound, "NOT_FOUND")
	})
	entry := func(status any) map[string]any { return map[string]any{"status": status} }
	requireRejects(t, []rejectCase{
		{name: "malformed JSON", body: `{"data": {`, status: http.StatusBadRequest, code: "MALFORMED_JSON"},
		{name: "id mismatch", body: statusDoc("provider", "alpha", transcriptionsDisabled), pointers: []string{"/data/id"}},
		{name: "type wrong", body: statusDoc("service", "narrow", transcriptionsDisabled), pointers: []string{"/data/type"}},
		{name: "attributes missing", body: statusDoc("provider", "narrow", nil), pointers: []string{"/data/attributes"}},
		{name: "attributes empty", body: statusDoc("provider", "narrow", map[string]any{}), pointers: []string{"/data/attributes"}},
		{name: "services empty without status", body: statusDoc("provider", "narrow", map[string]any{"services": map[string]any{}}), pointers: []string{"/data/attributes"}},
		{name: "status not in enum", body: statusDoc("provider", "narrow", map[string]any{"status": "deprecated"}), pointers: []string{"/data/attributes/status"}},
		{name: "status number", body: statusDoc("provider", "narrow", map[string]any{"status": 2}), pointers: []string{"/data/attributes/status"}},
		{name: "services array", body: statusDoc("provider", "narrow", map[string]any{"services": []any{"transcriptions"}}), pointers: []string{"/data/attributes/services"}},
		{name: "service not offered", body: statusDoc("provider", "narrow", map[string]any{"services": map[string]any{"llm-tasks": entry("disabled")}}),
			code: "UNSUPPORTED_OPTION", pointers: []string{"/data/attributes/services/llm-tasks"}},
		{name: "service offered and one not offered", body: statusDoc("provider", "narrow", map[string]any{"status": "active", "services": map[string]any{"transcriptions": entry("disabled"), "llm-tasks": entry("active")}}),
			code: "UNSUPPORTED_OPTION", pointers: []string{"/data/attributes/services/llm-tasks"}},
		{name: "not a service", body: statusDoc("provider", "narrow", map[string]any{"services": map[string]any{"speech": entry("disabled")}}), pointers: []string{"/data/attributes/services/speech"}},
		{name: "service entry null", body: statusDoc("provider", "narrow", map[string]any{"services": map[string]any{"transcriptions": nil}}), pointers: []string{"/data/attributes/services/transcriptions"}},
		{name: "service entry string", body: statusDoc("provider", "narrow", map[string]any{"services": map[string]any{"transcriptions": "disabled"}}), pointers: []string{"/data/attributes/services/transcriptions"}},
		{name: "service status missing", body: statusDoc("provider", "narrow", map[string]any{"services": map[string]any{"transcriptions": map[string]any{}}}), pointers: []string{"/data/attributes/services/transcriptions/status"}},
		{name: "service status not in enum", body: statusDoc("provider", "narrow", map[string]any{"services": map[string]any{"transcriptions": entry("deprecated")}}), pointers: []string{"/data/attributes/services/transcriptions/status"}},
		{name: "service entry unknown member", body: statusDoc("provider", "narrow", map[string]any{"services": map[string]any{"transcriptions": map[string]any{"status": "active", "limits": map[string]any{}}}}), pointers: []string{"/data/attributes/services/transcriptions/limits"}},
		{name: "unknown attribute", body: statusDoc("provider", "narrow", map[string]any{"status": "active", "name": "N"}), pointers: []string{"/data/attributes/name"}},
	}, func(t *testing.T, body any) *response { return b.do(t, http.MethodPatch, path, admin, body) })
	t.Cleanup(func() {
		r := b.do(t, http.MethodGet, path, admin, nil)
		r.requireStatus(t, http.StatusOK)
		require.JSONEq(t, wantProviders["narrow"], string(mustJSON(t, r.data(t))), "no rejected request changed the provider")
	})
}

// Statuses live in the database: another API process on the same database
// (here on PostgreSQL) sees them.
func TestStatusesArePersisted(t *testing.T) {
	t.Parallel()
	first := setupWith(t, storetest.Postgres)
	second := setupWith(t, func(testing.TB) *store.Store { return first.store })

	r := first.do(t, http.MethodPatch, "/v1/services/video-analyses", first.token(t, "services:write"),
		statusDoc("service", "video-analyses", map[string]any{"status": "disabled"}))
	r.requireStatus(t, http.StatusOK)
	r = first.do(t, http.MethodPatch, "/v1/providers/narrow", superAdminToken(t, first, "providers:write"),
		statusDoc("provider", "narrow", map[string]any{"status": "degraded", "services": map[string]any{"translations": map[string]any{"status": "disabled"}}}))
	r.requireStatus(t, http.StatusOK)

	read := second.token(t)
	require.Equal(t, "disabled", statusOf(t, second.do(t, http.MethodGet, "/v1/services/video-analyses", read, nil)))
	narrow := second.do(t, http.MethodGet, "/v1/providers/narrow", read, nil)
	require.Equal(t, "degraded", statusOf(t, narrow))
	require.Equal(t, map[string]any{"transcriptions": "active", "translations": "disabled", "video-analyses": "active"}, capabilityStatuses(t, narrow.data(t)))

	write := second.writeToken(t)
	requireError(t, second.do(t, http.MethodPost, "/v1/video-analyses", write, body(t, "video-analyses")), http.StatusUnprocessableEntity, "SERVICE_DISABLED")
	requireError(t, second.do(t, http.MethodPost, "/v1/translations", write, body(t, "translations", set("/data/attributes/provider", "narrow"))),
		http.StatusUnprocessableEntity, "PROVIDER_DISABLED")
	second.create(t, "transcriptions", write, body(t, "transcriptions", set("/data/attributes/provider", "narrow")))
}
