package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/workflows"
)

// A job deleted before its provider call: the call is refused, and the
// job ends at once as its deletion ends a job it stops, trying no other
// provider (docs/api.md, Deleting a job).
func TestJobDeletedBeforeItsCallEnds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		with []func(*activities.RouteOutput)
	}{{"activity", nil}, {"short call", []func(*activities.RouteOutput){callsLocally}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			// Only the first decision is expected: a failover would ask for a second.
			b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1, tc.with...), nil).Once()
			refused := temporal.NewNonRetryableApplicationError("job deleted", activities.ErrTypeJobDeleted, nil)
			b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{}, refused).Once()

			b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

			snap := result(t, b.env)
			require.Equal(t, jobs.StatusFailed, snap.Status)
			require.Equal(t, jobs.CodeCancelled, snap.Error.Code)
			require.Equal(t, "the job was deleted", snap.Error.Message)
			require.Len(t, snap.RoutingHistory, 1)
		})
	}
}
