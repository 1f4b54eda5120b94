package activities_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// processing is job-1 as its workflow holds it once routed to scripted,
// not projected yet.
func processing() jobs.Snapshot {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	routing := jobs.RoutingInfo{ProviderID: "scripted", Reason: jobs.ReasonDefault, Attempt: 1}
	return jobs.Snapshot{ID: "job-1", Service: jobs.LLMTasks, Tenant: "acme", UserID: "u", Status: jobs.StatusProcessing,
		Provider: "scripted", Input: call().Input, Routing: &routing, RoutingHistory: []jobs.RoutingInfo{routing},
		CreatedAt: at, ProcessedAt: &at, Revision: 1}
}

func TestCallAndCompleteProjectsTheCompletedJob(t *testing.T) {
	t.Parallel()
	env, st := setup(t, &scriptedAdapter{})
	before := time.Now().UTC()
	value, err := env.ExecuteActivity(acts.Calls.CallAndComplete, activities.CompleteInput{Call: call(), Job: processing()})
	require.NoError(t, err)
	var done activities.CompletedCall
	require.NoError(t, value.Get(&done))
	require.True(t, done.Projected)
	require.False(t, done.CompletedAt.Before(before))
	require.Equal(t, "worker-7", done.WorkerID)

	require.Len(t, st.saved, 1, "one projection: the completion")
	row := st.saved[0]
	require.Equal(t, jobs.StatusCompleted, row.Status)
	require.Equal(t, 2, row.Revision, "the revision the workflow's transition gives it")
	require.Equal(t, 100, row.Progress)
	require.Equal(t, "worker-7", row.WorkerID)
	require.JSONEq(t, string(done.Result), row.Result)
	require.Equal(t, done.CompletedAt, *row.CompletedAt)
	require.Equal(t, *processing().ProcessedAt, *row.ProcessedAt, "processing's facts are kept")
	require.Contains(t, row.RoutingHistory, `"provider_id":"scripted"`)
	require.Len(t, st.ledger, 1, "billed as SaveJob bills a completion")
}

func TestCallAndCompleteLeavesAFailedProjectionToTheWorkflow(t *testing.T) {
	t.Parallel()
	env, st := setup(t, &scriptedAdapter{})
	st.failSaves = errors.New("database is away")
	value, err := env.ExecuteActivity(acts.Calls.CallAndComplete, activities.CompleteInput{Call: call(), Job: processing()})
	require.NoError(t, err, "the call succeeded: it must not be made again")
	var done activities.CompletedCall
	require.NoError(t, value.Get(&done))
	require.False(t, done.Projected)
	require.NotEmpty(t, done.Result)
}

func TestCallAndCompleteFailsAsTheCallDoes(t *testing.T) {
	t.Parallel()
	env, st := setup(t, &scriptedAdapter{err: providers.Retryable(jobs.CodeProviderUnavailable, "503", nil)})
	_, err := env.ExecuteActivity(acts.Calls.CallAndComplete, activities.CompleteInput{Call: call(), Job: processing()})
	require.ErrorContains(t, err, "503")
	require.Empty(t, st.saved, "nothing is projected when the call fails")
}

// shortSetup is setup with a provider whose calls are short, so that
// routing to it calls it locally.
func shortSetup(t *testing.T, adapter *scriptedAdapter) (*testsuite.TestActivityEnvironment, *recordingStore) {
	t.Helper()
	registry := registryOf(t, llmCatalog("scripted", "Scripted", "timed", ""),
		map[string]providers.Factory{"timed": answeredBy(&timedAdapter{scriptedAdapter: *adapter, d: time.Millisecond})})
	st := &recordingStore{}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	activities.New(activities.Deps{Store: st, Providers: registry, WorkerID: "worker-7"}).Register(env)
	return env, st
}

// pending is job-1 as its workflow holds it before its first decision.
func pending() jobs.Snapshot {
	job := processing()
	job.Status, job.Provider, job.Routing, job.RoutingHistory, job.ProcessedAt, job.Revision = jobs.StatusPending, "", nil, nil, nil, 0
	return job
}

func TestRouteAndCallDecidesCallsAndProjects(t *testing.T) {
	t.Parallel()
	env, st := shortSetup(t, &scriptedAdapter{})
	now := time.Now().UTC().Add(-time.Minute) // the workflow task began before the decision
	in := activities.RouteAndCallInput{
		Route: activities.RouteInput{JobID: "job-1", Service: jobs.LLMTasks, Input: call().Input, Explicit: "scripted", Attempt: 1},
		Call:  call(), Job: pending(), Now: now,
	}
	in.Call.ProviderID = ""
	value, err := env.ExecuteActivity(acts.Calls.RouteAndCall, in)
	require.NoError(t, err)
	var rc activities.RoutedCall
	require.NoError(t, value.Get(&rc))
	require.Equal(t, "scripted", rc.Route.Routing.ProviderID)
	require.True(t, rc.Called, "the scripted adapter's calls are short")
	require.Nil(t, rc.Failure)
	require.True(t, rc.Done.Projected)

	require.Len(t, st.saved, 1, "one projection: the completion, with processing's facts")
	row := st.saved[0]
	require.Equal(t, jobs.StatusCompleted, row.Status)
	require.Equal(t, 2, row.Revision, "processing and completion, as the workflow's transitions count them")
	require.Equal(t, "scripted", row.Provider)
	require.Equal(t, rc.Route.Routing.DecidedAt.UTC(), row.ProcessedAt.UTC(), "processed when decided, the decision being later than the workflow's now")
	require.Contains(t, row.RoutingHistory, `"provider_id":"scripted"`)
	require.Len(t, st.ledger, 1)
}

func TestRouteAndCallKeepsTheDecisionOfAFailedCall(t *testing.T) {
	t.Parallel()
	refused := providers.Permanent(jobs.CodeInvalidInput, "the prompt is empty", nil)
	env, st := shortSetup(t, &scriptedAdapter{err: refused})
	in := activities.RouteAndCallInput{
		Route: activities.RouteInput{JobID: "job-1", Service: jobs.LLMTasks, Input: call().Input, Attempt: 1},
		Call:  call(), Job: pending(), Now: time.Now().UTC(),
	}
	value, err := env.ExecuteActivity(acts.Calls.RouteAndCall, in)
	require.NoError(t, err, "the failure travels with the decision")
	var rc activities.RoutedCall
	require.NoError(t, value.Get(&rc))
	require.Equal(t, "scripted", rc.Route.Routing.ProviderID)
	require.True(t, rc.Called)
	require.Nil(t, rc.Done)
	require.Empty(t, st.saved)

	// Made again, the error is what CallProvider returned.
	_, direct := env.ExecuteActivity(acts.Calls.CallProvider, call())
	var want, got *temporal.ApplicationError
	require.True(t, errors.As(direct, &want))
	require.True(t, errors.As(rc.Failure.Err(), &got))
	require.Equal(t, want.Type(), got.Type())
	require.Equal(t, want.NonRetryable(), got.NonRetryable())
	require.Equal(t, want.Message(), got.Message())
}

func TestRouteAndCallLeavesALongCallToTheWorkflow(t *testing.T) {
	t.Parallel()
	env, st := shortSetup(t, &scriptedAdapter{})
	// No provider left: a decision without a call.
	in := activities.RouteAndCallInput{
		Route: activities.RouteInput{JobID: "job-1", Service: jobs.LLMTasks, Input: call().Input, Failed: []string{"scripted"}, Attempt: 2},
		Call:  call(), Job: pending(), Now: time.Now().UTC(),
	}
	value, err := env.ExecuteActivity(acts.Calls.RouteAndCall, in)
	require.NoError(t, err)
	var rc activities.RoutedCall
	require.NoError(t, value.Get(&rc))
	require.False(t, rc.Called)
	require.Equal(t, jobs.CodeProvidersExhausted, rc.Route.Error.Code)
	require.Empty(t, st.saved)
}
