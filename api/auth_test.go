package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// jobRoutes are the four job operations of a resource, with the scope each
// needs; id is a job of that resource.
func jobRoutes(resource, id string) []struct {
	name, method, path, scope string
	body                      any
} {
	return []struct {
		name, method, path, scope string
		body                      any
	}{
		{"create", http.MethodPost, "/v1/" + resource, resource + ":write", validBodies[resource]},
		{"get", http.MethodGet, jobPath(resource, id), resource + ":read", nil},
		{"result", http.MethodGet, jobPath(resource, id, "/result"), resource + ":read", nil},
		{"cancel", http.MethodPost, jobPath(resource, id, "/cancel"), resource + ":write", nil},
	}
}

func TestRejectsMissingAndInvalidTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)

	valid := b.token(t, allScopes()...)
	other := b.tokenFor(t, tenantB, userB, allScopes()...)
	// valid's header and claims under other's signature.
	parts, otherParts := strings.Split(valid, "."), strings.Split(other, ".")
	require.Len(t, parts, 3)
	tampered := parts[0] + "." + parts[1] + "." + otherParts[2]

	expired := b.issuer.WithClock(func() time.Time { return time.Now().Add(-2 * time.Hour) })
	notYet := b.issuer.WithClock(func() time.Time { return time.Now().Add(time.Hour) })
	// Same signing key, another issuer URL.
	foreign := openIssuer(t, "http://issuer.invalid"+devidp.Path)

	mint := func(iss *devidp.Issuer, req devidp.TokenRequest) string {
		token, err := iss.Mint(req)
		require.NoError(t, err)
		return token
	}
	req := devidp.TokenRequest{Tenant: tenantA, Subject: userA, Scopes: allScopes(), Audience: audience}
	wrongAud := req
	wrongAud.Audience = "some-other-api"

	tokens := []struct {
		name          string
		authorization string // the whole Authorization header; empty sends none
	}{
		{"no token", ""},
		{"empty bearer", "Bearer "},
		{"basic scheme", "Basic YWxpY2U6c2VjcmV0"},
		{"garbage", "Bearer not-a-jwt"},
		{"three garbage segments", "Bearer aaa.bbb.ccc"},
		{"tampered signature", "Bearer " + tampered},
		{"expired", "Bearer " + mint(expired, req)},
		{"not yet valid", "Bearer " + mint(notYet, req)},
		{"wrong audience", "Bearer " + mint(b.issuer, wrongAud)},
		{"wrong issuer", "Bearer " + mint(foreign, req)},
	}
	job := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusPending})

	for _, res := range resources {
		for _, route := range jobRoutes(res.id, job.ID) {
			for _, tc := range tokens {
				t.Run(res.id+"/"+route.name+"/"+tc.name, func(t *testing.T) {
					t.Parallel()
					var headers []string
					if tc.authorization != "" {
						headers = []string{"Authorization", tc.authorization}
					}
					r := b.do(t, route.method, route.path, "", route.body, headers...)
					requireError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
					require.Equal(t, `Bearer error="invalid_token"`, r.Header.Get("WWW-Authenticate"))
				})
			}
		}
	}
	for _, path := range []string{"/v1/services", "/v1/services/transcriptions", "/v1/providers", "/v1/providers/alpha"} {
		t.Run("catalog"+path, func(t *testing.T) {
			t.Parallel()
			r := b.do(t, http.MethodGet, path, "", nil)
			requireError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
			require.Equal(t, `Bearer error="invalid_token"`, r.Header.Get("WWW-Authenticate"))
		})
	}
	b.assertUntouched(t)
}

func TestValidTokenIsAccepted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The same token that the negative cases above vary is accepted as is,
	// so those cases fail for the reason they name.
	data := b.create(t, "transcriptions", b.token(t, "transcriptions:write"), body(t, "transcriptions"))
	require.Equal(t, "pending", data["attributes"].(map[string]any)["status"])
	// Scheme names are case-insensitive (RFC 7235).
	r := b.do(t, http.MethodGet, jobPath("transcriptions", data["id"].(string)), "", nil,
		"Authorization", "bearer "+b.token(t, "transcriptions:read"))
	r.requireStatus(t, http.StatusOK)
}

func TestHealthzNeedsNoToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(t, http.MethodGet, "/healthz", "", nil)
	r.requireStatus(t, http.StatusOK)
	require.Equal(t, "ok", r.object(t)["status"])
}

func TestScopes(t *testing.T) {
	t.Parallel()
	b := setup(t)

	for _, res := range resources {
		job := b.seed(t, jobs.Record{Service: jobs.ServiceID(res.id), Status: jobs.StatusProcessing})
		// other is another resource, whose scopes grant nothing here.
		other := "transcriptions"
		if res.id == other {
			other = "translations"
		}
		for _, route := range jobRoutes(res.id, job.ID) {
			otherVerb := strings.NewReplacer(":write", ":read", ":read", ":write").Replace(route.scope)
			wrong := []struct {
				name   string
				scopes []string
			}{
				{"no scopes", nil},
				{"only " + otherVerb, []string{otherVerb}},
				{"another resource", []string{other + ":read", other + ":write"}},
				{"admin only", []string{"admin:cross-tenant", "services:write", "providers:write"}},
			}
			for _, tc := range wrong {
				t.Run(res.id+"/"+route.name+"/"+tc.name, func(t *testing.T) {
					t.Parallel()
					token := b.mint(t, devidp.TokenRequest{Tenant: tenantA, Subject: userA, Scopes: tc.scopes, Roles: []string{"super-admin"}, Audience: audience})
					r := b.do(t, route.method, route.path, token, route.body)
					requireError(t, r, http.StatusForbidden, "INSUFFICIENT_SCOPE", route.scope)
				})
			}
		}
	}
	b.assertUntouched(t)
}

func TestScopeGrantsItsOperations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	eachResource(t, func(t *testing.T, res resource) {
		data := b.create(t, res.id, b.token(t, res.id+":write"), body(t, res.id))
		id := data["id"].(string)

		read := b.token(t, res.id+":read")
		b.do(t, http.MethodGet, jobPath(res.id, id), read, nil).requireStatus(t, http.StatusOK)
		requireError(t, b.do(t, http.MethodGet, jobPath(res.id, id, "/result"), read, nil),
			http.StatusNotFound, "RESULT_NOT_READY")
		b.do(t, http.MethodPost, jobPath(res.id, id, "/cancel"), b.token(t, res.id+":write"), nil).
			requireStatus(t, http.StatusAccepted)
	})
}

func TestEffectiveIdentityHeadersNeedCrossTenantScope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, res := range resources {
		job := b.seed(t, jobs.Record{Service: jobs.ServiceID(res.id), Status: jobs.StatusProcessing})
		for _, route := range jobRoutes(res.id, job.ID) {
			for _, header := range []string{"X-Effective-Tenant-Id", "X-Effective-User-Id"} {
				t.Run(res.id+"/"+route.name+"/"+header, func(t *testing.T) {
					t.Parallel()
					token := b.token(t, allScopes()...)
					r := b.do(t, route.method, route.path, token, route.body, header, tenantA)
					requireError(t, r, http.StatusForbidden, "FORBIDDEN", header, "admin:cross-tenant")
				})
			}
		}
	}
	b.assertUntouched(t)
}

func TestCrossTenantAdminCreatesForEffectiveIdentity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.token(t, allScopes("admin:cross-tenant")...)

	eachResource(t, func(t *testing.T, res resource) {
		data := b.create(t, res.id, admin, body(t, res.id),
			"X-Effective-Tenant-Id", tenantB, "X-Effective-User-Id", userB)
		id := data["id"].(string)
		attrs := data["attributes"].(map[string]any)
		require.Equal(t, tenantB, attrs["tenant"])
		require.Equal(t, userB, attrs["user_id"])

		in := b.startedFor(t, id).Input
		require.Equal(t, tenantB, in.Tenant)
		require.Equal(t, userB, in.UserID)
		stored, err := b.store.Jobs.GetJob(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, tenantB, stored.Tenant)
		require.Equal(t, userB, stored.UserID)

		// The job is the effective tenant's: its users see it, the
		// admin's own tenant does not.
		b.do(t, http.MethodGet, jobPath(res.id, id), b.tokenFor(t, tenantB, "carol", allScopes()...), nil).
			requireStatus(t, http.StatusOK)
		requireError(t, b.do(t, http.MethodGet, jobPath(res.id, id), b.readToken(t), nil),
			http.StatusNotFound, "NOT_FOUND")
	})

	for _, tc := range []struct{ name, header, value, tenant, user string }{
		{"tenant only keeps the token user", "X-Effective-Tenant-Id", tenantB, tenantB, userA},
		{"user only keeps the token tenant", "X-Effective-User-Id", userB, tenantA, userB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := b.create(t, "transcriptions", admin, body(t, "transcriptions"), tc.header, tc.value)
			attrs := data["attributes"].(map[string]any)
			require.Equal(t, tc.tenant, attrs["tenant"])
			require.Equal(t, tc.user, attrs["user_id"])
		})
	}
}

func TestOtherTenantsJobsAreNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, res := range resources {
		for _, status := range jobs.Statuses() {
			job := b.seed(t, jobs.Record{Service: jobs.ServiceID(res.id), Tenant: tenantB, UserID: userB, Status: status, Result: `{"content":"x"}`, ErrorCode: "X"})
			for _, route := range jobRoutes(res.id, job.ID)[1:] {
				t.Run(res.id+"/"+string(status)+"/"+route.name, func(t *testing.T) {
					t.Parallel()
					r := b.do(t, route.method, route.path, b.token(t, allScopes()...), nil)
					msg := requireError(t, r, http.StatusNotFound, "NOT_FOUND")
					require.NotContains(t, msg, tenantB, "the message must not reveal the owner")
				})
			}
		}
	}
	t.Run("same user name in another tenant", func(t *testing.T) {
		t.Parallel()
		job := b.seed(t, jobs.Record{Service: "transcriptions", Tenant: tenantB, UserID: userA, Status: jobs.StatusProcessing})
		requireError(t, b.do(t, http.MethodGet, jobPath("transcriptions", job.ID), b.readToken(t), nil),
			http.StatusNotFound, "NOT_FOUND")
	})
	t.Cleanup(func() {
		assert.Empty(t, b.cancelled(), "another tenant's job must not be cancelled")
	})
}

func TestCrossTenantAdminReadsOtherTenantsJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.token(t, allScopes("admin:cross-tenant")...)
	eachResource(t, func(t *testing.T, res resource) {
		job := b.seed(t, jobs.Record{Service: jobs.ServiceID(res.id), Tenant: tenantB, UserID: userB, Status: jobs.StatusCompleted, Result: sampleResults[res.id]})

		r := b.do(t, http.MethodGet, jobPath(res.id, job.ID), admin, nil)
		r.requireStatus(t, http.StatusOK)
		require.Equal(t, tenantB, r.data(t)["attributes"].(map[string]any)["tenant"])
		b.do(t, http.MethodGet, jobPath(res.id, job.ID, "/result"), admin, nil).requireStatus(t, http.StatusOK)

		// Acting as the owning tenant works; acting as another does not.
		b.do(t, http.MethodGet, jobPath(res.id, job.ID), admin, nil, "X-Effective-Tenant-Id", tenantB).
			requireStatus(t, http.StatusOK)
		requireError(t, b.do(t, http.MethodGet, jobPath(res.id, job.ID), admin, nil, "X-Effective-Tenant-Id", "initech"),
			http.StatusNotFound, "NOT_FOUND")
	})
}

func TestTokenWithoutTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.mint(t, devidp.TokenRequest{Subject: "tool", Scopes: allScopes(), Audience: audience})
	eachResource(t, func(t *testing.T, res resource) {
		r := b.do(t, http.MethodPost, "/v1/"+res.id, token, body(t, res.id))
		requireError(t, r, http.StatusForbidden, "FORBIDDEN", "tenant_id")

		job := b.seed(t, jobs.Record{Service: jobs.ServiceID(res.id), Status: jobs.StatusPending})
		requireError(t, b.do(t, http.MethodGet, jobPath(res.id, job.ID), token, nil), http.StatusNotFound, "NOT_FOUND")
	})
	t.Run("cross-tenant tooling names the tenant", func(t *testing.T) {
		t.Parallel()
		admin := b.mint(t, devidp.TokenRequest{Subject: "tool", Scopes: allScopes("admin:cross-tenant"), Roles: []string{"super-admin"}, Audience: audience})
		r := b.do(t, http.MethodPost, "/v1/transcriptions", admin, body(t, "transcriptions"), "X-Effective-Tenant-Id", tenantB)
		r.requireStatus(t, http.StatusAccepted)
		attrs := r.data(t)["attributes"].(map[string]any)
		require.Equal(t, tenantB, attrs["tenant"])
		require.Equal(t, "tool", attrs["user_id"])
	})
	t.Cleanup(func() { assert.Len(t, b.started(), 1, "only the job with a tenant may start") })
}

func TestMalformedEffectiveHeadersAre422(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.token(t, allScopes("admin:cross-tenant", "policies:read")...)
	job := b.seed(t, jobs.Record{Service: "transcriptions", Tenant: tenantB, UserID: userB, Status: jobs.StatusPending})
	for _, h := range []struct{ name, value string }{
		{"X-Effective-Tenant-Id", strings.Repeat("t", 5000)},
		{"X-Effective-Tenant-Id", "Globex"},
		{"X-Effective-User-Id", strings.Repeat("u", 256)},
	} {
		for _, route := range []struct {
			method, path string
			body         any
		}{
			{http.MethodPost, "/v1/transcriptions", body(t, "transcriptions")},
			{http.MethodGet, jobPath("transcriptions", job.ID), nil},
			{http.MethodGet, "/v1/jobs", nil},
			{http.MethodGet, "/v1/policies", nil},
		} {
			r := b.do(t, route.method, route.path, admin, route.body, h.name, h.value)
			requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", "header "+h.name)
		}
	}
	assert.Empty(t, b.started(), "no job may start")
}
