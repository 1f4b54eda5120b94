package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// Budget notification states.
const (
	NotificationPending   = "pending"
	NotificationDelivered = "delivered"
	// NotificationFailed: given up, or nowhere to send it (no
	// notification URL).
	NotificationFailed = "failed"
)

// BudgetNotification is a budget.threshold event kept until it is
// delivered to its tenant's notification URL (docs/api.md, Budgets).
type BudgetNotification struct {
	// ID is the event's webhook-id, the same on every attempt.
	ID          string
	Tenant      string
	Budget      Budget
	PeriodStart time.Time
	Threshold   int
	// Spent is what the budget had used when the threshold was crossed,
	// in 1e-9 of its currency or unit.
	Spent         int64
	Attempts      int
	NextAttemptAt time.Time
	CreatedAt     time.Time
}

// budgetNotification is BudgetNotification's row.
type budgetNotification struct {
	ID            string `gorm:"primaryKey"`
	Tenant        string
	Budget        string
	PeriodStart   time.Time
	Threshold     int
	Spent         int64
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

func (budgetNotification) TableName() string { return "budget_notifications" }

// queueNotifications keeps the crossings' events for delivery, in the
// transaction that crossed them.
func queueNotifications(tx *gorm.DB, crossed []BudgetCrossing, now time.Time) error {
	for _, c := range crossed {
		budget, err := json.Marshal(c.Budget)
		if err != nil {
			return err
		}
		row := budgetNotification{ID: "msg_" + uuid.NewString(), Tenant: c.Tenant, Budget: string(budget),
			PeriodStart: c.PeriodStart, Threshold: c.Threshold, Spent: c.Spent, State: NotificationPending,
			NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
	}
	return nil
}

// DueBudgetNotifications lists up to limit pending notifications due at
// now, oldest first.
func (s *Store) DueBudgetNotifications(ctx context.Context, now time.Time, limit int) ([]BudgetNotification, error) {
	var rows []budgetNotification
	err := s.db.WithContext(ctx).Where("state = ? AND next_attempt_at <= ?", NotificationPending, now.UTC()).
		Order("created_at").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, err
	}
	out := make([]BudgetNotification, 0, len(rows))
	for _, r := range rows {
		n := BudgetNotification{ID: r.ID, Tenant: r.Tenant, PeriodStart: r.PeriodStart.UTC(), Threshold: r.Threshold,
			Spent: r.Spent, Attempts: r.Attempts, NextAttemptAt: r.NextAttemptAt.UTC(), CreatedAt: r.CreatedAt.UTC()}
		if err := json.Unmarshal([]byte(r.Budget), &n.Budget); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// The retry schedule of the events the store queues (budget.threshold,
// batch.completed; docs/api.md, Budgets): the wait after a first failed
// attempt doubles from notifyFirstRetry up to notifyMaxRetry, and an
// event is given up NotificationGiveUpAfter after it was queued.
const (
	notifyFirstRetry        = 10 * time.Second
	notifyMaxRetry          = time.Hour
	NotificationGiveUpAfter = 24 * time.Hour
)

// RetryNotification is what follows a failed attempt at a queued event
// created at created and tried attempts times before: the next attempt,
// or none once it is due after NotificationGiveUpAfter.
func RetryNotification(attempts int, created, now time.Time, err error) NotificationAttempt {
	wait := min(notifyFirstRetry<<min(attempts, 10), notifyMaxRetry)
	next := now.Add(wait)
	if next.After(created.Add(NotificationGiveUpAfter)) {
		return NotificationAttempt{State: NotificationFailed, Error: err.Error()}
	}
	return NotificationAttempt{State: NotificationPending, Next: next, Error: err.Error()}
}

// NotificationAttempt is the outcome of one delivery attempt.
type NotificationAttempt struct {
	// State is NotificationDelivered, NotificationFailed, or
	// NotificationPending with the next attempt at Next.
	State string
	Next  time.Time
	Error string
}

// RecordBudgetNotification records an attempt to deliver notification id.
func (s *Store) RecordBudgetNotification(ctx context.Context, id string, a NotificationAttempt) error {
	updates := map[string]any{"state": a.State, "attempts": gorm.Expr("attempts + 1"), "last_error": a.Error,
		"updated_at": microsNow()}
	if a.State == NotificationPending {
		updates["next_attempt_at"] = a.Next.UTC()
	}
	return s.db.WithContext(ctx).Model(&budgetNotification{}).Where("id = ?", id).Updates(updates).Error
}

// BudgetNotificationState reads notification id's state and attempts.
func (s *Store) BudgetNotificationState(ctx context.Context, id string) (state string, attempts int, err error) {
	var r budgetNotification
	err = s.db.WithContext(ctx).Where("id = ?", id).Take(&r).Error
	return r.State, r.Attempts, err
}

// DeleteBudgetNotificationsBefore deletes notifications no longer pending
// that were created before t.
func (s *Store) DeleteBudgetNotificationsBefore(ctx context.Context, t time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Where("state <> ? AND created_at < ?", NotificationPending, t.UTC()).
		Delete(&budgetNotification{})
	return res.RowsAffected, res.Error
}
