package activities_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// routingFleet: two llm providers; "cheap" allows two requests a minute.
const routingFleet = `providers:
  - id: cheap
    name: Cheap
    adapter: scripted
    quality: 0.5
    services:
      llm-tasks:
        models: [m1]
        limits: {requests_per_minute: 2, requests_per_day: 0, max_file_size_mb: 0, max_duration_seconds: 0}
        pricing: {unit: per_token, amount: 0.000001, currency: USD}
  - id: good
    name: Good
    adapter: scripted
    quality: 0.9
    services:
      llm-tasks:
        models: [m1]
        pricing: {unit: per_token, amount: 0.00001, currency: USD}
`

func routingEnv(t *testing.T) (*testsuite.TestActivityEnvironment, *store.Store) {
	t.Helper()
	catalog, err := providers.ParseCatalog([]byte(routingFleet))
	require.NoError(t, err)
	registry, err := providers.NewRegistry(catalog, map[string]providers.Factory{
		"scripted": func(*providers.Provider) (providers.Adapter, error) { return &scriptedAdapter{}, nil },
	})
	require.NoError(t, err)
	st := storetest.SQLite(t)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&activities.Activities{Store: st, Routing: st, Providers: registry, WorkerID: "w"})
	return env, st
}

func route(t *testing.T, env *testsuite.TestActivityEnvironment, in activities.RouteInput) activities.RouteOutput {
	t.Helper()
	value, err := env.ExecuteActivity(acts.DecideRoute, in)
	require.NoError(t, err)
	var out activities.RouteOutput
	require.NoError(t, value.Get(&out))
	return out
}

func llmJob() activities.RouteInput {
	return activities.RouteInput{JobID: "j", Service: providers.LLMTasks, Tenant: "acme", Input: json.RawMessage(`{"type":"text","text":"t","prompt":"p"}`), Attempt: 1}
}

func reasonOf(out activities.RouteOutput, provider string) string {
	for _, e := range out.Routing.ProviderEvaluations {
		if e.ProviderID == provider {
			return e.Reason
		}
	}
	return ""
}

func TestDecideRouteEnforcesRateLimits(t *testing.T) {
	t.Parallel()
	env, _ := routingEnv(t)
	for range 2 {
		require.Equal(t, "cheap", route(t, env, llmJob()).Routing.ProviderID)
	}
	out := route(t, env, llmJob())
	require.Equal(t, "good", out.Routing.ProviderID, "the cheap provider used its two requests this minute")
	require.Equal(t, policy.EvalRateLimited, reasonOf(out, "cheap"))

	// A job that names the provider is counted but not refused.
	explicit := llmJob()
	explicit.Explicit = "cheap"
	require.Equal(t, "cheap", route(t, env, explicit).Routing.ProviderID)
}

func TestDecideRouteResolvesAndPinsPolicies(t *testing.T) {
	t.Parallel()
	env, st := routingEnv(t)
	ctx := context.Background()
	p, err := st.CreatePolicy(ctx, policy.Policy{Tenant: "acme", Name: "quality", Strategy: policy.StrategyQuality,
		Services:  []providers.ServiceID{providers.LLMTasks},
		Providers: []policy.Entry{{ProviderID: "cheap", Priority: 1, Weight: 1}, {ProviderID: "good", Priority: 2, Weight: 1}}})
	require.NoError(t, err)

	out := route(t, env, llmJob())
	require.Equal(t, "good", out.Routing.ProviderID)
	require.Equal(t, policy.ReasonPolicyRule, out.Routing.Reason)
	require.Equal(t, policy.SourceTenantLatest, out.Routing.PolicySource)
	require.Equal(t, p.ID, out.Routing.PolicyID)
	require.Equal(t, 1, out.Routing.PolicyVersion)

	// The policy changes; a failover of the job keeps version 1.
	_, err = st.UpdatePolicy(ctx, p.ID, func(cur policy.Policy) (policy.Policy, error) {
		cur.Providers = []policy.Entry{{ProviderID: "good", Priority: 1, Weight: 1}}
		return cur, nil
	})
	require.NoError(t, err)
	failover := llmJob()
	failover.Attempt, failover.Failed = 2, []string{"good"}
	failover.Pinned = &activities.PolicyPin{ID: p.ID, Version: 1, Source: policy.SourceTenantLatest}
	out = route(t, env, failover)
	require.Equal(t, "cheap", out.Routing.ProviderID, "version 1 still lists cheap")
	require.Equal(t, policy.ReasonFailover, out.Routing.Reason)

	// A new job routes by version 2.
	out = route(t, env, llmJob())
	require.Equal(t, 2, out.Routing.PolicyVersion)
}

func TestDecideRouteAppliesTenantSwitchesAndStatuses(t *testing.T) {
	t.Parallel()
	env, st := routingEnv(t)
	ctx := context.Background()
	require.NoError(t, st.CreateTenant(ctx, &store.Tenant{ID: "acme", Providers: map[string]store.Access{"cheap": {Enabled: false}}}))
	out := route(t, env, llmJob())
	require.Equal(t, "good", out.Routing.ProviderID)
	require.Equal(t, policy.EvalTenantProviderDisabled, reasonOf(out, "cheap"))

	disabled := "disabled"
	_, err := st.SetProviderStatus(ctx, "good", &disabled, nil)
	require.NoError(t, err)
	out = route(t, env, llmJob())
	require.NotNil(t, out.Error)
	require.Equal(t, policy.CodeNoEligibleProvider, out.Error.Code)
	require.Equal(t, policy.EvalProviderDisabled, reasonOf(out, "good"))
}
