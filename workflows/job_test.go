package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/workflows"
)

// acts names activities by their methods, through nil receivers.
var acts activities.Set

type bundle struct {
	env   *testsuite.TestWorkflowEnvironment
	mu    sync.Mutex // guards saved: activities run on their own goroutines
	saved []jobs.Snapshot
}

// setup is a test environment whose media stage (workflows/media.go)
// passes without checks; media tests use bareSetup.
func setup(t *testing.T) *bundle {
	t.Helper()
	b := bareSetup(t)
	b.env.OnActivity(acts.Media.FetchMedia, mock.Anything, mock.Anything).Return(sourceFile, nil).Maybe()
	b.env.OnActivity(acts.Media.ProbeMedia, mock.Anything, mock.Anything).Return(media.Probe{Duration: 2}, nil).Maybe()
	b.env.OnActivity(acts.Media.ExtractAudio, mock.Anything, mock.Anything).Return(audioFile, nil).Maybe()
	b.env.OnActivity(acts.Media.RemoveJobMedia, mock.Anything, mock.Anything).Return(nil).Maybe()
	return b
}

// bareSetup is a test environment that only records projection writes.
func bareSetup(t *testing.T) *bundle {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	b := &bundle{env: suite.NewTestWorkflowEnvironment()}
	b.env.RegisterWorkflowWithOptions(workflows.JobWorkflow, workflow.RegisterOptions{Name: workflows.JobWorkflowName})
	acts.Register(b.env)
	b.env.OnActivity(acts.Projections.SaveJob, mock.Anything, mock.Anything).Return(func(_ context.Context, snap jobs.Snapshot) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.saved = append(b.saved, snap)
		return nil
	}).Maybe() // a generation-3 short call projects its own completion
	t.Cleanup(func() { b.env.AssertExpectations(t) })
	return b
}

func input() jobs.Submission {
	return jobs.Submission{
		JobID:     "0193a9d4-7c5e-7000-8000-000000000001",
		Service:   jobs.Transcriptions,
		Tenant:    "acme",
		UserID:    "alice",
		Input:     json.RawMessage(`{"type":"audio","url":"https://media.test/a.wav"}`),
		CreatedAt: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
	}
}

// routeTo is a routing to provider for attempt, as each of with
// (callsLocally, submits) changes it.
func routeTo(provider string, attempt int, with ...func(*activities.RouteOutput)) activities.RouteOutput {
	reason := jobs.ReasonDefault
	if attempt > 1 {
		reason = jobs.ReasonFailover
	}
	out := activities.RouteOutput{Routing: jobs.RoutingInfo{
		ProviderID: provider, Reason: reason, Attempt: attempt,
		ProviderEvaluations: []jobs.Evaluation{{ProviderID: provider, Selected: true, Reason: jobs.EvalSelected}},
	}, WorkerID: "worker-1"}
	for _, change := range with {
		change(&out)
	}
	return out
}

// callsLocally makes a routing one to a provider whose calls are short.
func callsLocally(out *activities.RouteOutput) { out.CallLocally = true }

// submits makes a routing one to a provider that jobs are submitted to.
func submits(out *activities.RouteOutput) { out.Submits = true }

func attemptIs(n int) any {
	return mock.MatchedBy(func(in activities.RouteInput) bool { return in.Attempt == n })
}

func result(t *testing.T, env *testsuite.TestWorkflowEnvironment) jobs.Snapshot {
	t.Helper()
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var snap jobs.Snapshot
	require.NoError(t, env.GetWorkflowResult(&snap))
	return snap
}

func TestJobCompletes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1), nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool {
		return in.ProviderID == "sandbox-fast" && in.JobID == input().JobID
	})).Return(activities.CallOutput{Result: json.RawMessage(`{"format":"json"}`), WorkerID: "worker-2"}, nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusCompleted, snap.Status)
	require.Equal(t, 100, snap.Progress)
	require.JSONEq(t, `{"format":"json"}`, string(snap.Result))
	require.Equal(t, "sandbox-fast", snap.Provider)
	require.Equal(t, "worker-2", snap.WorkerID)
	require.NotNil(t, snap.ProcessedAt)
	require.NotNil(t, snap.CompletedAt)
	require.Len(t, snap.RoutingHistory, 1)
	require.Nil(t, snap.Error)

	require.Len(t, b.saved, 2, "one projection write on entering processing, one at the end")
	require.Equal(t, jobs.StatusProcessing, b.saved[0].Status)
	require.Equal(t, 0, b.saved[0].Progress)
	require.NotNil(t, b.saved[0].Routing)
	require.Equal(t, jobs.StatusCompleted, b.saved[1].Status)
	require.Less(t, b.saved[0].Revision, b.saved[1].Revision, "revisions increase")
}

// A database away for longer than a local activity's StartToClose: the
// routing decision and the projection are retried until it is back, not
// given up (the job would stay processing in the store forever).
func TestStoreOutageOutlastsOneTry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	away := temporal.NewApplicationError("database unavailable", "StoreUnavailable")
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(activities.RouteOutput{}, away).Times(9)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1), nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).
		Return(activities.CallOutput{Result: json.RawMessage(`{"format":"json"}`), WorkerID: "worker-2"}, nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
}

func TestJobFailsOverToNextProvider(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-flaky", 1), nil).Once()
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, mock.MatchedBy(func(in activities.RouteInput) bool {
		return in.Attempt == 2 && len(in.Failed) == 1 && in.Failed[0] == "sandbox-flaky"
	})).Return(routeTo("sandbox-fast", 2), nil).Once()
	unavailable := temporal.NewApplicationError("503 from provider", activities.ErrTypeProviderUnavailable)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool {
		return in.ProviderID == "sandbox-flaky"
	})).Return(activities.CallOutput{}, unavailable).Times(3) // the retry policy's three tries
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool {
		return in.ProviderID == "sandbox-fast"
	})).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusCompleted, snap.Status)
	require.Equal(t, "sandbox-fast", snap.Provider)
	require.Len(t, snap.RoutingHistory, 2)
	require.Equal(t, "sandbox-flaky", snap.RoutingHistory[0].ProviderID)
	require.Equal(t, jobs.ReasonFailover, snap.RoutingHistory[1].Reason)
	require.Equal(t, 2, snap.Routing.Attempt)
	require.Equal(t, snap.RoutingHistory[1], *snap.Routing)
	require.Equal(t, b.saved[0].ProcessedAt, snap.ProcessedAt, "processed_at is when the job first left pending")
}

func TestPermanentProviderErrorFailsOverWithoutRetrying(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("openai", 1), nil).Once()
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(2)).Return(activities.RouteOutput{
		Error: &jobs.Error{Code: jobs.CodeProvidersExhausted, Message: "every candidate provider failed"},
	}, nil).Once()
	rejected := temporal.NewNonRetryableApplicationError("401 from provider", activities.ErrTypeProviderRejected, nil)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{}, rejected).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusFailed, snap.Status)
	require.Equal(t, jobs.CodeProvidersExhausted, snap.Error.Code)
	require.Len(t, snap.RoutingHistory, 1, "a decision without a provider is not a routing")
	require.NotNil(t, snap.CompletedAt)
	require.Nil(t, snap.Result)
}

func TestUnreadableInputFailsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1), nil).Once()
	inputErr := temporal.NewNonRetryableApplicationError("HEAD answered 404", activities.ErrTypeInvalidInput, nil,
		jobs.Error{Code: "MEDIA_UNAVAILABLE", Message: "media host media.test answered 404 Not Found for input.url"})
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{}, inputErr).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusFailed, snap.Status)
	require.Equal(t, "MEDIA_UNAVAILABLE", snap.Error.Code)
	require.Contains(t, snap.Error.Message, "404")
}

func TestNoEligibleProvider(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(activities.RouteOutput{
		Routing: jobs.RoutingInfo{ProviderEvaluations: []jobs.Evaluation{{ProviderID: "sandbox-fast", Reason: jobs.EvalOptionNotSupported}}},
		Error:   &jobs.Error{Code: jobs.CodeNoEligibleProvider, Message: "no provider is eligible for this job"},
	}, nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusFailed, snap.Status)
	require.Equal(t, jobs.CodeNoEligibleProvider, snap.Error.Code)
	require.Nil(t, snap.Routing, "a job that never left pending has no routing")
	require.Nil(t, snap.ProcessedAt)
	require.Empty(t, snap.RoutingHistory)
	require.Len(t, b.saved, 1)
}

func TestCancelWhileProcessing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1), nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).After(time.Hour).Return(activities.CallOutput{}, nil).Maybe()
	b.env.RegisterDelayedCallback(b.env.CancelWorkflow, time.Minute)

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	requireCancelled(t, b)
}

// requireCancelled checks that the workflow ended cancelled and the job
// failed with CANCELLED.
func requireCancelled(t *testing.T, b *bundle) {
	t.Helper()
	require.True(t, b.env.IsWorkflowCompleted())
	var canceled *temporal.CanceledError
	require.True(t, errors.As(b.env.GetWorkflowError(), &canceled), "the workflow ends cancelled: %v", b.env.GetWorkflowError())
	last := b.saved[len(b.saved)-1]
	require.Equal(t, jobs.StatusFailed, last.Status)
	require.Equal(t, jobs.CodeCancelled, last.Error.Code)
	require.NotNil(t, last.CompletedAt)
}

func TestStateQuery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1), nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).After(time.Minute).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()
	b.env.RegisterDelayedCallback(func() {
		value, err := b.env.QueryWorkflow(workflows.StateQuery)
		require.NoError(t, err)
		var snap jobs.Snapshot
		require.NoError(t, value.Get(&snap))
		require.Equal(t, jobs.StatusProcessing, snap.Status)
	}, 30*time.Second)

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())
	require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
}

func TestCancelWhilePending(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Routing has not decided yet when the cancel arrives.
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).After(time.Hour).Return(routeTo("sandbox-fast", 1), nil).Maybe()
	b.env.RegisterDelayedCallback(b.env.CancelWorkflow, time.Second)

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	require.True(t, b.env.IsWorkflowCompleted())
	last := b.saved[len(b.saved)-1]
	require.Equal(t, jobs.StatusFailed, last.Status)
	require.Equal(t, jobs.CodeCancelled, last.Error.Code)
	require.Nil(t, last.Routing, "cancelled while pending: no routing (docs/api.md, Envelopes and representation)")
	require.Nil(t, last.ProcessedAt, "and no processed_at")
	require.NotNil(t, last.CompletedAt)
}
