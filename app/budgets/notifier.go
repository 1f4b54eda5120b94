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
	RecordBudgetNotification(ctx context.Context, id string, a store.NotificationAttempt) error
	GetTenant(ctx context.Context, id string) (*store.Tenant, error)
}

// Notifier delivers the budget.threshold events the store queued, signed
// like job webhooks, with the same webhook-id on every attempt.
type Notifier struct {
	Store NotifierStore
	// Signer signs the events; nil gives every event up.
	Signer *webhooksign.Signer
	// Client sends them (default: public addresses only).
	Client  *http.Client
	Metrics *metrics.Metrics
	Logger  *slog.Logger
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
		if err := n.Store.RecordBudgetNotification(ctx, event.ID, attempt); err != nil {
			return delivered, err
		}
		n.Metrics.BudgetNotification(attempt.State)
		switch attempt.State {
		case store.NotificationDelivered:
			delivered++
		case store.NotificationFailed:
			n.logger().Warn("budget.threshold event given up", "tenant", event.Tenant, "budget", event.Budget.ID,
				"threshold", event.Threshold, "attempts", event.Attempts+1, "error", attempt.Error)
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

// attempt sends event once and says what comes next.
func (n *Notifier) attempt(ctx context.Context, event store.BudgetNotification, now time.Time) store.NotificationAttempt {
	tenant, err := n.Store.GetTenant(ctx, event.Tenant)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.NotificationAttempt{State: store.NotificationFailed, Error: "the tenant no longer exists"}
	case err != nil:
		return n.retry(event, now, err)
	case tenant.NotificationURL == "":
		return store.NotificationAttempt{State: store.NotificationFailed, Error: "the tenant has no notification_url"}
	case n.Signer == nil:
		return store.NotificationAttempt{State: store.NotificationFailed, Error: "no webhook signing secret is configured"}
	}
	body, err := json.Marshal(eventOf(event))
	if err != nil {
		return store.NotificationAttempt{State: store.NotificationFailed, Error: err.Error()}
	}
	answer := webhooksign.Post(ctx, n.Client, n.Signer, webhooksign.Message{URL: tenant.NotificationURL, ID: event.ID, Body: body}, now)
	switch answer.Outcome {
	case webhooksign.Delivered:
		return store.NotificationAttempt{State: store.NotificationDelivered}
	case webhooksign.Refused:
		return store.NotificationAttempt{State: store.NotificationFailed, Error: "the notification URL is not a public address"}
	case webhooksign.Gone:
		return store.NotificationAttempt{State: store.NotificationFailed, Error: answer.Err.Error()}
	}
	return n.retry(event, now, answer.Err)
}

// retry schedules the next attempt, or gives the event up.
func (n *Notifier) retry(event store.BudgetNotification, now time.Time, err error) store.NotificationAttempt {
	return store.RetryNotification(event.Attempts, event.CreatedAt, now, err)
}

// eventOf is the body of a queued event.
func eventOf(n store.BudgetNotification) Event {
	b := n.Budget
	return Event{Event: "budget.threshold", Data: EventData{
		Tenant: n.Tenant, Budget: b.ID, Application: b.Application, PeriodStart: n.PeriodStart,
		Threshold: n.Threshold, Spent: json.Number(decimal(n.Spent)), Limit: json.Number(decimal(b.Limit)),
		Currency: b.Currency, Unit: b.Unit, Period: b.Period,
	}}
}
