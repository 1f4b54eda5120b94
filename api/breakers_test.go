package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

type healthDoc struct {
	State               string     `json:"state"`
	Since               *time.Time `json:"since"`
	FailureRate         float64    `json:"failure_rate"`
	CallsInWindow       int        `json:"calls_in_window"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	Opens               int        `json:"opens"`
	NextProbeAt         *time.Time `json:"next_probe_at"`
	Forced              string     `json:"forced"`
	ForcedBy            string     `json:"forced_by"`
	Enabled             bool       `json:"enabled"`
}

func providerHealth(t *testing.T, b *bundle, id, service, token string) healthDoc {
	t.Helper()
	var p struct {
		Attributes struct {
			Services map[string]struct {
				Models []string   `json:"models"`
				Health *healthDoc `json:"health"`
			} `json:"services"`
		} `json:"attributes"`
	}
	require.NoError(t, json.Unmarshal(getData[json.RawMessage](t, b, "/v1/providers/"+id, token), &p))
	s := p.Attributes.Services[service]
	require.NotEmpty(t, s.Models, "the capability is shown as before")
	require.NotNil(t, s.Health)
	return *s.Health
}

func TestProviderHealthShowsTheBreaker(t *testing.T) {
	t.Parallel()
	var st *store.Store
	b := setupConfigured(t, sqliteInto(&st), func(cfg *api.Config) {
		cfg.Breakers = st.Breakers
	})
	token := b.token(t)

	h := providerHealth(t, b, "llm-only", "llm-tasks", token)
	require.Equal(t, healthDoc{State: "closed", Enabled: true}, h, "no call seen")

	key := store.BreakerKey{ProviderID: "llm-only", Service: jobs.LLMTasks}
	now := time.Now().UTC()
	var calls []breaker.Call
	for i := range 20 {
		calls = append(calls, breaker.Call{Outcome: breaker.Failure, At: now.Add(time.Duration(i) * time.Millisecond)})
	}
	_, _, err := st.Breakers.RecordBreakerOutcomes(t.Context(), key, breaker.Defaults(), calls)
	require.NoError(t, err)
	h = providerHealth(t, b, "llm-only", "llm-tasks", token)
	require.Equal(t, "open", h.State)
	require.Equal(t, 1.0, h.FailureRate)
	require.Equal(t, 20, h.CallsInWindow)
	require.Equal(t, 1, h.Opens)
	require.NotNil(t, h.Since)
	require.NotNil(t, h.NextProbeAt)
	require.WithinDuration(t, now.Add(30*time.Second), *h.NextProbeAt, time.Second)
	for _, raw := range getData[[]json.RawMessage](t, b, "/v1/providers", token) {
		var p struct {
			ID         string `json:"id"`
			Attributes struct {
				Services map[string]struct {
					Health healthDoc `json:"health"`
				} `json:"services"`
			} `json:"attributes"`
		}
		require.NoError(t, json.Unmarshal(raw, &p))
		want := "closed"
		if p.ID == "llm-only" {
			want = "open"
		}
		for service, c := range p.Attributes.Services {
			require.Equal(t, want, c.Health.State, "the list shows health too: %s %s", p.ID, service)
		}
	}

	path := "/v1/providers/llm-only/services/llm-tasks/breaker"
	body := func(state string) map[string]any {
		return map[string]any{"data": map[string]any{"type": "circuit_breaker", "attributes": map[string]any{"state": state}}}
	}
	requireError(t, b.do(t, http.MethodPut, path, b.token(t, "providers:write"), body("closed")), http.StatusForbidden, "FORBIDDEN")
	admin := superAdminToken(t, b, "providers:write")
	requireError(t, b.do(t, http.MethodPut, path, admin, body("half_open")), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/state")
	requireError(t, b.do(t, http.MethodPut, "/v1/providers/llm-only/services/transcriptions/breaker", admin, body("closed")), http.StatusNotFound, "NOT_FOUND")

	r := b.do(t, http.MethodPut, path, admin, body("closed"))
	r.requireStatus(t, http.StatusOK)
	h = providerHealth(t, b, "llm-only", "llm-tasks", token)
	require.Equal(t, "closed", h.State, "forced closed")
	require.Equal(t, "closed", h.Forced)
	require.Equal(t, "root", h.ForcedBy, "who forced it")
	require.Nil(t, h.NextProbeAt)

	b.do(t, http.MethodPut, path, admin, body("auto")).requireStatus(t, http.StatusOK)
	h = providerHealth(t, b, "llm-only", "llm-tasks", token)
	require.Equal(t, "closed", h.State)
	require.Equal(t, "auto", h.Forced)
	require.Zero(t, h.CallsInWindow, "back to automatic with a fresh window")
}
