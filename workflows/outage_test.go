package workflows_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/workflows"
)

// A job whose provider fails during an outage, its breaker then open:
// the job waits on a timer until the breaker probes, projecting why, and
// routes again (with the failed provider allowed back), as attempt 2.
func TestJobWaitsOutAnOutage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	b.env.SetStartTime(start)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, mock.MatchedBy(func(in activities.RouteInput) bool {
		return in.Attempt == 1 && in.WaitOutOutages
	})).Return(routeTo("sandbox-flaky", 1), nil).Once()
	// Attempt 2, first: every provider open; the job waits 90 s.
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, mock.MatchedBy(func(in activities.RouteInput) bool {
		return in.Attempt == 2 && in.WaitingSince == nil && len(in.Failed) == 1
	})).Return(activities.RouteOutput{Wait: &activities.RouteWait{Until: start.Add(90 * time.Second),
		Providers: []string{"sandbox-flaky"}, Retry: []string{"sandbox-flaky"}, Message: "waiting: open"}}, nil).Once()
	// Then: the failed provider is allowed back, and the wait is counted.
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, mock.MatchedBy(func(in activities.RouteInput) bool {
		return in.Attempt == 2 && in.WaitingSince != nil && len(in.Failed) == 0
	})).Return(routeTo("sandbox-flaky", 2), nil).Once()
	unavailable := temporal.NewApplicationError("503 from provider", activities.ErrTypeProviderUnavailable)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{}, unavailable).Times(3)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusCompleted, snap.Status)
	require.Nil(t, snap.Waiting, "no longer waiting")
	require.Len(t, snap.RoutingHistory, 2, "the wait is no routing decision")
	require.Equal(t, 2, snap.Routing.Attempt)
	require.False(t, snap.CompletedAt.Before(start.Add(90*time.Second)), "completed after the wait")
	var waiting *jobs.Waiting
	for _, s := range b.saved {
		if s.Waiting != nil {
			waiting = s.Waiting
			require.Equal(t, jobs.StatusProcessing, s.Status, "a processing job stays processing while it waits")
		}
	}
	require.NotNil(t, waiting, "the wait is projected")
	require.Equal(t, jobs.WaitReasonCircuitOpen, waiting.Reason)
	require.Equal(t, start.Add(90*time.Second), waiting.Until)
	require.Equal(t, []string{"sandbox-flaky"}, waiting.Providers)
}
