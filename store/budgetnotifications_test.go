package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store"
)

func TestBudgetNotificationAttemptsGoToTheBudgetsDeliveryLog(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		// Longer than a job id: the log's id column holds <tenant>/<budget>.
		tenant := "a-tenant-with-a-long-slug-" + uuid.NewString()
		budget := store.Budget{ID: "month-usd-of-the-web-application", Period: store.PeriodMonth, Currency: "USD", Limit: 1e9, Thresholds: []int{50, 100}}
		now := time.Now().UTC().Truncate(time.Millisecond)
		out, err := s.Usage.ReserveBudget(ctx, uuid.NewString(), tenant, []store.BudgetCharge{{Budget: budget, Amount: 1e9}}, now)
		require.NoError(t, err)
		require.Len(t, out.Crossed, 2)
		due, err := s.Usage.DueBudgetNotifications(ctx, now, 10)
		require.NoError(t, err)
		var mine []store.BudgetNotification
		for _, n := range due {
			if n.Tenant == tenant {
				mine = append(mine, n)
			}
		}
		require.Len(t, mine, 2)

		failed := webhooksign.Attempt{MessageID: mine[0].ID, Number: 1, At: now, Sent: true, Duration: 3 * time.Millisecond,
			Answer: webhooksign.Answer{Outcome: webhooksign.Failed, Status: 503, Err: errors.New("receiver answered 503 Service Unavailable")},
			Next:   now.Add(time.Second)}
		require.NoError(t, s.Usage.RecordBudgetNotification(ctx, mine[0], failed))
		state, attempts, err := s.Usage.BudgetNotificationState(ctx, mine[0].ID)
		require.NoError(t, err)
		require.Equal(t, store.NotificationPending, state)
		require.Equal(t, 1, attempts)
		given := webhooksign.NotSent(mine[1].ID, 1, now, now, errors.New("the tenant has no notification_url"), false)
		require.NoError(t, s.Usage.RecordBudgetNotification(ctx, mine[1], given))
		state, _, err = s.Usage.BudgetNotificationState(ctx, mine[1].ID)
		require.NoError(t, err)
		require.Equal(t, store.NotificationFailed, state)

		log, err := s.Webhooks.WebhookDeliveries(ctx, store.BudgetDeliveries(tenant, budget.ID))
		require.NoError(t, err)
		require.Len(t, log, 2)
		require.Equal(t, store.WebhookDelivery{ID: log[0].ID, Subject: store.SubjectBudget, JobID: tenant + "/" + budget.ID,
			Event: "budget.threshold", MessageID: mine[0].ID, Attempt: 1, AttemptedAt: log[0].AttemptedAt, StatusCode: 503,
			Error: "receiver answered 503 Service Unavailable", DurationMS: 3}, log[0])
		require.True(t, log[0].AttemptedAt.Equal(now))
		require.Equal(t, "not sent: the tenant has no notification_url", log[1].Error)
		require.Zero(t, log[1].StatusCode)
		other, err := s.Webhooks.WebhookDeliveries(ctx, store.BudgetDeliveries(tenant, "another-budget"))
		require.NoError(t, err)
		require.Empty(t, other)

		// Kept as long as their notifications: the one given up goes with
		// its attempts; the pending one keeps its own.
		removed, err := s.Usage.DeleteBudgetNotificationsBefore(ctx, now.Add(time.Minute))
		require.NoError(t, err)
		require.GreaterOrEqual(t, removed, int64(1))
		_, _, err = s.Usage.BudgetNotificationState(ctx, mine[1].ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, _, err = s.Usage.BudgetNotificationState(ctx, mine[0].ID)
		require.NoError(t, err, "a pending notification stays")
		log, err = s.Webhooks.WebhookDeliveries(ctx, store.BudgetDeliveries(tenant, budget.ID))
		require.NoError(t, err)
		require.Len(t, log, 1)
		require.Equal(t, mine[0].ID, log[0].MessageID)
	})
}
