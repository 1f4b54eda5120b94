package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// TestTenantsSeeNothingOfEachOther: for every route that takes an id,
// another tenant's resource answers exactly as a resource that does not
// exist does, so a tenant cannot even learn that an id is taken.
func TestTenantsSeeNothingOfEachOther(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	policy := polID(t, b.polCreate(t, tok.acme, polAttrs(t)))
	acmeJobs := map[string]string{}
	for _, svc := range []string{"transcriptions", "translations", "video-analyses", "llm-tasks"} {
		acmeJobs[svc] = b.seed(t, jobs.Record{Service: jobs.ServiceID(svc), Status: jobs.StatusCompleted, Result: `{}`}).ID
	}
	all := allScopes()
	globex := b.tokenFor(t, tenantB, userB, append(all, "policies:read", "policies:write")...)

	type probe struct{ method, path, body string }
	var probes []probe
	for svc, id := range acmeJobs {
		for _, suffix := range []string{"", "/result", "/webhook-deliveries"} {
			probes = append(probes, probe{http.MethodGet, "/v1/" + svc + "/" + id + suffix, ""})
		}
		for _, action := range []string{"/cancel", "/retry"} {
			probes = append(probes, probe{http.MethodPost, "/v1/" + svc + "/" + id + action, ""})
		}
	}
	for _, suffix := range []string{"", "/versions", "/versions/1"} {
		probes = append(probes, probe{http.MethodGet, "/v1/policies/" + policy + suffix, ""})
	}
	probes = append(probes,
		probe{http.MethodPatch, "/v1/policies/" + policy, `{"data":{"type":"policy","id":"` + policy + `","attributes":{"name":"mine now"}}}`},
		probe{http.MethodDelete, "/v1/policies/" + policy, ""})

	for _, p := range probes {
		other := b.do(t, p.method, p.path, globex, bodyOrNil(p.body), "Content-Type", "application/json")
		missingPath := strings.Replace(p.path, idIn(p.path, acmeJobs, policy), uuid.Must(uuid.NewV7()).String(), 1)
		missingBody := strings.ReplaceAll(p.body, policy, idIn(missingPath, nil, ""))
		missing := b.do(t, p.method, missingPath, globex, bodyOrNil(missingBody), "Content-Type", "application/json")
		require.Equal(t, http.StatusNotFound, other.Status, "%s %s: %s", p.method, p.path, other.Body)
		require.Equal(t, missing.Status, other.Status, "%s %s", p.method, p.path)
		require.Equal(t, code(t, missing), code(t, other), "%s %s: the same answer as for an id that does not exist", p.method, p.path)
	}

	// Listings hold none of the other tenant's resources.
	r := b.do(t, http.MethodGet, "/v1/jobs", globex, nil)
	r.requireStatus(t, http.StatusOK)
	for _, id := range acmeJobs {
		require.NotContains(t, string(r.Body), id)
	}
	r = b.do(t, http.MethodGet, "/v1/policies", globex, nil)
	r.requireStatus(t, http.StatusOK)
	require.NotContains(t, string(r.Body), policy)

	// And acme still has everything.
	b.polGet(t, tok.acme, policy, http.StatusOK)
	b.do(t, http.MethodGet, jobPath("llm-tasks", acmeJobs["llm-tasks"], ""), b.readToken(t), nil).requireStatus(t, http.StatusOK)
}

func bodyOrNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// idIn is the resource id in path: one of the jobs' or the policy's; with
// no known ids, the path's last UUID.
func idIn(path string, jobIDs map[string]string, policy string) string {
	for _, id := range jobIDs {
		if strings.Contains(path, id) {
			return id
		}
	}
	if policy != "" && strings.Contains(path, policy) {
		return policy
	}
	for _, part := range strings.Split(path, "/") {
		if _, err := uuid.Parse(part); err == nil {
			return part
		}
	}
	return ""
}

func code(t *testing.T, r *response) string {
	t.Helper()
	errObj, _ := r.object(t)["error"].(map[string]any)
	c, _ := errObj["code"].(string)
	return c
}
