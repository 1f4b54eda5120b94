package providers_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/providers"
)

func TestCircuitBreakerBlocksOverrideTheDefaults(t *testing.T) {
	t.Parallel()
	c, err := providers.ParseCatalog([]byte(`circuit_breaker: {open_seconds: 5}
providers:
  - id: tight
    name: Tight
    adapter: sandbox
    circuit_breaker: {minimum_calls: 5, window_seconds: 2, failure_rate_percent: 40}
    services:
      llm-tasks: {models: [m], pricing: {unit: per_token, amount: 1, currency: USD}}
  - id: off
    name: Off
    adapter: sandbox
    circuit_breaker: {enabled: false}
    services:
      llm-tasks: {models: [m], pricing: {unit: per_token, amount: 1, currency: USD}}
`))
	require.NoError(t, err)
	tight, _ := c.Lookup("tight")
	cfg := c.BreakerConfig(tight)
	want := breaker.Defaults()
	want.MinCalls, want.Window, want.FailureRate, want.OpenFor = 5, 2*time.Second, 0.4, 5*time.Second
	require.Equal(t, want, cfg)
	off, _ := c.Lookup("off")
	require.True(t, c.BreakerConfig(off).Disabled)
	require.Equal(t, breaker.Defaults(), providers.DefaultCatalog().BreakerConfig(nil), "on by default")

	_, err = providers.ParseCatalog([]byte(`providers:
  - id: bad
    name: Bad
    adapter: sandbox
    circuit_breaker: {failure_rate_percent: 150, half_open_probes: 0, probes: 2}
    services:
      llm-tasks: {models: [m], pricing: {unit: per_token, amount: 1, currency: USD}}
`))
	require.ErrorContains(t, err, `unknown key "probes" in circuit_breaker`)
	_, err = providers.ParseCatalog([]byte(`providers:
  - id: bad
    name: Bad
    adapter: sandbox
    circuit_breaker: {failure_rate_percent: 150, half_open_probes: 0}
    services:
      llm-tasks: {models: [m], pricing: {unit: per_token, amount: 1, currency: USD}}
`))
	require.ErrorContains(t, err, "circuit_breaker.failure_rate_percent 150 is out of range")
	require.ErrorContains(t, err, "circuit_breaker.half_open_probes 0 must be at least 1")
}
