package workflows_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/workflows"
)

// callKinds records how each provider call ran: "local" or "activity".
type callKinds struct{ kinds []string }

func (c *callKinds) record(ctx context.Context) {
	if activity.GetInfo(ctx).IsLocalActivity {
		c.kinds = append(c.kinds, "local")
	} else {
		c.kinds = append(c.kinds, "activity")
	}
}

// A short call runs as a local activity, a long one as an activity.
func TestCallRunsAsLocalActivityOnlyWhenShort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		route  activities.RouteOutput
		result string
		kind   string
	}{
		{"short", routeTo("sandbox-fast", 1, callsLocally), `{"text":"hi"}`, "local"},
		{"long", routeTo("openai", 1), `{}`, "activity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var calls callKinds
			b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(tc.route, nil).Once()
			b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(
				func(ctx context.Context, in activities.CallInput) (activities.CallOutput, error) {
					calls.record(ctx)
					return activities.CallOutput{Result: json.RawMessage(tc.result), WorkerID: "worker-1"}, nil
				}).Once()

			b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

			snap := result(t, b.env)
			require.Equal(t, jobs.StatusCompleted, snap.Status)
			require.JSONEq(t, tc.result, string(snap.Result))
			require.Equal(t, []string{tc.kind}, calls.kinds)
		})
	}
}

func TestFailedShortCallIsRetriedAsActivity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls callKinds
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-flaky", 1, callsLocally), nil).Once()
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(2)).Return(routeTo("sandbox-fast", 2, callsLocally), nil).Once()
	unavailable := temporal.NewApplicationError("503 from provider", activities.ErrTypeProviderUnavailable)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool {
		return in.ProviderID == "sandbox-flaky"
	})).Return(func(ctx context.Context, in activities.CallInput) (activities.CallOutput, error) {
		calls.record(ctx)
		return activities.CallOutput{}, unavailable
	}).Times(3)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool {
		return in.ProviderID == "sandbox-fast"
	})).Return(func(ctx context.Context, in activities.CallInput) (activities.CallOutput, error) {
		calls.record(ctx)
		return activities.CallOutput{Result: json.RawMessage(`{}`)}, nil
	}).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusCompleted, snap.Status)
	require.Equal(t, "sandbox-fast", snap.Provider)
	// Three tries per provider in all: one local, then two as an activity.
	require.Equal(t, []string{"local", "activity", "activity", "local"}, calls.kinds)
}

func TestRejectedShortCallFailsOverAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls callKinds
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-a", 1, callsLocally), nil).Once()
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(2)).Return(activities.RouteOutput{
		Error: &jobs.Error{Code: jobs.CodeProvidersExhausted, Message: "every candidate provider failed"},
	}, nil).Once()
	rejected := temporal.NewNonRetryableApplicationError("401 from provider", activities.ErrTypeProviderRejected, nil)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.CallInput) (activities.CallOutput, error) {
			calls.record(ctx)
			return activities.CallOutput{}, rejected
		}).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusFailed, snap.Status)
	require.Equal(t, jobs.CodeProvidersExhausted, snap.Error.Code)
	require.Equal(t, []string{"local"}, calls.kinds)
}

func TestCancelDuringShortCall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1, callsLocally), nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(untilCancelled[activities.CallInput, activities.CallOutput]).Once()
	b.env.RegisterDelayedCallback(b.env.CancelWorkflow, time.Second)

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	requireCancelled(t, b)
}

// untilCancelled is an activity that runs until the job's cancellation
// reaches it.
func untilCancelled[In, Out any](ctx context.Context, _ In) (Out, error) {
	<-ctx.Done()
	var none Out
	return none, ctx.Err()
}
