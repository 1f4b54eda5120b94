package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/workflows"
)

// llmInput is an LLM task (a service without progress events) stamped
// with generation.
func llmInput(generation int) jobs.Submission {
	in := input()
	in.Service = jobs.LLMTasks
	in.Input = json.RawMessage(`{"type":"text","text":"x","prompt":"y"}`)
	in.Generation = generation
	return in
}

// statuses are the statuses of the projections written, in order.
func (b *bundle) statuses() []jobs.Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []jobs.Status
	for _, s := range b.saved {
		out = append(out, s.Status)
	}
	return out
}

func TestShortJobOfGenerationTwoIsProjectedOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   jobs.Submission
		want []jobs.Status
	}{
		{"generation 2", llmInput(2), []jobs.Status{jobs.StatusCompleted}},
		{"generation 1", llmInput(1), []jobs.Status{jobs.StatusProcessing, jobs.StatusCompleted}},
		{"a service with progress events", func() jobs.Submission { in := input(); in.Generation = 2; return in }(),
			[]jobs.Status{jobs.StatusProcessing, jobs.StatusCompleted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1, callsLocally), nil).Once()
			b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(
				activities.CallOutput{Result: json.RawMessage(`{"text":"hi"}`), WorkerID: "worker-1"}, nil).Once()

			b.env.ExecuteWorkflow(workflows.JobWorkflowName, tc.in)

			snap := result(t, b.env)
			require.Equal(t, jobs.StatusCompleted, snap.Status)
			require.Equal(t, tc.want, b.statuses())
			last := b.saved[len(b.saved)-1]
			require.NotNil(t, last.ProcessedAt, "the outcome's projection says when processing began")
			require.NotNil(t, last.Routing)
			require.Len(t, last.RoutingHistory, 1)
			require.Equal(t, 2, last.Revision, "processing took a revision, projected or not")
		})
	}
}

func TestShortJobWithAWebhookIsProjectedAsProcessing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1, callsLocally), nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(
		activities.CallOutput{Result: json.RawMessage(`{"text":"hi"}`)}, nil).Once()
	r := &receiver{}
	b.env.OnActivity(acts.Webhooks.DeliverWebhookEvent, mock.Anything, mock.Anything).Return(b.fromStore(t, r.deliver))
	in := withWebhook(jobs.LLMTasks)
	in.Input = json.RawMessage(`{"type":"text","text":"x","prompt":"y"}`)
	in.Generation = 2

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, in)

	require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
	require.Equal(t, []jobs.Status{jobs.StatusProcessing, jobs.StatusCompleted}, b.statuses())
}

// A short call that does not settle the job projects processing before
// the job goes on: retried as an activity, or failed over.
func TestShortCallThatFailsProjectsProcessingFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"retried as an activity", temporal.NewApplicationError("503 from provider", activities.ErrTypeProviderUnavailable)},
		{"failed over", temporal.NewNonRetryableApplicationError("401 from provider", activities.ErrTypeProviderRejected, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-flaky", 1, callsLocally), nil).Once()
			b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(2)).Return(routeTo("sandbox-fast", 2, callsLocally), nil).Maybe()
			var calls int
			b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(
				func(_ context.Context, in activities.CallInput) (activities.CallOutput, error) {
					calls++
					if calls == 1 {
						return activities.CallOutput{}, tc.err
					}
					return activities.CallOutput{Result: json.RawMessage(`{}`)}, nil
				})

			b.env.ExecuteWorkflow(workflows.JobWorkflowName, llmInput(2))

			require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
			statuses := b.statuses()
			require.Equal(t, jobs.StatusProcessing, statuses[0], "projected once the short call failed")
			require.Equal(t, jobs.StatusCompleted, statuses[len(statuses)-1])
			b.mu.Lock()
			first := b.saved[0]
			b.mu.Unlock()
			require.Equal(t, "sandbox-flaky", first.Provider)
			require.Len(t, first.RoutingHistory, 1)
		})
	}
}

func TestShortCallRefusingTheInputIsProjectedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1, callsLocally), nil).Once()
	invalid := temporal.NewNonRetryableApplicationError("the prompt is empty", activities.ErrTypeInvalidInput, nil,
		jobs.Error{Code: jobs.CodeInvalidInput, Message: "the prompt is empty"})
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{}, invalid).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, llmInput(2))

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusFailed, snap.Status)
	require.Equal(t, jobs.CodeInvalidInput, snap.Error.Code)
	require.Equal(t, []jobs.Status{jobs.StatusFailed}, b.statuses())
}

func TestCancelDuringShortCallOfGenerationTwo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1, callsLocally), nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(untilCancelled[activities.CallInput, activities.CallOutput]).Once()
	b.env.RegisterDelayedCallback(b.env.CancelWorkflow, time.Second)

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, llmInput(2))

	requireCancelled(t, b)
	require.Equal(t, []jobs.Status{jobs.StatusFailed}, b.statuses(), "projected once, cancelled; processing is in it")
	require.NotNil(t, b.saved[0].ProcessedAt)
}

func TestShortCallOfGenerationThreeProjectsItsOwnCompletion(t *testing.T) {
	t.Parallel()
	completedAt := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		projected bool
		want      []jobs.Status // the workflow's own projections
	}{
		{"projected by the call", true, nil},
		{"the call's projection failed", false, []jobs.Status{jobs.StatusCompleted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1, callsLocally), nil).Once()
			var got activities.CompleteInput
			b.env.OnActivity(acts.Calls.CallAndComplete, mock.Anything, mock.Anything).Return(
				func(_ context.Context, in activities.CompleteInput) (activities.CompletedCall, error) {
					got = in
					return activities.CompletedCall{CallOutput: activities.CallOutput{Result: json.RawMessage(`{"text":"hi"}`), WorkerID: "worker-2"},
						CompletedAt: completedAt, Projected: tc.projected}, nil
				}).Once()

			b.env.ExecuteWorkflow(workflows.JobWorkflowName, llmInput(3))

			snap := result(t, b.env)
			require.Equal(t, tc.want, b.statuses())
			require.Equal(t, jobs.StatusProcessing, got.Job.Status, "the call gets the processing state to complete")
			require.Equal(t, 1, got.Job.Revision)
			require.NotNil(t, got.Job.ProcessedAt)
			require.Equal(t, "sandbox-fast", got.Call.ProviderID)

			require.Equal(t, jobs.StatusCompleted, snap.Status)
			require.Equal(t, 2, snap.Revision)
			require.Equal(t, 100, snap.Progress)
			require.Equal(t, "worker-2", snap.WorkerID)
			require.JSONEq(t, `{"text":"hi"}`, string(snap.Result))
			require.Equal(t, completedAt, *snap.CompletedAt, "completed when the call returned, as the activity projects it")
			if !tc.projected {
				require.Equal(t, completedAt, *b.saved[0].CompletedAt, "the workflow's projection says the same as one the activity may have made")
				require.Equal(t, 2, b.saved[0].Revision)
			}
		})
	}
}

// A short call of generation 3 that fails is generation 2's: processing
// is projected, and the call tried again as an activity.
func TestShortCallOfGenerationThreeThatFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-flaky", 1, callsLocally), nil).Once()
	b.env.OnActivity(acts.Calls.CallAndComplete, mock.Anything, mock.Anything).Return(
		activities.CompletedCall{}, temporal.NewApplicationError("503 from provider", activities.ErrTypeProviderUnavailable)).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, llmInput(3))

	require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
	require.Equal(t, []jobs.Status{jobs.StatusProcessing, jobs.StatusCompleted}, b.statuses())
	// Processing took revision 1, and the failed activity may still have
	// projected a completion as 2: the projections that follow pass it.
	require.Equal(t, 3, b.saved[0].Revision)
	require.Equal(t, 4, b.saved[1].Revision)
}

// A cancelled job of generation 3 is projected past what its short
// call's local activity may have projected before it stopped.
func TestCancelDuringShortCallOfGenerationThree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1, callsLocally), nil).Once()
	b.env.OnActivity(acts.Calls.CallAndComplete, mock.Anything, mock.Anything).Return(untilCancelled[activities.CompleteInput, activities.CompletedCall]).Once()
	b.env.RegisterDelayedCallback(b.env.CancelWorkflow, time.Second)

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, llmInput(3))

	requireCancelled(t, b)
	require.Equal(t, []jobs.Status{jobs.StatusFailed}, b.statuses())
	// Processing took revision 1 unprojected: the call's activity could
	// have projected the completion as 2.
	require.Greater(t, b.saved[0].Revision, 2)
}

// From generation 4 the workflow's result leaves out the documents other
// events hold; the projections and the result's outcome are generation
// 3's.
func TestResultOfGenerationFourLeavesOutTheInput(t *testing.T) {
	t.Parallel()
	for _, generation := range []int{3, 4} {
		t.Run(fmt.Sprintf("generation %d", generation), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1, callsLocally), nil).Once()
			b.env.OnActivity(acts.Calls.CallAndComplete, mock.Anything, mock.Anything).Return(activities.CompletedCall{
				CallOutput: activities.CallOutput{Result: json.RawMessage(`{"text":"hi"}`)}, CompletedAt: time.Now().UTC()}, nil).Once()
			in := llmInput(generation)
			in.Options = json.RawMessage(`{"temperature":0.2}`)
			in.ClientMeta = json.RawMessage(`{"ticket":"T-1"}`)

			b.env.ExecuteWorkflow(workflows.JobWorkflowName, in)

			snap := result(t, b.env)
			require.Equal(t, jobs.StatusCompleted, snap.Status)
			require.Equal(t, "sandbox-fast", snap.Provider)
			require.Len(t, snap.RoutingHistory, 1)
			require.NotNil(t, snap.CompletedAt)
			if generation == 3 {
				require.JSONEq(t, string(in.Input), string(snap.Input))
				require.JSONEq(t, string(in.Options), string(snap.Options))
				require.JSONEq(t, string(in.ClientMeta), string(snap.ClientMeta))
				require.JSONEq(t, `{"text":"hi"}`, string(snap.Result))
				return
			}
			require.Equal(t, "null", string(snap.Input), "the documents are left out")
			require.Nil(t, snap.Options)
			require.Nil(t, snap.ClientMeta)
			require.Nil(t, snap.Result)
			require.Nil(t, snap.Usage)
			saved := b.saved[0]
			require.JSONEq(t, string(in.Input), string(saved.Input), "the workflow's projection has the whole job")
			require.JSONEq(t, `{"text":"hi"}`, string(saved.Result))
		})
	}
}
