package workflows_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/workflows"
)

// receiver records what the mocked DeliverWebhookEvent was asked to send
// (the job with its documents from the store, see bundle.fromStore), and
// answers with the errors a test scripts per attempt.
type receiver struct {
	mu        sync.Mutex
	attempts  []activities.WebhookDelivery
	delivered []activities.WebhookDelivery
	answers   []error // consumed in order; nil means accepted
}

func (r *receiver) deliver(_ context.Context, d activities.WebhookDelivery) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts = append(r.attempts, d)
	var err error
	if len(r.answers) > 0 {
		err, r.answers = r.answers[0], r.answers[1:]
	}
	if err == nil {
		r.delivered = append(r.delivered, d)
	}
	return err
}

func (r *receiver) events() []string {
	var out []string
	for _, d := range r.delivered {
		out = append(out, d.Event)
	}
	return out
}

// deliverFunc is a mocked webhook delivery.
type deliverFunc = func(context.Context, activities.WebhookDelivery) error

// fromStore makes deliver a mocked DeliverWebhookEvent: the event's job,
// which comes without its documents, gets them from the job's last
// projection write, as the activity reads them from the store.
func (b *bundle) fromStore(t *testing.T, deliver deliverFunc) deliverFunc {
	return func(ctx context.Context, d activities.WebhookDelivery) error {
		if present(d.Job.Input) || present(d.Job.ClientMeta) || present(d.Job.Result) {
			t.Errorf("%s: the attempt carries the job's documents", d.MessageID)
		}
		b.mu.Lock()
		if len(b.saved) == 0 {
			b.mu.Unlock()
			t.Errorf("%s: queued before the job was saved", d.MessageID)
			return nil
		}
		stored, err := b.saved[len(b.saved)-1].Record()
		b.mu.Unlock()
		if err == nil {
			d.Job, err = d.Job.WithDocuments(stored)
		}
		if err != nil {
			t.Errorf("%s: %v", d.MessageID, err)
			return nil
		}
		return deliver(ctx, d)
	}
}

// receive has r receive the job's webhook events, with the job's
// documents from the store (fromStore), and routes the job's first
// attempt to sandbox-fast.
func (b *bundle) receive(t *testing.T, r *receiver) {
	b.env.OnActivity(acts.Webhooks.DeliverWebhookEvent, mock.Anything, mock.Anything).Return(b.fromStore(t, r.deliver))
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1), nil).Once()
}

// present reports whether a document is there (not absent nor null).
func present(doc json.RawMessage) bool {
	return len(doc) > 0 && string(doc) != "null"
}

func withWebhook(service jobs.ServiceID) jobs.Submission {
	in := input()
	in.Service = service
	in.Webhook = &jobs.Webhook{URL: "https://hooks.test/jobs", Headers: map[string]string{"Authorization": "Bearer s3cret"}}
	return in
}

// downReceiver is a receiver that fails every attempt for a day.
func downReceiver() *receiver {
	down := make([]error, 1000)
	for i := range down {
		down[i] = failedAttempt()
	}
	return &receiver{answers: down}
}

func failedAttempt() error {
	return temporal.NewApplicationError("receiver answered 500", activities.ErrTypeWebhookFailed)
}

func TestWebhookEventsInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := &receiver{}
	b.receive(t, r)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool { return in.SignalProgress })).
		After(10*time.Second).Return(activities.CallOutput{Result: json.RawMessage(`{"format":"json"}`)}, nil).Once()
	// The provider call reports progress through signals.
	for i, p := range []int{5, 10, 15, 40, 45, 100} {
		p := p
		b.env.RegisterDelayedCallback(func() { b.env.SignalWorkflow(activities.ProgressSignal, p) }, time.Duration(i+1)*time.Second)
	}

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, withWebhook(jobs.Transcriptions))

	snap := result(t, b.env)
	require.Equal(t, jobs.StatusCompleted, snap.Status)
	require.Equal(t, []string{
		"transcription.progress", "transcription.progress", "transcription.progress", "transcription.completed",
	}, r.events(), "progress at 0, 10 and 40 (steps of 10 or more), then completed")
	var progress []int
	for _, d := range r.delivered[:3] {
		progress = append(progress, d.Job.Progress)
	}
	require.Equal(t, []int{0, 10, 40}, progress)
	last := r.delivered[3]
	require.JSONEq(t, `{"format":"json"}`, string(last.Job.Result))
	require.Equal(t, "Bearer s3cret", last.Target.Headers["Authorization"])
	ids := map[string]bool{}
	for _, d := range r.delivered {
		ids[d.MessageID] = true
	}
	require.Len(t, ids, 4, "each event has its own message id")
}

func TestLLMTasksSendNoProgressEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := &receiver{}
	b.receive(t, r)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.MatchedBy(func(in activities.CallInput) bool { return !in.SignalProgress })).
		Return(activities.CallOutput{Result: json.RawMessage(`{"content":"x","finish_reason":"completed"}`)}, nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, withWebhook(jobs.LLMTasks))

	result(t, b.env)
	require.Equal(t, []string{"llm-task.completed"}, r.events())
}

func TestWebhookRetriesKeepOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The receiver answers 500 twice, then accepts everything.
	r := &receiver{answers: []error{failedAttempt(), failedAttempt()}}
	b.receive(t, r)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, withWebhook(jobs.Translations))

	result(t, b.env)
	require.Equal(t, []string{"translation.progress", "translation.completed"}, r.events())
	require.Len(t, r.attempts, 4)
	require.Equal(t, []int{1, 2, 3}, []int{r.attempts[0].Attempt, r.attempts[1].Attempt, r.attempts[2].Attempt},
		"the first event is retried until accepted before the next is sent")
	require.Equal(t, "translation.progress", r.attempts[2].Event)
}

func TestGoneStopsDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := &receiver{answers: []error{temporal.NewNonRetryableApplicationError("410", activities.ErrTypeWebhookGone, nil)}}
	b.receive(t, r)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, withWebhook(jobs.Transcriptions))

	require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
	require.Len(t, r.attempts, 1, "nothing is sent after 410 Gone")
	require.Empty(t, r.delivered)
}

func TestReceiverDownDoesNotDelayTheJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := downReceiver()
	b.receive(t, r)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()
	start := b.env.Now()

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, withWebhook(jobs.Transcriptions))

	require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
	completed := b.saved[len(b.saved)-1]
	require.Equal(t, jobs.StatusCompleted, completed.Status)
	require.WithinDuration(t, start, *completed.CompletedAt, time.Minute, "the projection says completed as soon as the provider finished")
	elapsed := b.env.Now().Sub(start)
	require.GreaterOrEqual(t, elapsed, 24*time.Hour-2*time.Hour, "the workflow kept retrying for about a day")
	require.Less(t, elapsed, 26*time.Hour)
	require.Empty(t, r.delivered)
	// Exponential backoff: after the first hours attempts are about an hour apart.
	require.Less(t, len(r.attempts), 60)
	require.Greater(t, len(r.attempts), 20)
}

func TestWebhookAttemptsLeaveLargeDocumentsOutOfTheHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := downReceiver()
	var scheduled int // bytes of the attempts' inputs, as the history holds them
	var bodies []string
	deliver := b.fromStore(t, r.deliver)
	b.env.OnActivity(acts.Webhooks.DeliverWebhookEvent, mock.Anything, mock.Anything).Return(func(ctx context.Context, d activities.WebhookDelivery) error {
		payloads, err := converter.GetDefaultDataConverter().ToPayloads(d)
		if err != nil {
			return err
		}
		scheduled += proto.Size(payloads)
		return deliver(ctx, d)
	})
	big := json.RawMessage(`{"content":"` + strings.Repeat("r", 2<<20) + `","finish_reason":"completed"}`)
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, attemptIs(1)).Return(routeTo("sandbox-fast", 1), nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{Result: big}, nil).Once()
	in := withWebhook(jobs.LLMTasks)
	in.Input = json.RawMessage(`{"type":"text","text":"` + strings.Repeat("i", 500<<10) + `","prompt":"Summarise."}`)
	in.ClientMeta = json.RawMessage(`{"ref":"` + strings.Repeat("m", 15<<10) + `"}`)

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, in)

	result(t, b.env)
	require.Greater(t, len(r.attempts), 20, "retried for a day")
	for _, d := range r.attempts {
		require.Equal(t, "llm-task.completed", d.Event)
		require.Equal(t, []byte(big), []byte(d.Job.Result), "the receiver gets the result, read from the store")
		body, err := jobs.WebhookBody(d.Event, d.Job)
		require.NoError(t, err)
		bodies = append(bodies, string(body))
	}
	for _, body := range bodies[1:] {
		require.True(t, body == bodies[0], "every attempt of the event sends the same body")
	}
	require.Less(t, scheduled, 64<<10,
		"%d attempts hold %d bytes in the history (a %d-byte result)", len(r.attempts), scheduled, len(big))
}

func TestCancelledJobReportsFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := &receiver{}
	b.receive(t, r)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).After(time.Hour).Return(activities.CallOutput{}, nil).Maybe()
	b.env.RegisterDelayedCallback(b.env.CancelWorkflow, time.Minute)

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, withWebhook(jobs.Transcriptions))

	require.True(t, b.env.IsWorkflowCompleted())
	require.Equal(t, []string{"transcription.progress", "transcription.failed"}, r.events())
	require.Equal(t, jobs.CodeCancelled, r.delivered[1].Job.Error.Code)
}

// TestCancelWhileDeliveringTheLastEvent: a job that completed is over; a
// cancel that comes while its completed event is retried does not
// abandon the event.
func TestCancelWhileDeliveringTheLastEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Progress goes through; the completed event fails for about a minute.
	r := &receiver{answers: []error{nil, failedAttempt(), failedAttempt(), failedAttempt(), failedAttempt(), failedAttempt(), failedAttempt()}}
	b.receive(t, r)
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(activities.CallOutput{Result: json.RawMessage(`{}`)}, nil).Once()
	b.env.RegisterDelayedCallback(b.env.CancelWorkflow, 5*time.Second)

	b.env.ExecuteWorkflow(workflows.JobWorkflowName, withWebhook(jobs.Translations))

	require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status, "the job completed before the cancel")
	require.Equal(t, []string{"translation.progress", "translation.completed"}, r.events())
	require.Len(t, r.attempts, 8)
}

func TestWebhookBackoffHasJitter(t *testing.T) {
	t.Parallel()
	// Different jobs' retries spread out; the same job's are stable.
	a1 := workflows.WebhookBackoff(5, "job-a-1")
	b1 := workflows.WebhookBackoff(5, "job-b-1")
	require.NotEqual(t, a1, b1)
	require.Equal(t, a1, workflows.WebhookBackoff(5, "job-a-1"))
	for attempt := 1; attempt < 30; attempt++ {
		d := workflows.WebhookBackoff(attempt, "m")
		base := min(time.Second<<min(attempt-1, 12), time.Hour)
		require.GreaterOrEqual(t, d, time.Duration(float64(base)*0.8))
		require.LessOrEqual(t, d, time.Duration(float64(base)*1.2))
	}
}
