package workflows_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/workflows"
)

func TestSearchAttributesFollowTheJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	var upserts []temporal.SearchAttributes
	b.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		mu.Lock()
		defer mu.Unlock()
		upserts = append(upserts, args.Get(0).(temporal.SearchAttributes))
	}).Return(nil)
	routed := routeTo("sandbox-fast", 1)
	routed.Routing.Reason, routed.Routing.PolicyID, routed.Routing.PolicyVersion = jobs.ReasonPolicyRule, "pol-1", 3
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, mock.Anything).Return(routed, nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).
		Return(activities.CallOutput{}, temporal.NewNonRetryableApplicationError("unreadable", activities.ErrTypeInvalidInput, nil,
			jobs.Error{Code: jobs.CodeAudioUnreadable, Message: "unreadable"})).Once()

	in := input()
	in.SearchAttributes = true
	b.env.ExecuteWorkflow(workflows.JobWorkflowName, in)
	require.Equal(t, jobs.StatusFailed, result(t, b.env).Status)

	require.Len(t, upserts, 2, "one per transition: processing, failed")
	processing, failed := upserts[0], upserts[1]
	status, _ := processing.GetKeyword(workflows.StatusKey)
	require.Equal(t, "processing", status)
	provider, _ := processing.GetKeyword(workflows.ProviderKey)
	require.Equal(t, "sandbox-fast", provider)
	policyID, _ := processing.GetKeyword(workflows.PolicyIDKey)
	require.Equal(t, "pol-1", policyID)
	version, _ := processing.GetInt64(workflows.PolicyVersionKey)
	require.Equal(t, int64(3), version)
	require.False(t, processing.ContainsKey(workflows.ErrorCodeKey))
	status, _ = failed.GetKeyword(workflows.StatusKey)
	require.Equal(t, "failed", status)
	code, _ := failed.GetKeyword(workflows.ErrorCodeKey)
	require.Equal(t, jobs.CodeAudioUnreadable, code)
}

func TestNoSearchAttributesUnlessTheNamespaceHasThem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Never()
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, mock.Anything).Return(routeTo("sandbox-fast", 1), nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()
	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())
	require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
}

func TestStartAttributesAndSummary(t *testing.T) {
	t.Parallel()
	in := input()
	in.Application, in.PolicyID = "call-center", "pol-9"
	sa := workflows.StartSearchAttributes(in)
	for key, want := range map[string]string{"GatewayTenant": "acme", "GatewayService": "transcriptions", "GatewayStatus": "pending",
		"GatewayApplication": "call-center", "GatewayPolicyId": "pol-9"} {
		got, ok := sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(key))
		require.True(t, ok, key)
		require.Equal(t, want, got, key)
	}
	require.Equal(t, "transcription for acme", workflows.StartSummary(in))
	require.Len(t, workflows.SearchAttributeTypes(), 9)
}

func TestRetryCarriesOnFromTheFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	earlier := routeTo("sandbox-flaky", 1)
	in := input()
	in.Retry = &jobs.Retry{RoutingHistory: []jobs.RoutingInfo{earlier.Routing}, Revision: 4,
		Error: &jobs.Error{Code: jobs.CodeProvidersExhausted}}
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, mock.MatchedBy(func(in activities.RouteInput) bool {
		return in.Attempt == 2 && in.Retried && in.Pinned == nil && len(in.Failed) == 0
	})).Return(routeTo("sandbox-fast", 2), nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, in)
	snap := result(t, b.env)
	require.Equal(t, jobs.StatusCompleted, snap.Status)
	require.Len(t, snap.RoutingHistory, 2, "the earlier decision is kept")
	require.Equal(t, "sandbox-flaky", snap.RoutingHistory[0].ProviderID)
	require.Equal(t, 2, snap.RoutingHistory[1].Attempt)

	require.Len(t, b.saved, 3, "pending again, processing, completed")
	require.Equal(t, jobs.StatusPending, b.saved[0].Status)
	require.Nil(t, b.saved[0].Error, "the old error is gone")
	require.Nil(t, b.saved[0].CompletedAt)
	require.Equal(t, 5, b.saved[0].Revision, "revisions continue, so the write lands")
	require.Equal(t, jobs.StatusProcessing, b.saved[1].Status)
}

// upsertedStatuses records the GatewayStatus of every upsert.
func upsertedStatuses(b *bundle) *[]string {
	var mu sync.Mutex
	var statuses []string
	b.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		mu.Lock()
		defer mu.Unlock()
		status, _ := args.Get(0).(temporal.SearchAttributes).GetKeyword(workflows.StatusKey)
		statuses = append(statuses, status)
	}).Return(nil)
	return &statuses
}

// A short call's job is processing only within the workflow task that
// completes it: one upsert, of the outcome, carries both transitions.
func TestShortCallUpsertsOnlyTheOutcome(t *testing.T) {
	t.Parallel()
	b := setup(t)
	statuses := upsertedStatuses(b)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1, callsLocally), nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()
	in := input()
	in.SearchAttributes = true
	b.env.ExecuteWorkflow(workflows.JobWorkflowName, in)
	require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
	require.Equal(t, []string{"completed"}, *statuses)
}

// A short call that fails is tried again as an activity, which outlives
// the workflow task: processing is upserted before it.
func TestFailedShortCallUpsertsProcessingBeforeTheActivity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	statuses := upsertedStatuses(b)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-flaky", 1, callsLocally), nil).Once()
	calls := 0
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.CallInput) (activities.CallOutput, error) {
			calls++
			if calls == 1 {
				return activities.CallOutput{}, temporal.NewApplicationError("503 from provider", activities.ErrTypeProviderUnavailable)
			}
			return activities.CallOutput{Result: json.RawMessage(`{}`)}, nil
		})
	in := input()
	in.SearchAttributes = true
	b.env.ExecuteWorkflow(workflows.JobWorkflowName, in)
	require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
	require.Equal(t, []string{"processing", "completed"}, *statuses)
}
