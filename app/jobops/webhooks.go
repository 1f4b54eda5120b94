package jobops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// Refusals of webhook resends (docs/webhooks.md, Resending and recovering
// events).
var (
	// ErrNoWebhook: the job was submitted without a webhook.
	ErrNoWebhook = errors.New("the job has no webhook")
	// ErrNotResendable: the job's events cannot be resent (its workflow
	// history, which holds the webhook, is gone).
	ErrNotResendable = errors.New("the job's webhook events cannot be resent")
	// ErrPayloadUndecryptable: the job's workflow history, which holds the
	// webhook, does not decrypt with this process's payload keys
	// (docs/operations.md, Payload encryption).
	ErrPayloadUndecryptable = errors.New("the job's workflow history cannot be decrypted")
)

// WebhookStore reads jobs' webhook messages and delivery attempts.
type WebhookStore interface {
	ListDeliveries(ctx context.Context, jobID string) ([]store.WebhookDelivery, error)
	WebhookMessages(ctx context.Context, jobID string) ([]store.WebhookMessage, error)
	GivenUpWebhooks(ctx context.Context, f store.GivenUpFilter) ([]store.WebhookMessage, error)
	ClaimWebhookRecovery(ctx context.Context, ids []string, at time.Time) ([]string, error)
	ReleaseWebhookRecovery(ctx context.Context, ids []string) error
}

// WebhookResend is a resend of a job's webhook messages.
type WebhookResend struct {
	JobID string
	// WorkflowID is the resend's workflow; "" when nothing was started
	// (nothing to send, or a dry run).
	WorkflowID string
	// MessageIDs are the messages sent again, in order.
	MessageIDs []string
	// Skipped are messages that cannot be rebuilt: sent before the
	// gateway recorded what messages carry, and not a terminal event.
	Skipped []string
}

// RecoverRequest selects the given-up deliveries a recovery resends.
type RecoverRequest struct {
	// Since and Until (zero: now) bound when a delivery was given up.
	Since, Until time.Time
	// URL, if set, takes only jobs whose webhook goes to it.
	URL string
	// Tenant, if set, takes only that tenant's jobs.
	Tenant string
	// Services, if set, takes only jobs of these services.
	Services []jobs.ServiceID
	// DryRun says what would be resent and sends nothing.
	DryRun bool
}

// RecoverSkip is a job whose given-up deliveries were not resent.
type RecoverSkip struct {
	JobID  string
	Reason string
}

// RecoverResult is what a recovery resent (or, dry, would resend).
type RecoverResult struct {
	Messages int
	Jobs     []WebhookResend
	Skipped  []RecoverSkip
	// Truncated: more deliveries match than one recovery takes
	// (MaxRecoverMessages); run it again for the rest.
	Truncated bool
}

// MaxRecoverMessages is how many given-up messages one recovery takes.
const MaxRecoverMessages = 5000

// ResendWebhooks sends every message the job's webhook was sent again, in
// order, with its first webhook-id (docs/webhooks.md).
func (s *Service) ResendWebhooks(ctx context.Context, job *jobs.Record) (*WebhookResend, error) {
	if s.cfg.Webhooks == nil {
		return nil, refuse(ErrUnavailable, "webhook resends are not available on this server")
	}
	sub, started, err := s.webhookSubmission(ctx, job.ID)
	if err != nil {
		return nil, err
	}
	if sub.Webhook == nil {
		return nil, refuse(ErrNoWebhook, "job %s was submitted without a webhook: it has no events to resend", job.ID)
	}
	if !started {
		// Waiting in the outbox: nothing was sent yet.
		return &WebhookResend{JobID: job.ID}, nil
	}
	attempts, err := s.cfg.Webhooks.ListDeliveries(ctx, job.ID)
	if err != nil {
		return nil, err
	}
	recorded, err := s.cfg.Webhooks.WebhookMessages(ctx, job.ID)
	if err != nil {
		return nil, err
	}
	pins := map[string]store.WebhookMessage{}
	for _, m := range recorded {
		pins[m.MessageID] = m
	}
	// The messages the job's own deliveries sent, by their number.
	type sent struct {
		seq       int
		id, event string
	}
	var order []sent
	seen := map[string]bool{}
	for _, a := range attempts {
		if a.Trigger != "" || seen[a.MessageID] {
			continue
		}
		seen[a.MessageID] = true
		seq, err := store.MessageSeq(a.MessageID)
		if err != nil {
			continue
		}
		order = append(order, sent{seq, a.MessageID, a.Event})
	}
	slices.SortFunc(order, func(a, b sent) int { return a.seq - b.seq })
	out := &WebhookResend{JobID: job.ID}
	var messages []workflows.ResendMessage
	for _, m := range order {
		msg, ok := rebuild(job, pins[m.id], m.id, m.event)
		if !ok {
			out.Skipped = append(out.Skipped, m.id)
			continue
		}
		messages = append(messages, msg)
		out.MessageIDs = append(out.MessageIDs, m.id)
	}
	if len(messages) > 0 {
		if out.WorkflowID, err = s.startResend(ctx, job, *sub.Webhook, store.TriggerResend, messages); err != nil {
			return nil, err
		}
		s.audit(ctx, store.AuditEntry{Tenant: job.Tenant, Action: "webhook.resend", Target: "job/" + job.ID,
			After: map[string]any{"messages": out.MessageIDs}})
	}
	return out, nil
}

// webhookSubmission is the job's submission: from its workflow's history,
// or, for a job whose workflow has not started, from its start in the
// outbox (started false).
func (s *Service) webhookSubmission(ctx context.Context, id string) (jobs.Submission, bool, error) {
	start, err := s.cfg.Jobs.GetJobStart(ctx, id)
	if err == nil {
		var sub jobs.Submission
		if err := json.Unmarshal([]byte(start.Input), &sub); err != nil {
			return sub, false, fmt.Errorf("job %s: read its submission: %w", id, err)
		}
		return sub, false, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return jobs.Submission{}, false, err
	}
	sub, _, err := s.submission(ctx, id, ErrNotResendable)
	return sub, true, err
}

// undecryptable tells payloads this process cannot decrypt (a wrong or
// unknown key, a shredded scope, or no keys at all) from failures that
// may pass.
func undecryptable(err error) bool {
	return errors.Is(err, payloadcodec.ErrDecrypt) || errors.Is(err, payloadcodec.ErrUnknownKey) ||
		errors.Is(err, payloadcodec.ErrScopeShredded) || errors.Is(err, converter.ErrEncodingIsNotSupported)
}

// rebuild is the message id of event as first sent: from its record, or,
// for a message sent before messages were recorded, the job's terminal
// event from the job itself.
func rebuild(job *jobs.Record, rec store.WebhookMessage, id, event string) (workflows.ResendMessage, bool) {
	if rec.Snapshot != "" {
		snap, err := rec.Job()
		return workflows.ResendMessage{MessageID: id, Event: rec.Event, Job: snap}, err == nil
	}
	svc, ok := jobs.ServiceOf(job.Service)
	terminal := (job.Status == jobs.StatusCompleted && event == jobs.EventName(svc, jobs.EventCompleted)) ||
		(job.Status == jobs.StatusFailed && event == jobs.EventName(svc, jobs.EventFailed))
	if !ok || !terminal {
		return workflows.ResendMessage{}, false
	}
	snap, err := job.Snapshot()
	return workflows.ResendMessage{MessageID: id, Event: event, Job: snap.WithoutDocuments()}, err == nil
}

// startResend starts the workflow that sends messages of job to target.
func (s *Service) startResend(ctx context.Context, job *jobs.Record, target jobs.Webhook, trigger string, messages []workflows.ResendMessage) (string, error) {
	id := workflows.WebhookResendWorkflowID(job.ID, uuid.NewString())
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: workflows.TaskQueue}
	in := workflows.WebhookResend{JobID: job.ID, Service: job.Service, Target: target, Trigger: trigger,
		Messages: messages, GiveUpAfter: s.cfg.WebhookGiveUpAfter}
	if _, err := s.cfg.Temporal.ExecuteWorkflow(ctx, opts, workflows.WebhookResendWorkflowName, in); err != nil {
		s.cfg.Logger.Error("start a webhook resend", "job", job.ID, "error", err)
		return "", refuse(ErrUnavailable, "the resend of job %s's webhook events could not be started now; try again", job.ID)
	}
	s.cfg.Logger.Info("webhook events resent", "job", job.ID, "workflow", id, "trigger", trigger, "messages", len(messages))
	return id, nil
}

// RecoverWebhooks resends the messages whose delivery was given up in the
// request's window, in order per job, one resend workflow per job
// (docs/webhooks.md). Jobs deleted since, or whose workflow history is
// gone, are skipped and named.
func (s *Service) RecoverWebhooks(ctx context.Context, req RecoverRequest) (*RecoverResult, error) {
	if s.cfg.Webhooks == nil {
		return nil, refuse(ErrUnavailable, "webhook recovery is not available on this server")
	}
	given, err := s.cfg.Webhooks.GivenUpWebhooks(ctx, store.GivenUpFilter{
		Since: req.Since, Until: req.Until, Tenant: req.Tenant, Limit: MaxRecoverMessages + 1})
	if err != nil {
		return nil, err
	}
	out := &RecoverResult{Truncated: len(given) > MaxRecoverMessages}
	if out.Truncated {
		// Whole jobs only: the last job's messages may be cut off.
		last := given[MaxRecoverMessages].JobID
		for len(given) > 0 && given[len(given)-1].JobID == last {
			given = given[:len(given)-1]
		}
	}
	for len(given) > 0 {
		n := 1
		for n < len(given) && given[n].JobID == given[0].JobID {
			n++
		}
		resend, skip, err := s.recoverJob(ctx, req, given[:n])
		if err != nil {
			return nil, err
		}
		switch {
		case skip != "":
			out.Skipped = append(out.Skipped, RecoverSkip{JobID: given[0].JobID, Reason: skip})
		case resend != nil:
			out.Jobs = append(out.Jobs, *resend)
			out.Messages += len(resend.MessageIDs)
		}
		given = given[n:]
	}
	return out, nil
}

// recoverJob resends one job's given-up messages; it returns why it did
// not, or nothing when the job's webhook is not the request's URL.
func (s *Service) recoverJob(ctx context.Context, req RecoverRequest, given []store.WebhookMessage) (*WebhookResend, string, error) {
	jobID := given[0].JobID
	job, err := s.cfg.Jobs.GetJob(ctx, jobID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "the job was deleted", nil
	}
	if err != nil {
		return nil, "", err
	}
	if len(req.Services) > 0 && !slices.Contains(req.Services, job.Service) {
		return nil, "", nil
	}
	sub, _, err := s.submission(ctx, jobID, ErrNotResendable)
	var refusal *Error
	if errors.As(err, &refusal) && (errors.Is(refusal.Kind, ErrNotResendable) || errors.Is(refusal.Kind, ErrPayloadUndecryptable)) {
		return nil, refusal.Message, nil
	}
	if err != nil {
		return nil, "", err
	}
	if sub.Webhook == nil {
		return nil, "the job has no webhook", nil
	}
	if req.URL != "" && sub.Webhook.URL != req.URL {
		return nil, "", nil
	}
	out := &WebhookResend{JobID: jobID}
	var ids []string
	rebuilt := map[string]workflows.ResendMessage{}
	for _, m := range given {
		msg, ok := rebuild(job, m, m.MessageID, m.Event)
		if !ok {
			out.Skipped = append(out.Skipped, m.MessageID)
			continue
		}
		rebuilt[m.MessageID] = msg
		ids = append(ids, m.MessageID)
	}
	if req.DryRun || len(ids) == 0 {
		out.MessageIDs = ids
		return out, "", nil
	}
	// Claimed before the resend starts: a concurrent recovery sends each
	// message once.
	claimed, err := s.cfg.Webhooks.ClaimWebhookRecovery(ctx, ids, s.cfg.Now())
	if err != nil {
		return nil, "", fmt.Errorf("job %s: claim its given-up webhook messages: %w", jobID, err)
	}
	if len(claimed) == 0 {
		return nil, "", nil // another recovery took them
	}
	messages := make([]workflows.ResendMessage, 0, len(claimed))
	for _, id := range claimed {
		messages = append(messages, rebuilt[id])
	}
	out.MessageIDs = claimed
	if out.WorkflowID, err = s.startResend(ctx, job, *sub.Webhook, store.TriggerRecover, messages); err != nil {
		if rerr := s.cfg.Webhooks.ReleaseWebhookRecovery(context.WithoutCancel(ctx), claimed); rerr != nil {
			s.cfg.Logger.Error("give back claimed webhook messages; they wait for their next give-up", "job", jobID, "error", rerr)
		}
		return nil, "", err
	}
	s.audit(ctx, store.AuditEntry{Tenant: job.Tenant, Action: "webhook.recover", Target: "job/" + jobID,
		After: map[string]any{"messages": claimed}})
	return out, "", nil
}
