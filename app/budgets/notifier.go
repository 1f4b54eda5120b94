package budgets

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store"
)

// notifyBatch is how many budget.threshold events one round sends at most
// (docs/api.md, Budgets).
const notifyBatch = 100

// NotifierStore is what a Notifier needs of the store.
type NotifierStore interface {
	DueBudgetNotifications(ctx context.Context, now time.Time, limit int) ([]store.BudgetNotification, error)
	RecordBudgetNotification(ctx context.Context, n store.BudgetNotification, a webhooksign.Attempt) error
}

// TenantReader reads the tenant an event goes to (its webhook).
type TenantReader interface {
	GetTenant(ctx context.Context, id string) (*store.Tenant, error)
}

// Notifier delivers the budget.threshold events the store queued, signed
// and posted as job webhooks are (webhooksign.Send), with the same
// webhook-id on every attempt, retried on the schedule of job webhooks,
// each attempt recorded in the budget's delivery log (docs/webhooks.md).
type Notifier struct {
	Store   NotifierStore
	Tenants TenantReader
	// Signer signs the events; without one they wait, as after a failed
	// attempt.
	Signer *webhooksign.Signer
	// Client sends them (default: public addresses only).
	Client *http.Client
	// GiveUpAfter is the retry window (0: webhooksign.RetryWindow), from
	// when the event was queued: the --webhook-give-up-after of jobs.
	GiveUpAfter time.Duration
	Metrics     *metrics.Metrics
	Logger      *slog.Logger
}

// Deliver makes one attempt at every event due at now and returns how
// many were delivered.
func (n *Notifier) Deliver(ctx context.Context, now time.Time) (int, error) {
	due, err := n.Store.DueBudgetNotifications(ctx, now, notifyBatch)
	if err != nil {
		return 0, err
	}
	delivered := 0
	for _, event := range due {
		attempt := n.attempt(ctx, event, now)
		if err := n.Store.RecordBudgetNotification(ctx, event, attempt); err != nil {
			return delivered, err
		}
		n.Metrics.BudgetNotification(store.NotificationState(attempt))
		if attempt.Sent {
			n.Metrics.WebhookDelivery(string(attempt.Outcome), attempt.Duration)
		}
		switch {
		case attempt.Outcome == webhooksign.Delivered:
			delivered++
		case attempt.GivenUp():
			n.logger().Warn("budget.threshold event given up", "tenant", event.Tenant, "budget", event.Budget.ID,
				"threshold", event.Threshold, "attempts", attempt.Number, "error", attempt.LogError())
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

// attempt sends event once, as its next attempt.
func (n *Notifier) attempt(ctx context.Context, event store.BudgetNotification, now time.Time) webhooksign.Attempt {
	number := event.Attempts + 1
	giveUpAt := event.CreatedAt.Add(webhooksign.Window(n.GiveUpAfter))
	notSent := func(err error, retry bool) webhooksign.Attempt {
		return webhooksign.NotSent(event.ID, number, now, giveUpAt, err, retry)
	}
	tenant, err := n.Tenants.GetTenant(ctx, event.Tenant)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notSent(errors.New("the tenant no longer exists"), false)
	case err != nil:
		return notSent(err, true)
	case tenant.NotificationURL == "":
		return notSent(errors.New("the tenant has no notification_url"), false)
	}
	body, err := json.Marshal(eventOf(event))
	if err != nil {
		return notSent(err, false)
	}
	return webhooksign.Send(ctx, n.Client, n.Signer, webhooksign.Message{URL: tenant.NotificationURL, ID: event.ID, Body: body}, number, now, giveUpAt)
}

// eventOf is the body of a queued event.
func eventOf(n store.BudgetNotification) Event {
	b := n.Budget
	return Event{Event: store.BudgetThresholdEvent, Data: EventData{
		Tenant: n.Tenant, Budget: b.ID, Application: b.Application, APIKey: b.APIKey, PeriodStart: n.PeriodStart,
		Threshold: n.Threshold, Spent: json.Number(decimal(n.Spent)), Limit: json.Number(decimal(b.Limit)),
		Currency: b.Currency, Unit: b.Unit, Period: b.Period,
	}}
}
