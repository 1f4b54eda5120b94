package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// breakerCatalog: the cheapest llm provider fails 60 % of its calls and
// has a tight circuit breaker; a dearer one never fails.
const breakerCatalog = `providers:
  - id: sandbox-flaky
    name: Sandbox (flaky)
    adapter: sandbox
    settings: {latency_ms: 20, fail_rate: 0.6}
    circuit_breaker: {minimum_calls: 5, window_seconds: 10, failure_rate_percent: 50, open_seconds: 120}
    services:
      llm-tasks:
        models: [sandbox-model]
        pricing: {unit: per_token, amount: 0.000001, currency: USD}
  - id: sandbox-steady
    name: Sandbox (steady)
    adapter: sandbox
    settings: {latency_ms: 20, fail_rate: 0}
    services:
      llm-tasks:
        models: [sandbox-model]
        pricing: {unit: per_token, amount: 0.00001, currency: USD}
`

// TestBreakerOpensAndRoutingSkipsTheProvider: a provider failing most of
// its calls opens its breaker; later jobs skip it (circuit_open), and its
// health shows in the API and /metrics.
func TestBreakerOpensAndRoutingSkipsTheProvider(t *testing.T) {
	t.Parallel()
	catalog := writeCatalog(t, breakerCatalog)
	g := newGateway(t, "", "--providers", catalog)

	var ids []string
	for range 12 {
		ids = append(ids, g.create("llm-tasks", llmTaskBody).Data.ID)
	}
	for _, id := range ids {
		g.waitEnded("llm-tasks", id, 90*time.Second, "completed") // failed over when the flaky one failed
	}

	type health struct {
		State         string  `json:"state"`
		FailureRate   float64 `json:"failure_rate"`
		CallsInWindow int     `json:"calls_in_window"`
		Opens         int     `json:"opens"`
		NextProbeAt   *string `json:"next_probe_at"`
	}
	providerHealth := func() health {
		status, body, _ := g.do(http.MethodGet, "/v1/providers/sandbox-flaky", "")
		require.Equal(t, http.StatusOK, status, "%s", body)
		var doc struct {
			Data struct {
				Attributes struct {
					Services map[string]struct {
						Health health `json:"health"`
					} `json:"services"`
				} `json:"attributes"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(body, &doc))
		return doc.Data.Attributes.Services["llm-tasks"].Health
	}
	h := providerHealth()
	require.Equal(t, "open", h.State, "%+v", h)
	require.Equal(t, 1, h.Opens)
	require.NotNil(t, h.NextProbeAt)

	// Jobs routed now skip it.
	done := g.waitEnded("llm-tasks", g.create("llm-tasks", llmTaskBody).Data.ID, 60*time.Second, "completed")
	require.Equal(t, []string{"sandbox-steady default"}, routes(t, done))
	var history []struct {
		Evaluations []struct {
			ProviderID string `json:"provider_id"`
			Reason     string `json:"reason"`
		} `json:"provider_evaluations"`
	}
	decodeAs(t, done.Data.Attributes.RoutingHistory, &history)
	reasons := map[string]string{}
	for _, e := range history[0].Evaluations {
		reasons[e.ProviderID] = e.Reason
	}
	require.Equal(t, map[string]string{"sandbox-flaky": "circuit_open", "sandbox-steady": "selected"}, reasons)

	resp, err := http.Get(g.url("/metrics"))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	exposed := string(body)
	require.Contains(t, exposed, `gateway_provider_breaker_state{provider="sandbox-flaky",service="llm-tasks"} 2`)
	require.Contains(t, exposed, `gateway_provider_breaker_state{provider="sandbox-steady",service="llm-tasks"} 0`)
	require.True(t, strings.Contains(exposed, `gateway_provider_breaker_transitions_total{from="closed",provider="sandbox-flaky",service="llm-tasks",to="open"} 1`),
		"the opening is counted")

	// gateway providers prints it.
	cmd := exec.Command(gatewayBin, "providers", "--data-dir", g.dataDir, "--providers", catalog)
	cmd.Env = g.env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Regexp(t, `(?m)^PROVIDER\s+SERVICE\s+STATUS\s+HEALTH\s`, string(out))
	require.Regexp(t, `(?m)^sandbox-flaky\s+llm-tasks\s+active\s+open\s+\d+%\s+\d+\s+1\s+\S+Z\s+-$`, string(out))
	require.Regexp(t, `(?m)^sandbox-steady\s+llm-tasks\s+active\s+closed\s`, string(out))
}
