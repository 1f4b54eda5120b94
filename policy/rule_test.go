package policy_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
)

// fleet is a catalog where every strategy has a different winner:
// fast is quickest, best has the highest quality, thrifty is cheapest.
func fleet() []*providers.Provider {
	transcription := func(amount float64) map[jobs.ServiceID]*providers.Capability {
		return map[jobs.ServiceID]*providers.Capability{jobs.Transcriptions: capability(amount, "timestamps", "language_detection")}
	}
	return []*providers.Provider{
		{ID: "fast", Quality: 0.6, LatencyMSHint: 100, Services: transcription(0.02)},
		{ID: "best", Quality: 0.95, LatencyMSHint: 2000, Services: transcription(0.03)},
		{ID: "thrifty", Quality: 0.5, LatencyMSHint: 900, Services: transcription(0.001)},
	}
}

func intp(v int) *int { return &v }

func rule(strategy policy.Strategy, entries ...policy.Entry) *policy.Policy {
	return &policy.Policy{ID: "0193a9d4-0000-7000-8000-00000000000a", Version: 3, Strategy: strategy, Providers: entries}
}

func entry(id string, priority int) policy.Entry {
	return policy.Entry{ProviderID: id, Priority: priority, Weight: 1}
}

func decidePolicy(t *testing.T, req policy.Request) (jobs.RoutingInfo, map[string]jobs.Evaluation) {
	t.Helper()
	req.Catalog, req.Now, req.Source = fleet(), now, jobs.SourceTenantLatest
	if req.Needs.Service == "" {
		req.Needs = needs("timestamps")
	}
	info, err := policy.Decide(req)
	require.NoError(t, err)
	evals := map[string]jobs.Evaluation{}
	for _, e := range info.ProviderEvaluations {
		evals[e.ProviderID] = e
	}
	return info, evals
}

func TestStrategiesRankEligibleProviders(t *testing.T) {
	t.Parallel()
	entries := []policy.Entry{entry("best", 1), entry("fast", 2), entry("thrifty", 3)}
	tests := []struct {
		strategy policy.Strategy
		latency  map[string]float64
		want     string
	}{
		{policy.StrategyPrice, nil, "thrifty"},
		{policy.StrategyQuality, nil, "best"},
		{policy.StrategyLatency, nil, "fast"},
		// Observed latencies win over the catalog's hints.
		{policy.StrategyLatency, map[string]float64{"fast": 3000, "thrifty": 250}, "thrifty"},
	}
	for _, tt := range tests {
		t.Run(string(tt.strategy), func(t *testing.T) {
			t.Parallel()
			req := policy.Request{Policy: rule(tt.strategy, entries...), Attempt: 1}
			if tt.latency != nil {
				req.Latency = func(id string) (float64, bool) { ms, ok := tt.latency[id]; return ms, ok }
			}
			info, evals := decidePolicy(t, req)
			require.Equal(t, tt.want, info.ProviderID)
			require.Equal(t, jobs.ReasonPolicyRule, info.Reason)
			require.Equal(t, "0193a9d4-0000-7000-8000-00000000000a", info.PolicyID)
			require.Equal(t, 3, info.PolicyVersion)
			require.Equal(t, jobs.SourceTenantLatest, info.PolicySource)
			require.Equal(t, jobs.EvalSelected, evals[tt.want].Reason)
			for id, e := range evals {
				if id != tt.want {
					require.Equal(t, jobs.EvalNotChosen, e.Reason)
				}
			}
			// Evaluations are listed in priority order.
			require.Equal(t, []string{"best", "fast", "thrifty"}, []string{
				info.ProviderEvaluations[0].ProviderID, info.ProviderEvaluations[1].ProviderID, info.ProviderEvaluations[2].ProviderID})
		})
	}
}

func TestPriorityBreaksTies(t *testing.T) {
	t.Parallel()
	// Neither provider has a latency: priority decides.
	catalog := []*providers.Provider{
		{ID: "a", Services: fleet()[0].Services},
		{ID: "b", Services: fleet()[0].Services},
	}
	info, err := policy.Decide(policy.Request{Needs: needs(), Catalog: catalog, Now: now,
		Policy: rule(policy.StrategyLatency, entry("a", 2), entry("b", 1))})
	require.NoError(t, err)
	require.Equal(t, "b", info.ProviderID)
}

func TestEligibilityChecksInPolicies(t *testing.T) {
	t.Parallel()
	size := 300.0
	tests := []struct {
		name   string
		req    policy.Request
		reason map[string]string
		want   string
	}{
		{
			name: "file size condition",
			req: policy.Request{FileSizeMB: &size, Policy: rule(policy.StrategyPrice,
				policy.Entry{ProviderID: "thrifty", Priority: 1, Conditions: &policy.Conditions{MaxFileSizeMB: intp(100)}},
				entry("fast", 2))},
			reason: map[string]string{"thrifty": jobs.EvalConditionFileSize},
			want:   "fast",
		},
		{
			name: "unknown file size satisfies the size condition",
			req: policy.Request{Policy: rule(policy.StrategyPrice,
				policy.Entry{ProviderID: "thrifty", Priority: 1, Conditions: &policy.Conditions{MaxFileSizeMB: intp(100)}},
				entry("fast", 2))},
			want: "thrifty",
		},
		{
			name: "language condition",
			req: policy.Request{Needs: jobs.Requirements{Service: jobs.Transcriptions, Features: []string{"timestamps"}, Language: "de-AT"},
				Policy: rule(policy.StrategyPrice,
					policy.Entry{ProviderID: "thrifty", Priority: 1, Conditions: &policy.Conditions{Languages: []string{"en"}}},
					policy.Entry{ProviderID: "fast", Priority: 2, Conditions: &policy.Conditions{Languages: []string{"de"}}})},
			reason: map[string]string{"thrifty": jobs.EvalConditionLanguage, "fast": jobs.EvalSelected},
			want:   "fast",
		},
		{
			name: "language condition with a detected language",
			req: policy.Request{Policy: rule(policy.StrategyPrice,
				policy.Entry{ProviderID: "thrifty", Priority: 1, Conditions: &policy.Conditions{Languages: []string{"en"}}},
				entry("best", 2))},
			reason: map[string]string{"thrifty": jobs.EvalConditionLanguage},
			want:   "best",
		},
		{
			name:   "rate limited",
			req:    policy.Request{RateLimited: func(id string) bool { return id == "thrifty" }, Policy: rule(policy.StrategyPrice, entry("thrifty", 1), entry("fast", 2))},
			reason: map[string]string{"thrifty": jobs.EvalRateLimited},
			want:   "fast",
		},
		{
			name: "degraded is deprioritised, not excluded",
			req: policy.Request{Status: func(p *providers.Provider) (providers.Status, providers.Status) {
				if p.ID == "thrifty" {
					return providers.StatusActive, providers.StatusDegraded
				}
				return providers.StatusActive, providers.StatusActive
			}, Policy: rule(policy.StrategyPrice, entry("thrifty", 1), entry("fast", 2))},
			reason: map[string]string{"thrifty": jobs.EvalProviderDegraded},
			want:   "fast",
		},
		{
			name:   "provider removed from the catalog",
			req:    policy.Request{Policy: rule(policy.StrategyPrice, entry("retired", 1), entry("fast", 2))},
			reason: map[string]string{"retired": jobs.EvalProviderDisabled},
			want:   "fast",
		},
		{
			name:   "tenant switch",
			req:    policy.Request{TenantAllows: func(id string) bool { return id != "thrifty" }, Policy: rule(policy.StrategyPrice, entry("thrifty", 1), entry("fast", 2))},
			reason: map[string]string{"thrifty": jobs.EvalTenantProviderDisabled},
			want:   "fast",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.req.Attempt = 1
			info, evals := decidePolicy(t, tt.req)
			require.Equal(t, tt.want, info.ProviderID)
			for id, reason := range tt.reason {
				require.Equal(t, reason, evals[id].Reason, "evaluation of %s: %+v", id, evals[id])
				require.NotEmpty(t, evals[id].Message)
			}
		})
	}
}

func TestPolicyFailoverKeepsThePolicy(t *testing.T) {
	t.Parallel()
	info, evals := decidePolicy(t, policy.Request{Failed: []string{"thrifty"}, Attempt: 2,
		Policy: rule(policy.StrategyPrice, entry("thrifty", 1), entry("fast", 2))})
	require.Equal(t, "fast", info.ProviderID)
	require.Equal(t, jobs.ReasonFailover, info.Reason)
	require.Equal(t, 2, info.Attempt)
	require.Empty(t, info.PolicyID, "policy_id only when the reason is policy_rule")
	require.Zero(t, info.PolicyVersion)
	require.Equal(t, jobs.SourceTenantLatest, info.PolicySource)
	require.Equal(t, jobs.EvalFailed, evals["thrifty"].Reason)

	_, err := policy.Decide(policy.Request{Needs: needs(), Catalog: fleet(), Now: now, Failed: []string{"thrifty", "fast"}, Attempt: 3,
		Policy: rule(policy.StrategyPrice, entry("thrifty", 1), entry("fast", 2))})
	var nc *policy.NoCandidateError
	require.True(t, errors.As(err, &nc))
	require.Equal(t, jobs.CodeProvidersExhausted, nc.Code)
}

func TestEmptyPolicyHasNoEligibleProvider(t *testing.T) {
	t.Parallel()
	_, err := policy.Decide(policy.Request{Needs: needs(), Catalog: fleet(), Now: now, Policy: rule(policy.StrategyPrice), Attempt: 1})
	var nc *policy.NoCandidateError
	require.True(t, errors.As(err, &nc))
	require.Equal(t, jobs.CodeNoEligibleProvider, nc.Code)
}

func TestRoundRobinSpreadsByWeight(t *testing.T) {
	t.Parallel()
	pol := rule(policy.StrategyRoundRobin,
		policy.Entry{ProviderID: "fast", Priority: 1, Weight: 3},
		policy.Entry{ProviderID: "best", Priority: 2, Weight: 1},
		policy.Entry{ProviderID: "thrifty", Priority: 3, Weight: 2})
	counts := map[string]int{}
	var sequence []string
	for turn := range int64(600) {
		info, err := policy.Decide(policy.Request{Needs: needs(), Catalog: fleet(), Now: now, Policy: pol, RoundRobinTurn: turn, Attempt: 1})
		require.NoError(t, err)
		counts[info.ProviderID]++
		if turn < 6 {
			sequence = append(sequence, info.ProviderID)
		}
	}
	require.Equal(t, map[string]int{"fast": 300, "best": 100, "thrifty": 200}, counts)
	// Interleaved, not in blocks.
	require.Equal(t, []string{"fast", "thrifty", "fast", "best", "thrifty", "fast"}, sequence)

	// A provider out of the running leaves the spread to the others.
	counts = map[string]int{}
	for turn := range int64(50) {
		info, err := policy.Decide(policy.Request{Needs: needs(), Catalog: fleet(), Now: now, Policy: pol, RoundRobinTurn: turn,
			Failed: []string{"fast"}, Attempt: 2})
		require.NoError(t, err)
		counts[info.ProviderID]++
	}
	require.Equal(t, map[string]int{"best": 17, "thrifty": 33}, counts)
}
