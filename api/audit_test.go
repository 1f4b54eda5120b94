package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/store"
)

// TestAuditLog: a key's creation, a policy change with its diff and a
// forced breaker are in the audit log, each with its actor and request
// id; the tenant sees its own events, a super-admin every one, another
// tenant none (docs/api.md, Audit log).
func TestAuditLog(t *testing.T) {
	t.Parallel()
	var st *store.Store
	b := setupConfigured(t, sqliteInto(&st), func(cfg *api.Config) { cfg.Breakers = st.Breakers })
	writer := b.token(t, "keys:write", "policies:write", "llm-tasks:read")
	keyID, _ := issueKey(t, b, writer, map[string]any{"name": "ci", "scopes": []string{"llm-tasks:read"}})
	policy := b.polCreate(t, writer, polAttrs(t))
	r := b.do(t, http.MethodPatch, "/v1/policies/"+policy["id"].(string), writer,
		polDoc(policy["id"].(string), map[string]any{"routing_strategy": "latency"}), "X-Request-Id", "change-42")
	r.requireStatus(t, http.StatusOK)
	root := superAdminToken(t, b, "providers:write", "audit:read")
	b.do(t, http.MethodPut, "/v1/providers/llm-only/services/llm-tasks/breaker", root,
		map[string]any{"data": map[string]any{"type": "circuit_breaker", "attributes": map[string]any{"state": "open"}}}).requireStatus(t, http.StatusOK)

	type event struct {
		ID         string `json:"id"`
		Type       string `json:"type"`
		Attributes struct {
			Tenant    *string                   `json:"tenant"`
			Actor     string                    `json:"actor"`
			Action    string                    `json:"action"`
			Target    string                    `json:"target"`
			Changes   map[string]map[string]any `json:"changes"`
			RequestID *string                   `json:"request_id"`
		} `json:"attributes"`
	}
	var page struct {
		Data  []event            `json:"data"`
		Links map[string]*string `json:"links"`
	}
	read := func(token, query string) {
		t.Helper()
		r := b.do(t, http.MethodGet, "/v1/audit-events"+query, token, nil)
		r.requireStatus(t, http.StatusOK)
		page.Data, page.Links = nil, nil
		require.NoError(t, json.Unmarshal(r.Body, &page), "%s", r.Body)
	}

	auditor := b.token(t, "audit:read")
	read(auditor, "")
	require.Len(t, page.Data, 3, "the tenant's: its key's creation and its policy's two writes")
	update, create, key := page.Data[0], page.Data[1], page.Data[2]
	require.Equal(t, "api_key.create", key.Attributes.Action)
	require.Equal(t, "api-key/"+keyID, key.Attributes.Target)
	require.Equal(t, "policy.create", create.Attributes.Action)
	require.Equal(t, "policy.update", update.Attributes.Action)
	require.Equal(t, "audit-event", update.Type)
	require.Equal(t, userA, update.Attributes.Actor)
	require.Equal(t, tenantA, *update.Attributes.Tenant)
	require.Equal(t, "change-42", *update.Attributes.RequestID)
	require.Equal(t, map[string]any{"before": "price", "after": "latency"}, update.Attributes.Changes["routing_strategy"])
	require.Nil(t, page.Links["next"])

	read(auditor, "?page[size]=2")
	require.Len(t, page.Data, 2)
	require.NotNil(t, page.Links["next"])
	next, err := url.Parse(*page.Links["next"])
	require.NoError(t, err)
	require.Equal(t, "/v1/audit-events", next.Path)
	read(auditor, "?"+next.RawQuery)
	require.Len(t, page.Data, 1)
	require.Equal(t, key.ID, page.Data[0].ID)

	read(auditor, "?filter[action]=policy.update&filter[actor]="+userA)
	require.Len(t, page.Data, 1)

	read(root, "?filter[action]=breaker.force")
	require.Len(t, page.Data, 1)
	force := page.Data[0]
	require.Equal(t, "root", force.Attributes.Actor)
	require.Nil(t, force.Attributes.Tenant, "a provider's breaker is the gateway's")
	require.Equal(t, "breaker/llm-only/llm-tasks", force.Attributes.Target)
	require.Equal(t, map[string]any{"before": "auto", "after": "open"}, force.Attributes.Changes["forced"])

	// A retry, which Temporal carries out, is recorded once started.
	job, _ := b.failedJob(t, "llm-tasks", tenantA)
	b.do(t, http.MethodPost, "/v1/llm-tasks/"+job.ID+"/retry", b.writeToken(t), nil).requireStatus(t, http.StatusAccepted)
	read(auditor, "?filter[target]=job/"+job.ID)
	require.Len(t, page.Data, 1)
	require.Equal(t, "job.retry", page.Data[0].Attributes.Action)
	require.Equal(t, userA, page.Data[0].Attributes.Actor)
	require.Equal(t, map[string]any{"before": "failed", "after": "pending"}, page.Data[0].Attributes.Changes["status"])

	other := b.mint(t, devidp.TokenRequest{Tenant: tenantB, Subject: userB, Scopes: []string{"audit:read"}, Audience: audience})
	read(other, "")
	require.Empty(t, page.Data, "another tenant sees none of them")
	requireError(t, b.do(t, http.MethodGet, "/v1/audit-events?filter[tenant]="+tenantA, other, nil), http.StatusForbidden, "FORBIDDEN")
	requireError(t, b.do(t, http.MethodGet, "/v1/audit-events", writer, nil), http.StatusForbidden, "INSUFFICIENT_SCOPE", "audit:read")
	for query, name := range map[string]string{"?page[size]=0": "page[size]", "?page[after]=x": "page[after]", "?filter[from]=yesterday": "filter[from]"} {
		msg := requireError(t, b.do(t, http.MethodGet, "/v1/audit-events"+query, auditor, nil), http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		require.Contains(t, msg, name)
	}
}
