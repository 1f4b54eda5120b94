package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ai-job-gateway/gateway/internal/webhooksign"
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
func (s *UsageStore) DueBudgetNotifications(ctx context.Context, now time.Time, limit int) ([]BudgetNotification, error) {
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

// BudgetThresholdEvent is the event of a budget notification.
const BudgetThresholdEvent = "budget.threshold"

// NotificationState is the state attempt a leaves its event in:
// NotificationDelivered, NotificationFailed (given up) or
// NotificationPending (tried again at a.Next).
func NotificationState(a webhooksign.Attempt) string {
	switch {
	case a.Outcome == webhooksign.Delivered:
		return NotificationDelivered
	case a.GivenUp():
		return NotificationFailed
	}
	return NotificationPending
}

// RecordBudgetNotification records attempt a at notification n: what
// state it leaves n in, and a's row in the budget's delivery log
// (BudgetDeliveries), in one transaction.
func (s *UsageStore) RecordBudgetNotification(ctx context.Context, n BudgetNotification, a webhooksign.Attempt) error {
	state := NotificationState(a)
	updates := map[string]any{"state": state, "attempts": gorm.Expr("attempts + 1"), "updated_at": microsNow()}
	if state == NotificationPending {
		updates["next_attempt_at"] = a.Next.UTC()
	}
	return s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&budgetNotification{}).Where("id = ? AND state = ?", n.ID, NotificationPending).Updates(updates)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		return recordSweepAttempt(tx, BudgetDeliveries(n.Tenant, n.Budget.ID), BudgetThresholdEvent, a)
	})
}

// DeleteBudgetNotificationsBefore deletes notifications no longer pending
// that were created before t, with their attempts in their budgets'
// delivery logs.
func (s *UsageStore) DeleteBudgetNotificationsBefore(ctx context.Context, t time.Time) (int64, error) {
	var deleted int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		var rows []budgetNotification
		err := tx.Select("id", "tenant", "budget").Where("state <> ? AND created_at < ?", NotificationPending, t.UTC()).
			Find(&rows).Error
		if err != nil || len(rows) == 0 {
			return err
		}
		ids := make([]string, len(rows))
		logs := map[string]bool{}
		for i, r := range rows {
			var b Budget
			if err := json.Unmarshal([]byte(r.Budget), &b); err != nil {
				return err
			}
			ids[i], logs[BudgetDeliveries(r.Tenant, b.ID).ID] = r.ID, true
		}
		for log := range logs {
			// By the log first: the index on job_id finds its rows.
			err := tx.Where("job_id = ? AND subject_kind = ? AND message_id IN ?", log, SubjectBudget, ids).
				Delete(&WebhookDelivery{}).Error
			if err != nil {
				return err
			}
		}
		res := tx.Where("id IN ?", ids).Delete(&budgetNotification{})
		deleted = res.RowsAffected
		return res.Error
	})
	return deleted, err
}
