package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// WebhookResendWorkflowName is the registered name of
// WebhookResendWorkflow.
const WebhookResendWorkflowName = "WebhookResendWorkflow"

// WebhookResendWorkflowID is the id of one resend of a job's webhook
// events; request tells resends of the same job apart.
func WebhookResendWorkflowID(jobID, request string) string {
	return "webhook-resend-" + jobID + "-" + request
}

// WebhookResend is a resend of some of a job's webhook messages, in order
// (docs/webhooks.md, Resending and recovering events). It carries the
// job's webhook target, headers too, as the job's submission does.
type WebhookResend struct {
	JobID   string         `json:"job_id"`
	Service jobs.ServiceID `json:"service"`
	Target  jobs.Webhook   `json:"target"`
	// Trigger is store.TriggerResend or store.TriggerRecover.
	Trigger  string          `json:"trigger"`
	Messages []ResendMessage `json:"messages"`
	// GiveUpAfter is how long each message is retried (0: 24 h).
	GiveUpAfter time.Duration `json:"give_up_after,omitempty"`
}

// ResendMessage is one message to send again: its id and event as first
// sent, and the job as of the event without its documents.
type ResendMessage struct {
	MessageID string        `json:"message_id"`
	Event     string        `json:"event"`
	Job       jobs.Snapshot `json:"job"`
}

// WebhookResendResult counts how the resent messages' deliveries ended.
type WebhookResendResult struct {
	Delivered int `json:"delivered"`
	GivenUp   int `json:"given_up"`
	// Stopped: the receiver answered 410 Gone (or the job was deleted),
	// and the messages after it were not sent.
	Stopped bool `json:"stopped,omitempty"`
}

// WebhookResendWorkflow sends a job's messages again, one at a time in
// order, each with its first webhook-id and a fresh timestamp and
// signature, retried as the job's own deliveries are; a message given up
// again is recorded as given up.
func WebhookResendWorkflow(ctx workflow.Context, in WebhookResend) (WebhookResendResult, error) {
	var out WebhookResendResult
	q := newWebhookQueue(in.Target, in.Service, true)
	q.window = webhookWindow(in.GiveUpAfter)
	q.onGiveUp = recordGivenUp
	ctx = workflow.WithActivityOptions(ctx, webhookAttemptOptions)
	for _, m := range in.Messages {
		d := activities.WebhookDelivery{Target: in.Target, Event: m.Event, MessageID: m.MessageID, Job: m.Job, Trigger: in.Trigger}
		switch q.deliver(ctx, d, workflow.Now(ctx).Add(q.window)) {
		case delivered:
			out.Delivered++
		case givenUp:
			out.GivenUp++
		case stopped:
			out.Stopped = true
			return out, nil
		}
	}
	return out, nil
}
