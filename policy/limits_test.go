package policy_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
)

// limitedCatalog: "small" takes 10 MB and 10 minutes, "big" 100 MB and an
// hour, "huge" anything; cheapest first in that order.
func limitedCatalog() []*providers.Provider {
	limited := func(amount float64, mb, seconds int) *providers.Capability {
		c := capability(amount, "timestamps")
		c.Limits = providers.Limits{MaxFileSizeMB: mb, MaxDurationSeconds: seconds}
		return c
	}
	return []*providers.Provider{
		{ID: "small", Services: map[jobs.ServiceID]*providers.Capability{jobs.Transcriptions: limited(0.001, 10, 600)}},
		{ID: "big", Services: map[jobs.ServiceID]*providers.Capability{jobs.Transcriptions: limited(0.01, 100, 3600)}},
		{ID: "huge", Services: map[jobs.ServiceID]*providers.Capability{jobs.Transcriptions: limited(0.1, 0, 0)}},
	}
}

func ptr(v float64) *float64 { return &v }

func TestMediaLimitsExcludeProviders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		sizeMB, length *float64
		policy         bool
		want           string
		evals          map[string]string
	}{
		{"unknown media fits anywhere", nil, nil, false, "small", map[string]string{"small": jobs.EvalSelected}},
		{"exactly at the limits", ptr(10), ptr(600), false, "small", map[string]string{"small": jobs.EvalSelected}},
		{"over small's size", ptr(10.5), ptr(60), false, "big", map[string]string{"small": jobs.EvalLimitFileSize, "big": jobs.EvalSelected}},
		{"over small's length", ptr(1), ptr(601), false, "big", map[string]string{"small": jobs.EvalLimitDuration, "big": jobs.EvalSelected}},
		{"over both limited ones", ptr(500), ptr(7200), false, "huge", map[string]string{"small": jobs.EvalLimitFileSize, "big": jobs.EvalLimitFileSize, "huge": jobs.EvalSelected}},
		{"a policy's entries too", ptr(50), nil, true, "big", map[string]string{"small": jobs.EvalLimitFileSize, "big": jobs.EvalSelected}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := policy.Request{Needs: needs("timestamps"), Catalog: limitedCatalog(), FileSizeMB: tc.sizeMB, DurationSeconds: tc.length, Now: now}
			if tc.policy {
				req.Policy = &policy.Policy{ID: "p", Version: 1, Strategy: policy.StrategyPrice, Providers: []policy.Entry{
					{ProviderID: "small", Priority: 1}, {ProviderID: "big", Priority: 2}, {ProviderID: "huge", Priority: 3},
				}}
			}
			info, err := policy.Decide(req)
			require.NoError(t, err)
			require.Equal(t, tc.want, info.ProviderID)
			for id, reason := range tc.evals {
				require.Equal(t, reason, evaluation(t, info, id).Reason, id)
			}
		})
	}
	info, err := policy.Decide(policy.Request{Needs: needs("timestamps"), Catalog: limitedCatalog(), FileSizeMB: ptr(12.34), DurationSeconds: ptr(4000), Now: now})
	require.NoError(t, err)
	require.Equal(t, "the media is 12.3 MB; small takes at most 10 MB for transcriptions", evaluation(t, info, "small").Message)
	require.Equal(t, "the media lasts 1h6m40s; big takes at most 1h0m0s for transcriptions", evaluation(t, info, "big").Message)
}

func TestMediaNoProviderCanTake(t *testing.T) {
	t.Parallel()
	onlyLimited := limitedCatalog()[:2]
	code := func(req policy.Request) string {
		t.Helper()
		req.Needs, req.Now = needs("timestamps"), now
		_, err := policy.Decide(req)
		var noCandidate *policy.NoCandidateError
		require.True(t, errors.As(err, &noCandidate), "%v", err)
		return noCandidate.Code
	}
	require.Equal(t, jobs.CodeFileTooLarge, code(policy.Request{Catalog: onlyLimited, FileSizeMB: ptr(200)}))
	require.Equal(t, jobs.CodeMediaTooLong, code(policy.Request{Catalog: onlyLimited, FileSizeMB: ptr(1), DurationSeconds: ptr(9000)}))
	require.Equal(t, jobs.CodeFileTooLarge, code(policy.Request{Catalog: onlyLimited, FileSizeMB: ptr(50), Failed: []string{"big"}, Attempt: 2}),
		"the one left is too small: the size is why the job fails, not the earlier failure")
	require.Equal(t, jobs.CodeNoEligibleProvider, code(policy.Request{Catalog: onlyLimited, FileSizeMB: ptr(50), DurationSeconds: ptr(7200)}),
		"mixed reasons: no single limit to name")
	require.Equal(t, jobs.CodeFileTooLarge, code(policy.Request{Catalog: limitedCatalog(), Explicit: "small", FileSizeMB: ptr(11)}),
		"a named provider's limits hold too")
	require.Equal(t, jobs.CodeMediaTooLong, code(policy.Request{Catalog: limitedCatalog(), Explicit: "big", DurationSeconds: ptr(3601)}))
	info, err := policy.Decide(policy.Request{Needs: needs("timestamps"), Catalog: limitedCatalog(), Explicit: "huge", FileSizeMB: ptr(5000), Now: now})
	require.NoError(t, err)
	require.Equal(t, "huge", info.ProviderID)
}

func TestMediaCapBytes(t *testing.T) {
	t.Parallel()
	catalog := limitedCatalog()
	require.Equal(t, int64(0), policy.MediaCapBytes(catalog, jobs.Transcriptions, ""), "huge takes anything")
	require.Equal(t, int64(100<<20), policy.MediaCapBytes(catalog[:2], jobs.Transcriptions, ""), "the largest limit")
	require.Equal(t, int64(10<<20), policy.MediaCapBytes(catalog, jobs.Transcriptions, "small"), "only the named provider's")
	require.Equal(t, int64(0), policy.MediaCapBytes(catalog, jobs.LLMTasks, ""), "no provider of the service: nothing to cap by")
}
