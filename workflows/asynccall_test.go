package workflows_test

import (
	"context"
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

func TestAsyncProviderIsSubmittedOnceThenChecked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("assemblyai", 1, submits), nil).Once()
	b.env.OnActivity(acts.AsyncCalls.SubmitToProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool {
		return in.ProviderID == "assemblyai" && in.Media != nil
	})).Return(activities.SubmitOutput{Handle: "transcript-1"}, nil).Once()
	var checkedAt []time.Time
	answers := []activities.CheckOutput{{Progress: 5}, {Progress: 50}, {Progress: 50, Wait: 45 * time.Second},
		{Done: true, Output: activities.CallOutput{Result: json.RawMessage(`{"format":"json","text":"hello"}`), WorkerID: "worker-3"}}}
	b.env.OnActivity(acts.AsyncCalls.CheckProvider, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool {
		return in.Handle == "transcript-1" && in.Call.ProviderID == "assemblyai"
	})).Return(func(context.Context, activities.CheckInput) (activities.CheckOutput, error) {
		checkedAt = append(checkedAt, b.env.Now())
		return answers[len(checkedAt)-1], nil
	}).Times(len(answers))
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{}, nil).Never()

	r := &receiver{}
	b.env.OnActivity(acts.Webhooks.DeliverWebhookEvent, mock.Anything, mock.Anything).Return(b.fromStore(t, r.deliver))
	start := b.env.Now()
	b.env.ExecuteWorkflow(workflows.JobWorkflowName, withWebhook(jobs.Transcriptions))

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusCompleted, snap.Status)
	require.JSONEq(t, `{"format":"json","text":"hello"}`, string(snap.Result))
	require.Equal(t, "worker-3", snap.WorkerID)
	// Waits of 2, 4 and 8 s, then the provider's 45 s.
	var gaps []time.Duration
	prev := start
	for _, at := range checkedAt {
		gaps = append(gaps, at.Sub(prev).Round(time.Second))
		prev = at
	}
	require.Equal(t, []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 45 * time.Second}, gaps)
	require.Equal(t, []string{"transcription.progress", "transcription.progress", "transcription.completed"}, r.events(),
		"progress at 0 and at the provider's 50, then completed")
}

func TestAsyncProviderFailureFailsOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("assemblyai", 1, submits), nil).Once()
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, mock.MatchedBy(func(in activities.RouteInput) bool {
		return in.Attempt == 2 && len(in.Failed) == 1 && in.Failed[0] == "assemblyai"
	})).Return(routeTo("sandbox-fast", 2), nil).Once()
	b.env.OnActivity(acts.AsyncCalls.SubmitToProvider, mock.Anything, mock.Anything).Return(activities.SubmitOutput{Handle: "t"}, nil).Once()
	rejected := temporal.NewNonRetryableApplicationError("could not transcribe", activities.ErrTypeProviderRejected, nil)
	b.env.OnActivity(acts.AsyncCalls.CheckProvider, mock.Anything, mock.Anything).Return(activities.CheckOutput{}, rejected).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusCompleted, snap.Status)
	require.Equal(t, "sandbox-fast", snap.Provider)
	require.Len(t, snap.RoutingHistory, 2)
}

func TestAsyncProviderThatNeverFinishesIsFailedOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("assemblyai", 1, submits), nil).Once()
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(2)).Return(activities.RouteOutput{
		Error: &jobs.Error{Code: "PROVIDERS_EXHAUSTED", Message: "every candidate provider failed"}}, nil).Once()
	b.env.OnActivity(acts.AsyncCalls.SubmitToProvider, mock.Anything, mock.Anything).Return(activities.SubmitOutput{Handle: "t"}, nil).Once()
	checks := 0
	b.env.OnActivity(acts.AsyncCalls.CheckProvider, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.CheckInput) (activities.CheckOutput, error) {
			checks++
			return activities.CheckOutput{Progress: 50}, nil
		})

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusFailed, snap.Status)
	require.Equal(t, "PROVIDERS_EXHAUSTED", snap.Error.Code)
	// 2+4+...+32 s, then a check a minute for the rest of 12 hours.
	require.InDelta(t, 12*60, checks, 10)
}

func TestProviderCallbackWakesTheCheckEarly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("deepgram", 1, submits), nil).Once()
	b.env.OnActivity(acts.AsyncCalls.SubmitToProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool {
		return in.Attempt == 1 // for the callback address
	})).Return(activities.SubmitOutput{Handle: "request-1"}, nil).Once()
	var checkedAt []time.Time
	b.env.OnActivity(acts.AsyncCalls.CheckProvider, mock.Anything, mock.MatchedBy(func(in activities.CheckInput) bool {
		return in.Handle == "request-1" && in.Call.Attempt == 1
	})).Return(func(context.Context, activities.CheckInput) (activities.CheckOutput, error) {
		checkedAt = append(checkedAt, b.env.Now())
		return activities.CheckOutput{Done: true, Output: activities.CallOutput{Result: json.RawMessage(`{"format":"json","text":"hello"}`)}}, nil
	}).Once()
	// A post about another attempt does not wake the wait; this one's does.
	b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(workflows.ProviderCallbackSignal, 7) }, 500*time.Millisecond)
	b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(workflows.ProviderCallbackSignal, 1) }, 1200*time.Millisecond)
	start := b.env.Now()
	b.env.ExecuteWorkflow(workflows.JobWorkflowName, input())

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusCompleted, snap.Status)
	require.Len(t, checkedAt, 1)
	require.Equal(t, 1200*time.Millisecond, checkedAt[0].Sub(start).Round(100*time.Millisecond),
		"checked when the callback came, not at the first check's 2 s")
}
