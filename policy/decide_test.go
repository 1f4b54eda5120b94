package policy_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func capability(amount float64, features ...string) *providers.Capability {
	return &providers.Capability{Features: features, Pricing: providers.Pricing{Unit: "per_minute", Amount: amount, Currency: "USD"}}
}

func catalog() []*providers.Provider {
	return []*providers.Provider{
		{ID: "pricey", Services: map[jobs.ServiceID]*providers.Capability{
			jobs.Transcriptions: capability(0.02, "timestamps", "diarization", "language_detection"),
		}},
		{ID: "cheap", Services: map[jobs.ServiceID]*providers.Capability{
			jobs.Transcriptions: capability(0.005, "timestamps", "language_detection"),
		}},
		{ID: "mid", Services: map[jobs.ServiceID]*providers.Capability{
			jobs.Transcriptions: capability(0.01, "timestamps", "language_detection"),
		}},
		{ID: "llm-only", Services: map[jobs.ServiceID]*providers.Capability{
			jobs.LLMTasks: {Models: []string{"m1"}},
		}},
	}
}

func needs(features ...string) jobs.Requirements {
	return jobs.Requirements{Service: jobs.Transcriptions, Features: features}
}

func evaluation(t *testing.T, info jobs.RoutingInfo, provider string) jobs.Evaluation {
	t.Helper()
	for _, e := range info.ProviderEvaluations {
		if e.ProviderID == provider {
			return e
		}
	}
	t.Fatalf("no evaluation for %s in %+v", provider, info.ProviderEvaluations)
	return jobs.Evaluation{}
}

func TestDefaultRouting(t *testing.T) {
	t.Parallel()
	statuses := func(m map[string]providers.Status) func(p *providers.Provider) (providers.Status, providers.Status) {
		return func(p *providers.Provider) (providers.Status, providers.Status) {
			if s, ok := m[p.ID]; ok {
				return s, providers.StatusActive
			}
			return providers.StatusActive, providers.StatusActive
		}
	}
	tests := []struct {
		name       string
		req        policy.Request
		want       string
		wantReason jobs.Reason
		evals      map[string]string
		wantCode   string
	}{
		{
			name:       "cheapest capable provider wins",
			req:        policy.Request{Needs: needs("timestamps")},
			want:       "cheap",
			wantReason: jobs.ReasonDefault,
			evals:      map[string]string{"cheap": jobs.EvalSelected, "mid": jobs.EvalNotChosen, "pricey": jobs.EvalNotChosen, "llm-only": jobs.EvalServiceNotSupported},
		},
		{
			name:  "a feature only one provider has",
			req:   policy.Request{Needs: needs("diarization")},
			want:  "pricey",
			evals: map[string]string{"cheap": jobs.EvalOptionNotSupported, "mid": jobs.EvalOptionNotSupported},
		},
		{
			name:  "disabled providers are excluded",
			req:   policy.Request{Needs: needs(), Status: statuses(map[string]providers.Status{"cheap": providers.StatusDisabled})},
			want:  "mid",
			evals: map[string]string{"cheap": jobs.EvalProviderDisabled},
		},
		{
			name:  "degraded providers rank after active ones",
			req:   policy.Request{Needs: needs(), Status: statuses(map[string]providers.Status{"cheap": providers.StatusDegraded, "mid": providers.StatusDegraded})},
			want:  "pricey",
			evals: map[string]string{"cheap": jobs.EvalProviderDegraded, "mid": jobs.EvalProviderDegraded},
		},
		{
			name:  "tenant switches exclude providers",
			req:   policy.Request{Needs: needs(), TenantAllows: func(id string) bool { return id != "cheap" }},
			want:  "mid",
			evals: map[string]string{"cheap": jobs.EvalTenantProviderDisabled},
		},
		{
			name:       "failover skips providers that failed",
			req:        policy.Request{Needs: needs(), Failed: []string{"cheap"}, Attempt: 2},
			want:       "mid",
			wantReason: jobs.ReasonFailover,
			evals:      map[string]string{"cheap": jobs.EvalFailed, "mid": jobs.EvalSelected},
		},
		{
			name:     "nothing capable",
			req:      policy.Request{Needs: jobs.Requirements{Service: jobs.VideoAnalyses}},
			wantCode: jobs.CodeNoEligibleProvider,
			evals:    map[string]string{"cheap": jobs.EvalServiceNotSupported},
		},
		{
			name:     "every candidate failed",
			req:      policy.Request{Needs: needs("diarization"), Failed: []string{"pricey"}, Attempt: 2},
			wantCode: jobs.CodeProvidersExhausted,
			evals:    map[string]string{"pricey": jobs.EvalFailed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.req.Catalog, tt.req.Now = catalog(), now
			info, err := policy.Decide(tt.req)
			if tt.wantCode != "" {
				var nc *policy.NoCandidateError
				require.True(t, errors.As(err, &nc), "error %v", err)
				require.ErrorIs(t, err, policy.ErrNoCandidate)
				require.Equal(t, tt.wantCode, nc.Code)
				info.ProviderEvaluations = nc.Evaluations
			} else {
				require.NoError(t, err)
				require.Equal(t, tt.want, info.ProviderID)
				if tt.wantReason != "" {
					require.Equal(t, tt.wantReason, info.Reason)
				}
				require.Equal(t, jobs.SourceNone, info.PolicySource)
				require.Equal(t, now, info.DecidedAt)
				selected := 0
				for _, e := range info.ProviderEvaluations {
					if e.Selected {
						selected++
						require.Equal(t, tt.want, e.ProviderID)
					}
				}
				require.Equal(t, 1, selected, "exactly one evaluation is selected")
			}
			for provider, reason := range tt.evals {
				e := evaluation(t, info, provider)
				require.Equal(t, reason, e.Reason, "reason for %s", provider)
				require.NotEmpty(t, e.Message)
				require.Equal(t, now, e.EvaluatedAt)
			}
			require.Len(t, info.ProviderEvaluations, len(catalog()), "every catalog provider is evaluated")
		})
	}
}

func TestExplicitChoice(t *testing.T) {
	t.Parallel()
	info, err := policy.Decide(policy.Request{Needs: needs(), Catalog: catalog(), Explicit: "pricey", Attempt: 1, Now: now})
	require.NoError(t, err)
	require.Equal(t, "pricey", info.ProviderID)
	require.Equal(t, jobs.ReasonExplicitChoice, info.Reason)
	require.Empty(t, info.PolicyID)
	require.Equal(t, 1, info.Attempt)

	_, err = policy.Decide(policy.Request{Needs: needs(), Catalog: catalog(), Explicit: "pricey", Failed: []string{"pricey"}, Attempt: 2, Now: now})
	var nc *policy.NoCandidateError
	require.True(t, errors.As(err, &nc))
	require.Equal(t, jobs.CodeProvidersExhausted, nc.Code, "an explicit choice has no other candidate")
}

func TestUnsupported(t *testing.T) {
	t.Parallel()
	p := &providers.Provider{ID: "p", Services: map[jobs.ServiceID]*providers.Capability{
		jobs.Transcriptions: {Features: []string{"timestamps"}, Languages: []string{"en", "de"}},
		jobs.Translations:   {SourceLanguages: []string{"en"}, TargetLanguages: []string{"de", "fr"}},
		jobs.LLMTasks:       {Models: []string{"m1"}},
	}}
	tests := []struct {
		name   string
		req    jobs.Requirements
		reason string
	}{
		{"supported", jobs.Requirements{Service: jobs.Transcriptions, Features: []string{"timestamps"}, Language: "en"}, ""},
		{"regional form of a listed language", jobs.Requirements{Service: jobs.Transcriptions, Language: "en-GB"}, ""},
		{"unlisted language", jobs.Requirements{Service: jobs.Transcriptions, Language: "fr"}, jobs.EvalOptionNotSupported},
		{"missing feature", jobs.Requirements{Service: jobs.Transcriptions, Features: []string{"diarization"}}, jobs.EvalOptionNotSupported},
		{"service not offered", jobs.Requirements{Service: jobs.VideoAnalyses}, jobs.EvalServiceNotSupported},
		{"target language", jobs.Requirements{Service: jobs.Translations, TargetLanguage: "es"}, jobs.EvalOptionNotSupported},
		{"source language", jobs.Requirements{Service: jobs.Translations, SourceLanguage: "ja", TargetLanguage: "de"}, jobs.EvalOptionNotSupported},
		{"model", jobs.Requirements{Service: jobs.LLMTasks, Model: "m2"}, jobs.EvalOptionNotSupported},
		{"listed model", jobs.Requirements{Service: jobs.LLMTasks, Model: "m1"}, ""},
		{"translation into English not offered", jobs.Requirements{Service: jobs.Transcriptions, TranslateToEnglish: true}, jobs.EvalOptionNotSupported},
	}
	for _, tt := range tests {
		reason, message := policy.Unsupported(p, tt.req)
		require.Equal(t, tt.reason, reason, tt.name)
		if tt.reason != "" {
			require.NotEmpty(t, message, tt.name)
		}
	}
}

// TestRoutingByModel: a pinned model leaves out, as option_not_supported,
// every provider that does not list it, by default and by a policy.
func TestRoutingByModel(t *testing.T) {
	t.Parallel()
	llm := func(amount float64, models ...string) map[jobs.ServiceID]*providers.Capability {
		return map[jobs.ServiceID]*providers.Capability{jobs.LLMTasks: {Models: models,
			Pricing: providers.Pricing{Unit: providers.PerToken, Amount: amount, Currency: "USD"}}}
	}
	cat := []*providers.Provider{
		{ID: "cheap", Services: llm(0.001, "m1")},
		{ID: "pricey", Services: llm(0.002, "m1", "m2")},
		{ID: "no-models", Services: llm(0.0005)},
	}
	pol := &policy.Policy{ID: "p", Version: 1, Strategy: policy.StrategyPrice, Providers: []policy.Entry{
		{ProviderID: "cheap", Priority: 1, Weight: 1}, {ProviderID: "no-models", Priority: 2, Weight: 1}, {ProviderID: "pricey", Priority: 3, Weight: 1}}}
	for name, pinned := range map[string]*policy.Policy{"default": nil, "policy": pol} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			info, err := policy.Decide(policy.Request{Needs: jobs.Requirements{Service: jobs.LLMTasks, Model: "m2"},
				Catalog: cat, Policy: pinned, Attempt: 1, Now: now})
			require.NoError(t, err)
			require.Equal(t, "pricey", info.ProviderID)
			require.Equal(t, jobs.EvalOptionNotSupported, evaluation(t, info, "cheap").Reason)
			require.Equal(t, jobs.EvalOptionNotSupported, evaluation(t, info, "no-models").Reason)

			_, err = policy.Decide(policy.Request{Needs: jobs.Requirements{Service: jobs.LLMTasks, Model: "m3"},
				Catalog: cat, Policy: pinned, Attempt: 1, Now: now})
			require.ErrorIs(t, err, policy.ErrNoCandidate)
		})
	}
	require.Equal(t, []string{"m1", "m2"}, policy.Models(cat, jobs.LLMTasks))
	require.Empty(t, policy.Models(cat, jobs.Transcriptions))
}

// TestRoutingByTranslation: a transcription asking for English leaves
// out, as option_not_supported, every provider whose capability does not
// translate into English, by default and by a policy.
func TestRoutingByTranslation(t *testing.T) {
	t.Parallel()
	english := capability(0.03, "timestamps", "language_detection")
	english.TranslatesToEnglish = true
	cat := append(catalog(), &providers.Provider{ID: "english", Services: map[jobs.ServiceID]*providers.Capability{jobs.Transcriptions: english}})
	pol := &policy.Policy{ID: "p", Version: 1, Strategy: policy.StrategyPrice, Providers: []policy.Entry{
		{ProviderID: "cheap", Priority: 1, Weight: 1}, {ProviderID: "english", Priority: 2, Weight: 1}}}
	for name, pinned := range map[string]*policy.Policy{"default": nil, "policy": pol} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			needs := jobs.Requirements{Service: jobs.Transcriptions, Features: []string{"timestamps"}, TranslateToEnglish: true}
			info, err := policy.Decide(policy.Request{Needs: needs, Catalog: cat, Policy: pinned, Attempt: 1, Now: now})
			require.NoError(t, err)
			require.Equal(t, "english", info.ProviderID, "the dearest, but the only one that translates")
			require.Equal(t, jobs.EvalOptionNotSupported, evaluation(t, info, "cheap").Reason)

			needs.TranslateToEnglish = false
			info, err = policy.Decide(policy.Request{Needs: needs, Catalog: cat, Policy: pinned, Attempt: 1, Now: now})
			require.NoError(t, err)
			require.Equal(t, "cheap", info.ProviderID, "without the option, the flag does not matter")
		})
	}
	_, err := policy.Decide(policy.Request{Needs: jobs.Requirements{Service: jobs.Transcriptions, TranslateToEnglish: true},
		Catalog: catalog(), Attempt: 1, Now: now})
	require.ErrorIs(t, err, policy.ErrNoCandidate, "no provider translates")
}
