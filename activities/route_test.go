package activities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// routingFleet: two llm providers; "cheap" allows two requests a day (a
// day rather than a minute, so that a test does not cross into a new
// window but at midnight).
const routingFleet = `providers:
  - id: cheap
    name: Cheap
    adapter: scripted
    quality: 0.5
    services:
      llm-tasks:
        models: [m1]
        limits: {requests_per_minute: 0, requests_per_day: 2, max_file_size_mb: 0, max_duration_seconds: 0}
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

// routingEnv is a worker routing through a store cache, as `gateway dev`
// and `gateway worker` do.
func routingEnv(t *testing.T, st *store.Store) (*testsuite.TestActivityEnvironment, *store.Cache) {
	t.Helper()
	registry := registryOf(t, routingFleet, map[string]providers.Factory{
		"scripted": func(*providers.Provider) (providers.Adapter, error) { return &scriptedAdapter{}, nil },
	})
	cache := store.NewCache(st, store.CacheTTL)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&activities.Routing{Store: cache, Providers: registry, WorkerID: "w"})
	return env, cache
}

func route(t *testing.T, env *testsuite.TestActivityEnvironment, in activities.RouteInput) activities.RouteOutput {
	t.Helper()
	value, err := env.ExecuteActivity(acts.Routing.DecideRoute, in)
	require.NoError(t, err)
	var out activities.RouteOutput
	require.NoError(t, value.Get(&out))
	return out
}

// jobSeq numbers llmJob's jobs: each is a decision of its own.
var jobSeq atomic.Int64

func llmJob() activities.RouteInput {
	return activities.RouteInput{JobID: fmt.Sprintf("job-%d", jobSeq.Add(1)), Service: jobs.LLMTasks, Tenant: "acme", Input: json.RawMessage(`{"type":"text","text":"t","prompt":"p"}`), Attempt: 1}
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
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		env, _ := routingEnv(t, st)
		for range 2 {
			require.Equal(t, "cheap", route(t, env, llmJob()).Routing.ProviderID)
		}
		out := route(t, env, llmJob())
		require.Equal(t, "good", out.Routing.ProviderID, "the cheap provider used its two requests of the day")
		require.Equal(t, jobs.EvalRateLimited, reasonOf(out, "cheap"))

		// A job that names the provider is counted but not refused.
		explicit := llmJob()
		explicit.Explicit = "cheap"
		require.Equal(t, "cheap", route(t, env, explicit).Routing.ProviderID)
	})
}

// TestDecideRouteAcrossWorkers: a worker learns that a provider is at its
// limit from the refusal of its reservation, and routes elsewhere.
func TestDecideRouteAcrossWorkers(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		first, _ := routingEnv(t, st)
		second, _ := routingEnv(t, st)
		require.Equal(t, "cheap", route(t, second, llmJob()).Routing.ProviderID)
		require.Equal(t, "cheap", route(t, first, llmJob()).Routing.ProviderID)
		for range 2 {
			out := route(t, second, llmJob())
			require.Equal(t, "good", out.Routing.ProviderID, "the first worker took the last request of the day")
			require.Equal(t, jobs.EvalRateLimited, reasonOf(out, "cheap"))
		}
		counts, err := st.Routing.RateCounts(context.Background(), jobs.LLMTasks, []string{"cheap"}, time.Now())
		require.NoError(t, err)
		require.Equal(t, 2, counts["cheap"].Day, "refused reservations are not counted")
	})
}

// cheapAndGood creates acme's llm-tasks policy name, of strategy, over
// cheap at priority 1 and good at goodPriority, both of weight 1.
func cheapAndGood(t *testing.T, st *store.Cache, name string, strategy policy.Strategy, goodPriority int) policy.Policy {
	t.Helper()
	p, err := st.CreatePolicy(context.Background(), policy.Policy{Tenant: "acme", Name: name, Strategy: strategy,
		Services:  []jobs.ServiceID{jobs.LLMTasks},
		Providers: []policy.Entry{{ProviderID: "cheap", Priority: 1, Weight: 1}, {ProviderID: "good", Priority: goodPriority, Weight: 1}}})
	require.NoError(t, err)
	return p
}

func TestDecideRouteResolvesAndPinsPolicies(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testDecideRouteResolvesAndPinsPolicies)
}

func testDecideRouteResolvesAndPinsPolicies(t *testing.T, s *store.Store) {
	env, st := routingEnv(t, s)
	ctx := context.Background()
	p := cheapAndGood(t, st, "quality", policy.StrategyQuality, 2)

	out := route(t, env, llmJob())
	require.Equal(t, "good", out.Routing.ProviderID)
	require.Equal(t, jobs.ReasonPolicyRule, out.Routing.Reason)
	require.Equal(t, jobs.SourceTenantLatest, out.Routing.PolicySource)
	require.Equal(t, p.ID, out.Routing.PolicyID)
	require.Equal(t, 1, out.Routing.PolicyVersion)

	// The policy changes; a failover of the job keeps version 1.
	_, err := st.UpdatePolicy(ctx, p.ID, func(cur policy.Policy) (policy.Policy, error) {
		cur.Providers = []policy.Entry{{ProviderID: "good", Priority: 1, Weight: 1}}
		return cur, nil
	})
	require.NoError(t, err)
	failover := llmJob()
	failover.Attempt, failover.Failed = 2, []string{"good"}
	failover.Pinned = &activities.PolicyPin{ID: p.ID, Version: 1, Source: jobs.SourceTenantLatest}
	out = route(t, env, failover)
	require.Equal(t, "cheap", out.Routing.ProviderID, "version 1 still lists cheap")
	require.Equal(t, jobs.ReasonFailover, out.Routing.Reason)

	// A new job routes by version 2.
	out = route(t, env, llmJob())
	require.Equal(t, 2, out.Routing.PolicyVersion)
}

// TestDecideRouteAppliesTenantSwitchesAndStatuses: changes made through
// the worker's process show in its next decision, whatever it cached.
func TestDecideRouteAppliesTenantSwitchesAndStatuses(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testDecideRouteAppliesTenantSwitchesAndStatuses)
}

func testDecideRouteAppliesTenantSwitchesAndStatuses(t *testing.T, s *store.Store) {
	env, st := routingEnv(t, s)
	require.Equal(t, "cheap", route(t, env, llmJob()).Routing.ProviderID, "no tenant record: every provider")
	ctx := context.Background()
	require.NoError(t, st.CreateTenant(ctx, &store.Tenant{ID: "acme", Providers: map[string]store.Access{"cheap": {Enabled: false}}}))
	out := route(t, env, llmJob())
	require.Equal(t, "good", out.Routing.ProviderID)
	require.Equal(t, jobs.EvalTenantProviderDisabled, reasonOf(out, "cheap"))

	disabled := "disabled"
	_, err := st.SetProviderStatus(ctx, "good", &disabled, nil)
	require.NoError(t, err)
	out = route(t, env, llmJob())
	require.NotNil(t, out.Error)
	require.Equal(t, jobs.CodeNoEligibleProvider, out.Error.Code)
	require.Equal(t, jobs.EvalProviderDisabled, reasonOf(out, "good"))

	_, err = st.UpdateTenant(ctx, "acme", func(t *store.Tenant) error {
		t.Providers["cheap"] = store.Access{Enabled: true}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "cheap", route(t, env, llmJob()).Routing.ProviderID)
}

// TestDecideRouteRetriedCountsOnce: DecideRoute retried with the same job
// attempt (its activity timed out after the reservation committed) decides
// the same provider and counts the request once, even when its own
// reservation filled the provider's day.
func TestDecideRouteRetriedCountsOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		env, _ := routingEnv(t, st)
		dayCount := func() int {
			t.Helper()
			counts, err := st.Routing.RateCounts(context.Background(), jobs.LLMTasks, []string{"cheap"}, time.Now())
			require.NoError(t, err)
			return counts["cheap"].Day
		}
		first := llmJob()
		for range 2 {
			require.Equal(t, "cheap", route(t, env, first).Routing.ProviderID)
		}
		require.Equal(t, 1, dayCount(), "the retry was not counted")

		second := llmJob()
		require.Equal(t, "cheap", route(t, env, second).Routing.ProviderID, "the last request of the day")
		require.Equal(t, "cheap", route(t, env, second).Routing.ProviderID, "the retry keeps the request it reserved")
		require.Equal(t, 2, dayCount())
		require.Equal(t, "good", route(t, env, llmJob()).Routing.ProviderID, "the next job finds the day full")

		failover := second
		failover.Attempt, failover.Failed = 2, []string{"cheap"}
		require.Equal(t, "good", route(t, env, failover).Routing.ProviderID, "the job's next attempt is a decision of its own")
	})
}

// TestDecideRouteRetriedTakesItsTurnOnce: a retried round-robin decision
// gets the turn it took and decides the same provider; the next job gets
// the next turn.
func TestDecideRouteRetriedTakesItsTurnOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		env, st := routingEnv(t, s)
		ctx := context.Background()
		cheapAndGood(t, st, "spread", policy.StrategyRoundRobin, 1)

		job := llmJob()
		decided := route(t, env, job).Routing.ProviderID
		for range 2 {
			require.Equal(t, decided, route(t, env, job).Routing.ProviderID)
		}
		next := route(t, env, llmJob()).Routing.ProviderID
		require.NotEqual(t, decided, next, "the next job is spread to the other provider")
		counts, err := s.Routing.RateCounts(ctx, jobs.LLMTasks, []string{"cheap"}, time.Now())
		require.NoError(t, err)
		require.Equal(t, 1, counts["cheap"].Day, "one of the two decisions reserved with cheap, once")
		third := route(t, env, llmJob()).Routing.ProviderID
		require.Equal(t, decided, third, "four tries of two decisions took two turns: the third job's is the first's")
	})
}
