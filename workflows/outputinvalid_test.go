package workflows_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/workflows"
)

func outputInvalidError(provider string) error {
	message := "provider " + provider + ": the answer does not match response_format: not JSON"
	return temporal.NewNonRetryableApplicationError(message, activities.ErrTypeOutputInvalid, nil,
		jobs.Error{Code: jobs.CodeOutputInvalid, Message: message})
}

func exhaustedAt(attempt int) (any, activities.RouteOutput) {
	return attemptIs(attempt), activities.RouteOutput{
		Error: &jobs.Error{Code: jobs.CodeProvidersExhausted, Message: "every candidate provider failed"},
	}
}

// An answer that does not match response_format fails over without a
// retry on the same provider; when every provider's did not, the job
// fails OUTPUT_INVALID naming them.
func TestInvalidOutputEverywhereFailsOutputInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("openai", 1), nil).Once()
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(2)).Return(routeTo("anthropic", 2), nil).Once()
	match, exhausted := exhaustedAt(3)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, match).Return(exhausted, nil).Once()
	for _, p := range []string{"openai", "anthropic"} {
		b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool {
			return in.ProviderID == p
		})).Return(activities.CallOutput{}, outputInvalidError(p)).Once()
	}

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusFailed, snap.Status)
	require.Equal(t, jobs.CodeOutputInvalid, snap.Error.Code)
	require.Contains(t, snap.Error.Message, "openai, anthropic")
	require.Len(t, snap.RoutingHistory, 2)
	b.env.AssertExpectations(t)
}

// A provider that answered invalid output is followed by one that
// answers validly: the job completes.
func TestInvalidOutputFailsOverToValidAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("openai", 1), nil).Once()
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, mock.MatchedBy(func(in activities.RouteInput) bool {
		return in.Attempt == 2 && len(in.Failed) == 1 && in.Failed[0] == "openai"
	})).Return(routeTo("sandbox-fast", 2), nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool {
		return in.ProviderID == "openai"
	})).Return(activities.CallOutput{}, outputInvalidError("openai")).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool {
		return in.ProviderID == "sandbox-fast"
	})).Return(activities.CallOutput{Result: json.RawMessage(`{"content":"{}","finish_reason":"completed"}`)}, nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusCompleted, snap.Status)
	require.Equal(t, "sandbox-fast", snap.Provider)
	b.env.AssertExpectations(t)
}
