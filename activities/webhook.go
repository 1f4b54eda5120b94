package activities

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store"
)

// Error types of DeliverWebhook failures, for the workflow to branch on.
const (
	// ErrTypeWebhookFailed is a retryable failure: a non-2xx answer other
	// than 410, a timeout or a network error.
	ErrTypeWebhookFailed = "WebhookFailed"
	// ErrTypeWebhookGone is the receiver's 410 Gone, or a job that was
	// deleted: stop delivering the job's events.
	ErrTypeWebhookGone = "WebhookGone"
	// ErrTypeWebhookForbidden is a URL the gateway refuses to call (an
	// address outside the public internet): stop delivering the job's
	// events.
	ErrTypeWebhookForbidden = "WebhookForbidden"
)

// Limits of one delivery attempt: those of every webhook post.
const (
	// WebhookTimeout bounds a whole exchange: connect, send, answer.
	WebhookTimeout = webhooksign.Timeout
	// WebhookUserAgent identifies the gateway to receivers.
	WebhookUserAgent = webhooksign.UserAgent
)

// Webhooks deliver jobs' events to their webhooks (docs/webhooks.md).
type Webhooks struct {
	// Signer signs webhook requests.
	Signer *webhooksign.Signer
	// Client delivers webhooks (default: netguard.NewClient(false,
	// WebhookTimeout), public addresses only).
	Client *http.Client
	// Deliveries records webhook delivery attempts; nil records none.
	Deliveries DeliveryStore
	// Messages records what each message carried and which were given
	// up, for resends and recovery (docs/webhooks.md); nil records none.
	Messages MessageStore
	// Jobs reads the stored jobs webhook payloads are rendered from.
	Jobs JobReader
	// Files signs the download_url of result files (docs/media.md); nil:
	// results get none.
	Files *blobstore.Store
	// LinkTTL is how long a download_url stays valid (default 1 h).
	LinkTTL time.Duration
	// Metrics counts deliveries; nil records none.
	Metrics *metrics.Metrics
}

// DeliveryStore records webhook delivery attempts.
type DeliveryStore interface {
	RecordDelivery(ctx context.Context, d *store.WebhookDelivery) error
}

// MessageStore records jobs' webhook messages (store.WebhookMessage).
type MessageStore interface {
	RecordWebhookMessage(ctx context.Context, m *store.WebhookMessage) error
	WebhookGivenUp(ctx context.Context, m *store.WebhookMessage, at time.Time) error
	WebhookDelivered(ctx context.Context, id string) error
}

// JobReader reads a job's stored record, or the tombstone of a deleted
// job.
type JobReader interface {
	GetJob(ctx context.Context, id string) (*jobs.Record, error)
	GetTombstone(ctx context.Context, id string) (*jobs.Tombstone, error)
}

// WebhookDelivery is one event of a job to deliver.
type WebhookDelivery struct {
	Target jobs.Webhook `json:"target"`
	// Event is the event name, e.g. "transcription.completed".
	Event string `json:"event"`
	// MessageID identifies the event, the same on every attempt
	// (webhook-id header), so receivers can drop duplicates.
	MessageID string `json:"message_id"`
	// Job is the job as of the event: whole for DeliverWebhook, without
	// its documents (jobs.Snapshot.WithoutDocuments) for
	// DeliverWebhookEvent.
	Job jobs.Snapshot `json:"job"`
	// Attempt numbers this attempt when the workflow retries by running
	// the activity again; 0 leaves the numbering to Temporal's attempt.
	Attempt int `json:"attempt,omitempty"`
	// Deleted, for a *.deleted event, is the job's tombstone, which the
	// event carries instead of the job (Job has only its id).
	Deleted *jobs.Tombstone `json:"deleted,omitempty"`
	// Trigger is "" for the job's own delivery, store.TriggerResend or
	// store.TriggerRecover for a resend (docs/webhooks.md).
	Trigger string `json:"trigger,omitempty"`
}

// DeliverWebhookEvent is DeliverWebhook for an event whose Job leaves out
// the job's documents: it reads them from the job's stored record, so the
// workflow history does not hold the input and result once per attempt.
// The documents never change once stored, so every attempt of an event
// sends the same body.
func (w *Webhooks) DeliverWebhookEvent(ctx context.Context, d WebhookDelivery) error {
	if w.Jobs == nil {
		// A worker misconfiguration, as a missing signer.
		return temporal.NewApplicationError("this worker cannot read jobs", ErrTypeWebhookFailed)
	}
	rec, err := w.Jobs.GetJob(ctx, d.Job.ID)
	if errors.Is(err, store.ErrNotFound) {
		if _, terr := w.Jobs.GetTombstone(ctx, d.Job.ID); terr == nil {
			// Deleted: its events are not sent any more (docs/api.md,
			// Deleting a job), and the job's workflow stops delivering
			// as after a 410.
			return temporal.NewNonRetryableApplicationError("the job was deleted", ErrTypeWebhookGone, err)
		}
	}
	if err == nil {
		d.Job, err = d.Job.WithDocuments(rec)
	}
	if err != nil {
		// Nothing was sent; the workflow tries again after a backoff. The
		// delivery log says so, or a stuck event would show nothing.
		activity.GetLogger(ctx).Warn("webhook payload not rendered", "job", d.Job.ID, "event", d.Event, "error", err)
		w.recordAttempt(ctx, &store.WebhookDelivery{
			JobID: d.Job.ID, Event: d.Event, MessageID: d.MessageID, Attempt: attemptNumber(ctx, d),
			AttemptedAt: time.Now(), Error: "not sent: the job's stored record could not be read: " + err.Error(),
			Trigger: d.Trigger,
		})
		return temporal.NewApplicationError("read the job for its webhook payload: "+err.Error(), ErrTypeWebhookFailed)
	}
	return w.DeliverWebhook(ctx, d)
}

// body renders d's payload: a *.deleted event's tombstone, or the job
// with a fresh download_url.
func (w *Webhooks) body(ctx context.Context, d WebhookDelivery) ([]byte, error) {
	if d.Deleted != nil {
		return jobs.DeletedWebhookBody(d.Event, d.Deleted)
	}
	job, err := w.linkResultFile(ctx, d.Job)
	if err != nil {
		return nil, temporal.NewApplicationError("sign the result's download_url: "+err.Error(), ErrTypeWebhookFailed)
	}
	body, err := jobs.WebhookBody(d.Event, job)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("render webhook payload: "+err.Error(), ErrTypeWebhookFailed, err)
	}
	return body, nil
}

// attemptNumber numbers an attempt of d: the workflow's count when it
// retries by running the activity again, else Temporal's.
func attemptNumber(ctx context.Context, d WebhookDelivery) int {
	attempt := int(activity.GetInfo(ctx).Attempt)
	if d.Attempt > 0 {
		attempt = d.Attempt + attempt - 1
	}
	return attempt
}

// recordAttempt writes an attempt into the delivery log, also when the
// activity was cancelled mid-attempt.
func (w *Webhooks) recordAttempt(ctx context.Context, rec *store.WebhookDelivery) {
	if w.Deliveries == nil {
		return
	}
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := w.Deliveries.RecordDelivery(recordCtx, rec); err != nil {
		activity.GetLogger(ctx).Warn("webhook attempt not recorded", "job", rec.JobID, "event", rec.Event, "error", err)
	}
}

// DeliverWebhook makes one attempt to POST an event to the job's webhook,
// signed the Standard Webhooks way, and records the attempt. A 2xx answer
// is success; 410 Gone and a refused address are non-retryable; anything
// else is a retryable ErrTypeWebhookFailed.
func (w *Webhooks) DeliverWebhook(ctx context.Context, d WebhookDelivery) error {
	logger := activity.GetLogger(ctx)
	attempt := attemptNumber(ctx, d)
	body, err := w.body(ctx, d)
	if err != nil {
		return err
	}
	u, err := url.Parse(d.Target.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return temporal.NewNonRetryableApplicationError("webhook URL is not an absolute http or https URL", ErrTypeWebhookForbidden, nil)
	}
	if w.Signer == nil {
		// A worker misconfiguration: retrying lets a fixed deployment
		// deliver the event.
		return temporal.NewApplicationError("this worker has no webhook signing key", ErrTypeWebhookFailed)
	}

	if d.Trigger == "" {
		w.recordMessage(ctx, d)
	}
	started := time.Now()
	answer := webhooksign.Post(ctx, w.Client, w.Signer, webhooksign.Message{URL: u.String(), ID: d.MessageID, Headers: d.Target.Headers, Body: body}, started)
	status := answer.Status
	rec := &store.WebhookDelivery{
		Trigger:     d.Trigger,
		JobID:       d.Job.ID,
		Event:       d.Event,
		MessageID:   d.MessageID,
		Attempt:     attempt,
		AttemptedAt: started,
		StatusCode:  status,
		DurationMS:  time.Since(started).Milliseconds(),
	}

	var result error
	switch {
	case answer.Outcome == webhooksign.Refused:
		rec.Error = answer.LogError()
		result = temporal.NewNonRetryableApplicationError("webhook "+rec.Error, ErrTypeWebhookForbidden, nil)
	case status == 0 && answer.Err != nil && ctx.Err() != nil:
		// The activity itself ended (worker shutdown, workflow gone).
		rec.Error = "interrupted: " + ctx.Err().Error()
		result = ctx.Err()
	case answer.Outcome == webhooksign.Delivered:
		if d.Trigger != "" && w.Messages != nil {
			if err := w.Messages.WebhookDelivered(ctx, d.MessageID); err != nil {
				logger.Warn("resent webhook message not marked delivered", "job", d.Job.ID, "message", d.MessageID, "error", err)
			}
		}
	case answer.Outcome == webhooksign.Gone:
		rec.Error = answer.LogError() + ": no more events for this job"
		result = temporal.NewNonRetryableApplicationError("webhook "+rec.Error, ErrTypeWebhookGone, nil)
	default:
		rec.Error = answer.LogError()
		result = temporal.NewApplicationError("webhook delivery failed: "+rec.Error, ErrTypeWebhookFailed)
	}

	w.recordAttempt(ctx, rec)
	w.Metrics.WebhookDelivery(deliveryOutcome(result), time.Since(started))
	if result != nil {
		logger.Info("webhook attempt failed", "job", d.Job.ID, "event", d.Event, "attempt", attempt, "error", rec.Error)
	}
	return result
}

// recordMessage records what message d carries, once (the first attempt
// that sends it; later ones change nothing), so a resend can send the
// same (docs/webhooks.md). A failure only logs: the delivery goes on.
func (w *Webhooks) recordMessage(ctx context.Context, d WebhookDelivery) {
	if w.Messages == nil || d.Deleted != nil {
		return
	}
	m, err := store.NewWebhookMessage(d.MessageID, d.Event, d.Job)
	if err == nil {
		err = w.Messages.RecordWebhookMessage(ctx, m)
	}
	if err != nil {
		activity.GetLogger(ctx).Warn("webhook message not recorded", "job", d.Job.ID, "message", d.MessageID, "error", err)
	}
}

// RecordWebhookGivenUp records that the delivery of d was given up, so
// its job shows with filter[webhook]=failed and a recovery resends it
// (docs/webhooks.md).
func (w *Webhooks) RecordWebhookGivenUp(ctx context.Context, d WebhookDelivery) error {
	if w.Messages == nil || d.Deleted != nil {
		return nil
	}
	m, err := store.NewWebhookMessage(d.MessageID, d.Event, d.Job)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeWebhookFailed, err)
	}
	return w.Messages.WebhookGivenUp(ctx, m, time.Now())
}

// deliveryOutcome names how a delivery attempt ended, for metrics.
func deliveryOutcome(result error) string {
	var appErr *temporal.ApplicationError
	switch {
	case result == nil:
		return "delivered"
	case errors.As(result, &appErr) && appErr.Type() == ErrTypeWebhookGone:
		return "gone"
	case errors.As(result, &appErr) && appErr.Type() == ErrTypeWebhookForbidden:
		return "refused"
	}
	return "failed"
}

// DefaultLinkTTL is how long a download_url stays valid by default.
const DefaultLinkTTL = time.Hour

// linkResultFile sets the download_url of a completed job's result that
// has a result file, minted now so the link is fresh when it goes out.
func (w *Webhooks) linkResultFile(ctx context.Context, job jobs.Snapshot) (jobs.Snapshot, error) {
	if w.Files == nil || job.ResultFile == "" || job.Status != jobs.StatusCompleted || len(job.Result) == 0 {
		return job, nil
	}
	ttl := w.LinkTTL
	if ttl <= 0 {
		ttl = DefaultLinkTTL
	}
	link, err := w.Files.SignedURL(ctx, job.ResultFile, ttl)
	if err != nil {
		return job, err
	}
	job.Result, err = jobs.WithDownloadURL(job.Result, link)
	return job, err
}
