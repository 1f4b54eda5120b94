package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
)

// Webhook delivery: the job's events go through one queue, delivered by one
// coroutine, one at a time, so they arrive in order; the next is not sent
// until the previous one was accepted (2xx) or given up.
const (
	// webhookRetryWindow is how long an event is retried unless the
	// submission says otherwise (jobs.Submission.WebhookGiveUpAfter): the
	// retry schedule every webhook sender shares (webhooksign.RetryWindow).
	webhookRetryWindow = webhooksign.RetryWindow
	// webhookMaxBackoff caps the wait between two attempts.
	webhookMaxBackoff = webhooksign.MaxBackoff
	// progressStep is how far progress must advance for another
	// *.progress event.
	progressStep = 10
)

// webhookAttemptOptions: one attempt per activity; the workflow retries
// with backoff and jitter so every attempt shows in the history.
var webhookAttemptOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
}

// queuedEvent is an event waiting for delivery and when it happened.
type queuedEvent struct {
	delivery activities.WebhookDelivery
	at       time.Time
}

// webhookQueue holds a job's undelivered events.
type webhookQueue struct {
	target       jobs.Webhook
	service      jobs.Service
	progress     bool // whether the service sends *.progress events
	pending      []queuedEvent
	sequence     int
	lastProgress int  // progress of the last *.progress event; -1 before any
	stored       bool // attempts leave the job's documents to the store (webhookDocumentsChange)
	stopped      bool // a 410 Gone (or a refused address) ended delivery
	closed       bool // the job is over: no more events will come
	drained      bool // the sender has finished
	// window is how long an event is retried before it is given up.
	window time.Duration
	// onGiveUp, if set, runs when an event is given up.
	onGiveUp func(ctx workflow.Context, d activities.WebhookDelivery)
}

// webhookWindow is the retry window a submission or resend asks for, or
// the default 24 h.
func webhookWindow(giveUpAfter time.Duration) time.Duration {
	return webhooksign.Window(giveUpAfter)
}

func newWebhookQueue(target jobs.Webhook, service jobs.ServiceID, stored bool) *webhookQueue {
	svc := jobs.MustService(service)
	return &webhookQueue{target: target, service: svc, progress: svc.SendsProgress, lastProgress: -1, stored: stored, window: webhookRetryWindow}
}

// add queues an event carrying the job as it is at time now. Without its
// documents, an attempt reads them from the job's record: input, options
// and client meta are there from the job's creation, and a completed
// event's result from the save finish makes before queueing it.
func (q *webhookQueue) add(event jobs.EventKind, snap jobs.Snapshot, now time.Time) {
	if q.stopped {
		return
	}
	if q.stored {
		snap = snap.WithoutDocuments()
	}
	q.sequence++
	q.pending = append(q.pending, queuedEvent{at: now, delivery: activities.WebhookDelivery{
		Target:    q.target,
		Event:     jobs.EventName(q.service, event),
		MessageID: fmt.Sprintf("%s-%d", snap.ID, q.sequence),
		Job:       snap,
	}})
}

// addProgress queues a *.progress event when the service sends them and
// progress advanced enough since the last one (or this is the first).
func (q *webhookQueue) addProgress(snap jobs.Snapshot, now time.Time) {
	if !q.progress || (q.lastProgress >= 0 && snap.Progress < q.lastProgress+progressStep) {
		return
	}
	q.lastProgress = snap.Progress
	q.add(jobs.EventProgress, snap, now)
}

// run delivers events until the queue is closed and empty. ctx must be
// disconnected from the workflow's cancellation: a cancelled job still
// reports that it failed.
func (q *webhookQueue) run(ctx workflow.Context) {
	ctx = workflow.WithActivityOptions(ctx, webhookAttemptOptions)
	for {
		_ = workflow.Await(ctx, func() bool { return len(q.pending) > 0 || q.closed })
		if len(q.pending) == 0 {
			q.drained = true
			return
		}
		next := q.pending[0]
		q.pending = q.pending[1:]
		q.deliver(ctx, next.delivery, next.at.Add(q.window))
	}
}

// deliveryOutcome is how the delivery of one event ended.
type deliveryOutcome int

const (
	delivered deliveryOutcome = iota
	givenUp
	stopped
)

// deliver sends one event, retrying with exponential backoff and jitter
// until giveUpAt (24 h after the event happened; an event that waited that
// long behind earlier ones still gets one attempt).
func (q *webhookQueue) deliver(ctx workflow.Context, d activities.WebhookDelivery, giveUpAt time.Time) deliveryOutcome {
	deliverActivity := webhooks.DeliverWebhook
	if q.stored {
		deliverActivity = webhooks.DeliverWebhookEvent
	}
	for attempt := 1; ; attempt++ {
		d.Attempt = attempt
		options := workflow.GetActivityOptions(ctx)
		options.Summary = fmt.Sprintf("deliver %s (attempt %d)", d.Event, attempt)
		actx := workflow.WithActivityOptions(ctx, options)
		err := workflow.ExecuteActivity(actx, deliverActivity, d).Get(ctx, nil)
		if err == nil {
			return delivered
		}
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && (appErr.Type() == activities.ErrTypeWebhookGone || appErr.Type() == activities.ErrTypeWebhookForbidden) {
			workflow.GetLogger(ctx).Warn("webhook delivery stopped for the job", "event", d.Event, "reason", appErr.Type())
			q.stopped = true
			q.pending = nil
			return stopped
		}
		wait, retry := webhooksign.RetryAfter(d.MessageID, attempt, workflow.Now(ctx), giveUpAt)
		if !retry {
			workflow.GetLogger(ctx).Warn("webhook event given up", "event", d.Event, "attempts", attempt, "window", q.window)
			if q.onGiveUp != nil {
				q.onGiveUp(ctx, d)
			}
			return givenUp
		}
		_ = workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{
			Summary: fmt.Sprintf("wait before retrying %s", d.Event),
		}).Get(ctx, nil)
	}
}

// givenUpOptions: recording a given-up event is retried for a while; if
// it still fails the event is not findable, which the log says.
var givenUpOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Second,
	RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 10, MaximumInterval: time.Minute},
}

// recordGivenUp records in the store that d was given up
// (docs/webhooks.md, Resending and recovering events).
func recordGivenUp(ctx workflow.Context, d activities.WebhookDelivery) {
	actx := workflow.WithActivityOptions(ctx, givenUpOptions)
	if err := workflow.ExecuteActivity(actx, webhooks.RecordWebhookGivenUp, d).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("a given-up webhook event was not recorded", "event", d.Event, "message", d.MessageID, "error", err)
	}
}

// webhookBackoff is the wait after failed attempt number attempt of a
// message: the schedule every webhook sender shares (webhooksign.Backoff).
func webhookBackoff(attempt int, messageID string) time.Duration {
	return webhooksign.Backoff(attempt, messageID)
}
