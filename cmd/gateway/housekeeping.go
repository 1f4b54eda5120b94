package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/app/batches"
	"github.com/ai-job-gateway/gateway/app/budgets"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/housekeeping"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/store"
)

// Housekeeping rounds (docs/operations.md, Housekeeping).
const (
	// filesEvery is how often crashed media steps' files and vendors'
	// posts are swept; result files go with their job's retention, swept
	// by the retention schedule (retention.go).
	filesEvery = time.Hour
	// routingStateEvery is how often expired rate counters and routing
	// decisions are deleted: they pile up with the traffic, and a minute's
	// worth keeps each delete short.
	routingStateEvery = time.Minute
	// budgetNotificationsEvery is how often due budget.threshold events
	// are sent: an event waits at most about this long.
	budgetNotificationsEvery = 5 * time.Second
	// budgetNotificationsKept is how long a sent or given-up event is kept.
	budgetNotificationsKept = 30 * 24 * time.Hour
	// jobDeltasKept is how long a piece of a streamed answer is kept.
	jobDeltasKept = time.Hour
)

// housekeeper is a worker's housekeeping: the sweeps of the blob store and
// the database once a round in the deployment (st decides which worker),
// the sweep of its scratch directory in every worker. A sweep with
// nothing to sweep here is left out, so that it never takes a round from
// a worker that has. rec, if set, reconciles open jobs with their
// workflows; retention is the deployment's, which audit events follow.
func housekeeper(acts *activities.Sweeps, st *store.Store, retention store.RetentionDefaults, notifier *budgets.Notifier, rec *reconciler, m *metrics.Metrics, logger *slog.Logger) *housekeeping.Runner {
	var sweeps []housekeeping.Sweep
	if acts.Files.Store != nil {
		sweeps = append(sweeps, housekeeping.Sweep{Name: "work_files", Every: filesEvery, Shared: true, Run: acts.SweepWorkFiles})
	}
	if acts.Callbacks != nil {
		sweeps = append(sweeps, housekeeping.Sweep{Name: "provider_callbacks", Every: filesEvery, Shared: true, Run: acts.SweepProviderCallbacks})
	}
	sweeps = append(sweeps,
		housekeeping.Sweep{Name: "rate_counters", Every: routingStateEvery, Shared: true, Run: rows(st.Routing.DeleteExpiredRateCounters)},
		housekeeping.Sweep{Name: "routing_decisions", Every: routingStateEvery, Shared: true, Run: rows(st.Routing.DeleteExpiredRoutingDecisions)},
		housekeeping.Sweep{Name: "idempotency_keys", Every: routingStateEvery, Shared: true,
			Run: rows(func(ctx context.Context, now time.Time) (int64, error) {
				return st.Jobs.DeleteIdempotencyKeysBefore(ctx, now.Add(-jobops.IdempotencyTTL))
			})},
		housekeeping.Sweep{Name: "budget_notifications_kept", Every: filesEvery, Shared: true,
			Run: rows(func(ctx context.Context, now time.Time) (int64, error) {
				return st.Usage.DeleteBudgetNotificationsBefore(ctx, now.Add(-budgetNotificationsKept))
			})},
		housekeeping.Sweep{Name: "token_counters", Every: routingStateEvery, Shared: true,
			Run: rows(func(ctx context.Context, now time.Time) (int64, error) {
				// The minutes of API keys' tokens_per_minute, once
				// their jobs have settled (docs/api.md, API keys).
				return st.Usage.DeleteMinuteBudgetCountersBefore(ctx, budgets.TokensBudgetPrefix, now.Add(-time.Hour))
			})},
		housekeeping.Sweep{Name: "job_deltas", Every: routingStateEvery, Shared: true,
			Run: rows(func(ctx context.Context, now time.Time) (int64, error) {
				// Pieces of streamed answers, for clients following
				// the job live (docs/api.md, Streamed answers).
				return st.Jobs.DeleteJobDeltasBefore(ctx, now.Add(-jobDeltasKept))
			})},
		housekeeping.Sweep{Name: "audit_events", Every: filesEvery, Shared: true,
			Run: rows(func(ctx context.Context, now time.Time) (int64, error) {
				return st.Audit.DeleteExpiredAuditEvents(ctx, retention, now)
			})},
		// Console sessions past their 12 hours (docs/console.md, Sessions).
		housekeeping.Sweep{Name: "console_sessions", Every: filesEvery, Shared: true, Run: rows(st.APIKeys.DeleteExpiredConsoleSessions)},
		housekeeping.Sweep{Name: "scratch", Every: filesEvery, Run: acts.SweepScratch},
	)
	if notifier != nil {
		sweeps = append(sweeps, housekeeping.Sweep{Name: "budget_notifications", Every: budgetNotificationsEvery, Shared: true, Run: notifier.Deliver})
		// Batches that finished, and their batch.completed events, sent
		// by the same sender, on the same schedule, as budget.threshold
		// events (docs/webhooks.md).
		batchNotifier := &batches.Notifier{Store: st.Batches, Signer: notifier.Signer, Client: notifier.Client,
			GiveUpAfter: notifier.GiveUpAfter, Metrics: notifier.Metrics, Logger: logger}
		sweeps = append(sweeps, housekeeping.Sweep{Name: "batches", Every: budgetNotificationsEvery, Shared: true, Run: batchNotifier.Deliver})
	}
	if rec != nil {
		// Jobs left open while their workflow ended (docs/operations.md,
		// Housekeeping); "removed" counts the jobs it failed. Last: its
		// round, which calls Temporal, delays the sweeps after it.
		sweeps = append(sweeps, housekeeping.Sweep{Name: "job_reconcile", Every: reconcileEvery, Shared: true, Run: rec.sweep})
	}
	return &housekeeping.Runner{Sweeps: sweeps, Coordinator: st.Housekeeping, Metrics: m, Logger: logger}
}

// rows is a sweep of a store's delete that counts rows.
func rows(del func(context.Context, time.Time) (int64, error)) func(context.Context, time.Time) (int, error) {
	return func(ctx context.Context, now time.Time) (int, error) {
		n, err := del(ctx, now)
		return int(n), err
	}
}
