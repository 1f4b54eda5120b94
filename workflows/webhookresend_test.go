package workflows_test

import (
	"context"
	"encoding/json"
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
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// givenUpRecorder records the deliveries RecordWebhookGivenUp was given.
type givenUpRecorder struct {
	mu  sync.Mutex
	ids []string
}

func (g *givenUpRecorder) record(_ context.Context, d activities.WebhookDelivery) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ids = append(g.ids, d.MessageID)
	return nil
}

func TestGivenUpEventIsRecordedAndMarked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := downReceiver()
	b.receive(t, r)
	var given givenUpRecorder
	b.env.OnActivity(acts.Webhooks.RecordWebhookGivenUp, mock.Anything, mock.Anything).Return(given.record)
	var mu sync.Mutex
	var marked []string
	b.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		mu.Lock()
		defer mu.Unlock()
		if v, ok := args.Get(0).(temporal.SearchAttributes).GetKeyword(workflows.WebhookKey); ok {
			marked = append(marked, v)
		}
	}).Return(nil)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()
	in := withWebhook(jobs.LLMTasks)
	in.SearchAttributes = true
	in.WebhookGiveUpAfter = 10 * time.Minute
	start := b.env.Now()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, in)

	require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
	require.Less(t, b.env.Now().Sub(start), 30*time.Minute, "given up after the submission's window, not 24 h")
	require.Empty(t, r.delivered)
	require.Equal(t, []string{in.JobID + "-1"}, given.ids)
	require.Equal(t, []string{workflows.WebhookFailed}, marked)
}

// resendSetup is a test environment of WebhookResendWorkflow whose
// deliveries go to r.
func resendSetup(t *testing.T, r *receiver) *bundle {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	b := &bundle{env: suite.NewTestWorkflowEnvironment()}
	b.env.RegisterWorkflowWithOptions(workflows.WebhookResendWorkflow, workflow.RegisterOptions{Name: workflows.WebhookResendWorkflowName})
	acts.Register(b.env)
	b.env.OnActivity(acts.Webhooks.DeliverWebhookEvent, mock.Anything, mock.Anything).Return(r.deliver)
	t.Cleanup(func() { b.env.AssertExpectations(t) })
	return b
}

func resendInput(n int) workflows.WebhookResend {
	in := workflows.WebhookResend{JobID: input().JobID, Service: jobs.Transcriptions, Trigger: store.TriggerRecover,
		Target: jobs.Webhook{URL: "https://hooks.test/jobs"}, GiveUpAfter: 10 * time.Minute}
	for i := 1; i <= n; i++ {
		snap := input().Snapshot()
		snap.Progress = i * 10
		in.Messages = append(in.Messages, workflows.ResendMessage{MessageID: in.JobID + "-" + string(rune('0'+i)), Event: "transcription.progress", Job: snap})
	}
	return in
}

func TestWebhookResendSendsInOrderWithRetries(t *testing.T) {
	t.Parallel()
	r := &receiver{answers: []error{nil, failedAttempt(), nil, nil}}
	b := resendSetup(t, r)
	b.env.OnActivity(acts.Webhooks.RecordWebhookGivenUp, mock.Anything, mock.Anything).Return(nil).Never()
	in := resendInput(3)

	b.env.ExecuteWorkflow(workflows.WebhookResendWorkflowName, in)

	require.True(t, b.env.IsWorkflowCompleted())
	require.NoError(t, b.env.GetWorkflowError())
	var out workflows.WebhookResendResult
	require.NoError(t, b.env.GetWorkflowResult(&out))
	require.Equal(t, workflows.WebhookResendResult{Delivered: 3}, out)
	var ids []string
	for _, d := range r.delivered {
		ids = append(ids, d.MessageID)
		require.Equal(t, store.TriggerRecover, d.Trigger)
		require.Equal(t, in.Target, d.Target)
	}
	require.Equal(t, []string{in.JobID + "-1", in.JobID + "-2", in.JobID + "-3"}, ids, "in order, each with its first id")
	require.Len(t, r.attempts, 4)
	require.Equal(t, 2, r.attempts[2].Attempt, "the failed one was retried")
}

func TestWebhookResendGivesUpAndStops(t *testing.T) {
	t.Parallel()
	t.Run("given up again", func(t *testing.T) {
		t.Parallel()
		r := downReceiver()
		b := resendSetup(t, r)
		var given givenUpRecorder
		b.env.OnActivity(acts.Webhooks.RecordWebhookGivenUp, mock.Anything, mock.Anything).Return(given.record)
		in := resendInput(2)
		b.env.ExecuteWorkflow(workflows.WebhookResendWorkflowName, in)
		var out workflows.WebhookResendResult
		require.NoError(t, b.env.GetWorkflowResult(&out))
		require.Equal(t, workflows.WebhookResendResult{GivenUp: 2}, out)
		require.Equal(t, []string{in.JobID + "-1", in.JobID + "-2"}, given.ids)
	})
	t.Run("410 Gone", func(t *testing.T) {
		t.Parallel()
		r := &receiver{answers: []error{temporal.NewNonRetryableApplicationError("gone", activities.ErrTypeWebhookGone, nil)}}
		b := resendSetup(t, r)
		b.env.ExecuteWorkflow(workflows.WebhookResendWorkflowName, resendInput(3))
		var out workflows.WebhookResendResult
		require.NoError(t, b.env.GetWorkflowResult(&out))
		require.Equal(t, workflows.WebhookResendResult{Stopped: true}, out)
		require.Len(t, r.attempts, 1, "nothing is sent after a 410")
	})
}
