// Package batches shows batches of jobs (docs/api.md, Batches), parses
// their items and lists the refused ones, reads file batches' items in
// the workers (FileReader), and delivers their batch.completed events: a
// housekeeping sweep marks the batches whose jobs all finished, and sends
// the event of each that has a webhook, signed like job webhooks. It is
// of the application layer (app/), above store, and uses jobops to check
// and record items.
package batches

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store"
)

// Batch statuses (docs/api.md, Batches).
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusCancelling = "cancelling"
	StatusCancelled  = "cancelled"
	// A file batch is validating while its file is read, and failed when
	// the file refused it.
	StatusValidating = store.BatchValidating
	StatusFailed     = store.BatchFailed
)

// EventCompleted is the event sent once every job of a batch finished.
const EventCompleted = store.BatchCompletedEvent

// Document is a batch as responses and its event show it.
type Document struct {
	ID         string     `json:"id"`
	Type       string     `json:"type"`
	Attributes Attributes `json:"attributes"`
	Links      Links      `json:"links"`
}

// Attributes are a batch's attributes.
type Attributes struct {
	Tenant   string         `json:"tenant"`
	UserID   string         `json:"user_id"`
	Status   string         `json:"status"`
	Counts   map[string]int `json:"counts"`
	Services []string       `json:"services"`
	// Refused are the items refused at creation, as they were listed.
	Refused json.RawMessage `json:"refused"`
	// InputFileURL is a file batch's file.
	InputFileURL string `json:"input_file_url,omitempty"`
	// Error is why a file batch failed, or an item was refused.
	Error             *Error     `json:"error,omitempty"`
	Webhook           bool       `json:"webhook"`
	CreatedAt         time.Time  `json:"created_at"`
	CancelRequestedAt *time.Time `json:"cancel_requested_at"`
	CompletedAt       *time.Time `json:"completed_at"`
}

// Error is why a file batch failed, or an item was refused.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Links are where a batch's jobs, results and refused items are read.
type Links struct {
	Jobs    string `json:"jobs"`
	Results string `json:"results"`
	Errors  string `json:"errors"`
}

// Reader reads what a batch's document shows.
type Reader interface {
	BatchCounts(ctx context.Context, id string) (map[jobs.Status]int, error)
	LastBatchCompletion(ctx context.Context, id string) (*time.Time, error)
}

// Show renders batch b with its counts now.
func Show(ctx context.Context, r Reader, b *store.Batch) (Document, error) {
	byStatus, err := r.BatchCounts(ctx, b.ID)
	if err != nil {
		return Document{}, err
	}
	counts := map[string]int{"total": b.Total}
	unfinished := 0
	for _, s := range jobs.Statuses() {
		counts[string(s)] = byStatus[s]
		if !s.Terminal() {
			unfinished += byStatus[s]
		}
	}
	attrs := Attributes{Tenant: b.Tenant, UserID: b.UserID, Counts: counts, Services: strings.Fields(b.Services),
		Refused: json.RawMessage("[]"), Webhook: b.Webhook != "", CreatedAt: b.CreatedAt.UTC(),
		CancelRequestedAt: utc(b.CancelRequestedAt), CompletedAt: utc(b.CompletedAt)}
	if b.Refused != "" {
		attrs.Refused = json.RawMessage(b.Refused)
	}
	var refused []json.RawMessage
	if err := json.Unmarshal(attrs.Refused, &refused); err != nil {
		return Document{}, err
	}
	counts["refused"] = len(refused)
	if b.InputFileURL != "" {
		// Listed at links.errors only.
		attrs.InputFileURL, counts["refused"], counts["read"] = b.InputFileURL, b.RefusedCount, b.ItemsRead
		if b.ErrorCode != "" {
			attrs.Error = &Error{Code: b.ErrorCode, Message: b.ErrorMessage}
		}
	}
	switch {
	case b.State != "":
		attrs.Status = b.State
	case unfinished > 0 && b.CancelRequestedAt != nil:
		attrs.Status = StatusCancelling
	case unfinished > 0:
		attrs.Status = StatusInProgress
	case b.CancelRequestedAt != nil:
		attrs.Status = StatusCancelled
	default:
		attrs.Status = StatusCompleted
	}
	if unfinished == 0 && attrs.CompletedAt == nil && b.State != StatusValidating {
		// Finished before the sweep marked it: when its last job did.
		last, err := r.LastBatchCompletion(ctx, b.ID)
		if err != nil {
			return Document{}, err
		}
		attrs.CompletedAt = utc(last)
	}
	return Document{ID: b.ID, Type: "batch", Attributes: attrs, Links: Links{
		Jobs: "/v1/jobs?filter[batch]=" + b.ID, Results: "/v1/batches/" + b.ID + "/results",
		Errors: "/v1/batches/" + b.ID + "/errors"}}, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Event is the body of a batch.completed event.
type Event struct {
	Event string   `json:"event"`
	Data  Document `json:"data"`
}

// notifyBatch is how many events one round sends at most.
const notifyBatch = 100

// NotifierStore is what a Notifier needs of the store.
type NotifierStore interface {
	Reader
	FinishBatches(ctx context.Context, now time.Time) (int64, error)
	DueBatchWebhooks(ctx context.Context, now time.Time, limit int) ([]store.Batch, error)
	RecordBatchWebhook(ctx context.Context, id string, a webhooksign.Attempt) error
}

// Notifier marks finished batches and delivers their batch.completed
// events, signed and posted as job webhooks are (webhooksign.Send), with
// the same webhook-id on every attempt, retried on the schedule of job
// webhooks, each attempt recorded in the batch's delivery log
// (docs/webhooks.md).
type Notifier struct {
	Store NotifierStore
	// Signer signs the events; without one they wait, as after a failed
	// attempt.
	Signer *webhooksign.Signer
	// Client sends them (default: public addresses only).
	Client *http.Client
	// GiveUpAfter is the retry window (0: webhooksign.RetryWindow), from
	// when the batch completed: the --webhook-give-up-after of jobs.
	GiveUpAfter time.Duration
	Metrics     *metrics.Metrics
	Logger      *slog.Logger
}

// messageID is the webhook-id of batch id's batch.completed event.
func messageID(id string) string { return "msg_batch_" + id }

// Deliver marks the batches that finished by now and makes one attempt
// at every event due; it returns how many events were delivered.
func (n *Notifier) Deliver(ctx context.Context, now time.Time) (int, error) {
	if _, err := n.Store.FinishBatches(ctx, now); err != nil {
		return 0, err
	}
	due, err := n.Store.DueBatchWebhooks(ctx, now, notifyBatch)
	if err != nil {
		return 0, err
	}
	delivered := 0
	for i := range due {
		attempt := n.attempt(ctx, &due[i], now)
		if err := n.Store.RecordBatchWebhook(ctx, due[i].ID, attempt); err != nil {
			return delivered, err
		}
		if attempt.Sent {
			n.Metrics.WebhookDelivery(string(attempt.Outcome), attempt.Duration)
		}
		switch {
		case attempt.Outcome == webhooksign.Delivered:
			delivered++
		case attempt.GivenUp():
			n.logger().Warn("batch.completed event given up", "batch", due[i].ID, "tenant", due[i].Tenant,
				"attempts", attempt.Number, "error", attempt.LogError())
		}
	}
	return delivered, nil
}

func (n *Notifier) logger() *slog.Logger {
	if n.Logger == nil {
		return slog.Default()
	}
	return n.Logger
}

// attempt sends b's event once, as its next attempt.
func (n *Notifier) attempt(ctx context.Context, b *store.Batch, now time.Time) webhooksign.Attempt {
	number := b.WebhookAttempts + 1
	id := messageID(b.ID)
	giveUpAt := b.CompletedAt.Add(webhooksign.Window(n.GiveUpAfter))
	var hook jobs.Webhook
	if err := json.Unmarshal([]byte(b.Webhook), &hook); err != nil {
		return webhooksign.NotSent(id, number, now, giveUpAt, err, false)
	}
	doc, err := Show(ctx, n.Store, b)
	if err != nil {
		return webhooksign.NotSent(id, number, now, giveUpAt, err, true)
	}
	body, err := json.Marshal(Event{Event: EventCompleted, Data: doc})
	if err != nil {
		return webhooksign.NotSent(id, number, now, giveUpAt, err, false)
	}
	return webhooksign.Send(ctx, n.Client, n.Signer, webhooksign.Message{URL: hook.URL, ID: id, Headers: hook.Headers, Body: body}, number, now, giveUpAt)
}
