package activities_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/providers"
)

const usageCatalog = `price_version: test-1
providers:
  - id: priced
    name: Priced
    adapter: scripted
    services:
      transcriptions:
        pricing: {unit: per_minute, amount: 0.006, currency: USD}
      translations:
        pricing: {unit: per_character, amount: 0.00002, currency: USD}
      llm-tasks:
        models: [m1]
        pricing: {unit: per_token, amount: 0.000001, output_amount: 0.000004, currency: USD}
  - id: free
    name: Free
    adapter: scripted
    services:
      transcriptions:
        pricing: {unit: per_minute, amount: 0, currency: USD}
`

// saveCompleted projects snap as completed through the SaveJob activity.
func saveCompleted(t *testing.T, snap jobs.Snapshot) (*recordingStore, *metrics.Metrics) {
	t.Helper()
	registry := registryOf(t, usageCatalog, map[string]providers.Factory{"scripted": answeredBy(&scriptedAdapter{})})
	st := &recordingStore{}
	m := metrics.New()
	set := activities.New(activities.Deps{Store: st, Providers: registry, Metrics: m})
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	set.Register(env)

	done := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	routing := jobs.RoutingInfo{ProviderID: snap.Provider, Reason: jobs.ReasonFailover, Attempt: 2}
	snap.ID, snap.Tenant, snap.Application = "job-1", "acme", "web"
	if snap.UserID == "" {
		snap.UserID = "u"
	}
	snap.Status, snap.Revision, snap.CompletedAt = jobs.StatusCompleted, 5, &done
	snap.Routing, snap.RoutingHistory = &routing, []jobs.RoutingInfo{{Attempt: 1}, routing}
	_, err := env.ExecuteActivity(acts.Projections.SaveJob, snap)
	require.NoError(t, err)
	require.Len(t, st.saved, 1)
	require.Len(t, st.ledger, 1)
	require.Equal(t, "job-1", st.ledger[0].JobID)
	require.Equal(t, 2, st.ledger[0].Attempt, "the attempt that completed")
	require.Equal(t, "acme", st.ledger[0].Tenant)
	require.Equal(t, "web", st.ledger[0].Application)
	require.Equal(t, jobs.CallerKey(snap.UserID), st.ledger[0].APIKey, "the key that created the job, if one did")
	require.Equal(t, snap.Provider, st.ledger[0].Provider)
	require.Equal(t, done, st.ledger[0].BilledAt)
	return st, m
}

func usageOf(t *testing.T, st *recordingStore) jobs.JobUsage {
	t.Helper()
	var u jobs.JobUsage
	require.NoError(t, json.Unmarshal([]byte(st.saved[0].Usage), &u))
	return u
}

func TestUsageOfACompletedTranscription(t *testing.T) {
	t.Parallel()
	st, _ := saveCompleted(t, jobs.Snapshot{Service: jobs.Transcriptions, Provider: "priced",
		Input: json.RawMessage(`{"type":"audio","url":"https://example.test/a.wav"}`), Options: json.RawMessage(`{}`),
		Result: json.RawMessage(`{"format":"json","duration":3.02,"usage":{"cost":0.0003}}`)})
	require.JSONEq(t, `{"unit":"minute","quantity":0.050333333,"native":{"media_seconds":3.02},
		"cost":{"amount":0.000302,"currency":"USD"},"price_version":"test-1"}`, st.saved[0].Usage)
	require.JSONEq(t, `{"format":"json","duration":3.02}`, st.saved[0].Result, "result.usage only with include_usage")
	e := st.ledger[0]
	require.Equal(t, int64(302_000), e.CostNanos)
	require.Equal(t, "minute", e.Unit)
	require.JSONEq(t, `{"media_seconds":3.02}`, e.Native)
	require.Equal(t, "test-1", e.PriceVersion)
	require.False(t, e.Estimated)
}

func TestUsageOfACompletedTranslation(t *testing.T) {
	t.Parallel()
	st, _ := saveCompleted(t, jobs.Snapshot{Service: jobs.Translations, Provider: "priced",
		Input:   json.RawMessage(`{"type":"text","content":"Grüße, 世界","target_language":"de"}`),
		Options: json.RawMessage(`{"include_usage":true}`),
		Result:  json.RawMessage(`{"source_language":"en","target_language":"de","content":"x","character_count":99,"usage":{"cost":1}}`)})
	u := usageOf(t, st)
	require.Equal(t, int64(9), *u.Native.Characters, "code points of input.content")
	require.Equal(t, "character", u.Unit)
	require.Equal(t, int64(180_000), u.Cost.Nanos)
	require.Contains(t, st.saved[0].Result, `"usage"`, "include_usage keeps result.usage")

	st, _ = saveCompleted(t, jobs.Snapshot{Service: jobs.Translations, Provider: "priced",
		Input:  json.RawMessage(`{"type":"document","url":"https://example.test/a.docx","target_language":"de"}`),
		Result: json.RawMessage(`{"source_language":"en","target_language":"de","character_count":1234}`)})
	require.Equal(t, int64(1234), *usageOf(t, st).Native.Characters, "a document's character_count")
	require.Equal(t, int64(24_680_000), st.ledger[0].CostNanos)
}

func TestUsageOfACompletedLLMTask(t *testing.T) {
	t.Parallel()
	st, _ := saveCompleted(t, jobs.Snapshot{Service: jobs.LLMTasks, Provider: "priced",
		Input:  json.RawMessage(`{"type":"text","text":"t","prompt":"p"}`),
		Result: json.RawMessage(`{"content":"answer","finish_reason":"completed","usage":{"input_tokens":10,"output_tokens":20}}`)})
	u := usageOf(t, st)
	require.Equal(t, jobs.NativeUsage{InputTokens: ptr(int64(10)), OutputTokens: ptr(int64(20))}, u.Native)
	require.False(t, u.Estimated)
	require.Equal(t, 30.0, u.Quantity)
	require.Equal(t, int64(10*1000+20*4000), u.Cost.Nanos)
	require.NotContains(t, st.saved[0].Result, "usage")

	// No counts from the provider: four characters a token, estimated.
	// Created with an API key: the entry is billed to it.
	st, _ = saveCompleted(t, jobs.Snapshot{Service: jobs.LLMTasks, Provider: "priced", UserID: jobs.KeyCaller("k3yk3yk3yk3yk3yk"),
		Input:  json.RawMessage(`{"type":"text","text":"12345678","prompt":"abcd"}`),
		Result: json.RawMessage(`{"content":"answer!!","finish_reason":"completed"}`)})
	u = usageOf(t, st)
	require.True(t, u.Estimated)
	require.True(t, st.ledger[0].Estimated)
	require.Equal(t, jobs.NativeUsage{InputTokens: ptr(int64(3)), OutputTokens: ptr(int64(2))}, u.Native)
	require.Contains(t, st.saved[0].Usage, `"estimated":true`)
	require.Equal(t, "k3yk3yk3yk3yk3yk", st.ledger[0].APIKey)
}

func TestUsageUnpricedIsCounted(t *testing.T) {
	t.Parallel()
	st, m := saveCompleted(t, jobs.Snapshot{Service: jobs.Transcriptions, Provider: "free",
		Input: json.RawMessage(`{"type":"audio","url":"https://example.test/a.wav"}`), Result: json.RawMessage(`{"duration":60}`)})
	require.Zero(t, st.ledger[0].CostNanos)
	body := scrapeMetrics(t, m)
	require.Contains(t, body, `gateway_usage_unpriced_total{provider="free",service="transcriptions"} 1`)
	require.Contains(t, body, `gateway_usage_quantity_total{provider="free",service="transcriptions",unit="minute"} 1`)
}

func TestUsageFailedJobsAreNotBilled(t *testing.T) {
	t.Parallel()
	registry := registryOf(t, usageCatalog, map[string]providers.Factory{"scripted": answeredBy(&scriptedAdapter{})})
	st := &recordingStore{}
	set := activities.New(activities.Deps{Store: st, Providers: registry})
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	set.Register(env)
	_, err := env.ExecuteActivity(acts.Projections.SaveJob, jobs.Snapshot{ID: "job-2", Service: jobs.Transcriptions,
		Provider: "priced", Status: jobs.StatusFailed, Error: &jobs.Error{Code: "PROVIDERS_EXHAUSTED"}})
	require.NoError(t, err)
	require.Len(t, st.saved, 1)
	require.Empty(t, st.ledger)
	require.Empty(t, st.saved[0].Usage)
}

func ptr[T any](v T) *T { return &v }

// scrapeMetrics is m's exposition text.
func scrapeMetrics(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// Only a budgeted job can hold budget reservations: its ledger entry is
// settled against them, an unbudgeted one's skips reading them.
func TestUsageSettlesBudgetsOfBudgetedJobsOnly(t *testing.T) {
	t.Parallel()
	for _, budgeted := range []bool{false, true} {
		st, _ := saveCompleted(t, jobs.Snapshot{Service: jobs.LLMTasks, Provider: "priced", Budgeted: budgeted,
			Input:  json.RawMessage(`{"type":"text","text":"t","prompt":"p"}`),
			Result: json.RawMessage(`{"content":"answer","finish_reason":"completed"}`)})
		require.Equal(t, !budgeted, st.ledger[0].Unbudgeted, "budgeted %v", budgeted)
	}
	sub := jobs.Submission{JobID: "job-1", Budgeted: true}
	require.True(t, sub.Snapshot().Budgeted, "the workflow's snapshot carries it from the submission")
}

// A budgeted job that ends unbilled (failed, cancelled) gives back its
// reservations through the Budgets the worker is built with; an
// unbudgeted one, or one billed, has none to give back.
func TestBudgetedJobsEndingUnbilledReleaseTheirReservations(t *testing.T) {
	t.Parallel()
	registry := registryOf(t, usageCatalog, map[string]providers.Factory{"scripted": answeredBy(&scriptedAdapter{})})
	budgets := &fakeReserver{}
	set := activities.New(activities.Deps{Store: &recordingStore{}, Providers: registry, Budgets: budgets})
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	set.Register(env)
	for _, snap := range []jobs.Snapshot{
		{ID: "failed-budgeted", Status: jobs.StatusFailed, Budgeted: true, Error: &jobs.Error{Code: "PROVIDERS_EXHAUSTED"}},
		{ID: "cancelled-budgeted", Status: jobs.StatusFailed, Budgeted: true, Error: &jobs.Error{Code: jobs.CodeCancelled}},
		{ID: "failed-unbudgeted", Status: jobs.StatusFailed, Error: &jobs.Error{Code: "PROVIDERS_EXHAUSTED"}},
		{ID: "processing-budgeted", Status: jobs.StatusProcessing, Budgeted: true},
	} {
		snap.Service, snap.Provider, snap.Tenant = jobs.Transcriptions, "priced", "acme"
		_, err := env.ExecuteActivity(acts.Projections.SaveJob, snap)
		require.NoError(t, err, snap.ID)
	}
	require.Equal(t, []string{"failed-budgeted", "cancelled-budgeted"}, budgets.released)
}
