package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/app/budgets"
	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/housekeeping"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestHousekeeperSweepsWhatThisWorkerHas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.SQLite(t)
	names := func(r *housekeeping.Runner) (shared, local []string) {
		for _, s := range r.Sweeps {
			if s.Shared {
				shared = append(shared, s.Name)
			} else {
				local = append(local, s.Name)
			}
		}
		return shared, local
	}
	shared, local := names(housekeeper(&activities.Sweeps{}, st, store.RetentionDefaults{}, nil, nil, nil, slog.Default()))
	require.Equal(t, []string{"rate_counters", "routing_decisions", "idempotency_keys", "budget_notifications_kept", "token_counters", "job_deltas", "audit_events", "console_sessions"}, shared, "no blob store, no vendor callbacks, no notifier")
	require.Equal(t, []string{"scratch"}, local)

	files, err := blobstore.Open(ctx, blobstore.Config{Dir: t.TempDir(), SigningKey: make([]byte, 32), BaseURL: "http://files.test"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = files.Close() })
	acts := &activities.Sweeps{Files: activities.Blobs{Store: files, ScratchDir: t.TempDir()}, Callbacks: st.Jobs}
	reconcile := newReconciler(st, mocks.NewClient(t), nil, nil, slog.Default())
	shared, _ = names(housekeeper(acts, st, store.RetentionDefaults{}, &budgets.Notifier{Store: st.Usage, Tenants: st.Routing}, reconcile, nil, slog.Default()))
	require.Equal(t, []string{"work_files", "provider_callbacks", "rate_counters", "routing_decisions", "idempotency_keys", "budget_notifications_kept", "token_counters", "job_deltas", "audit_events", "console_sessions", "budget_notifications", "batches", "job_reconcile"}, shared, "job_reconcile last: it calls Temporal")

	m := metrics.New()
	housekeeper(acts, st, store.RetentionDefaults{}, &budgets.Notifier{Store: st.Usage, Tenants: st.Routing}, reconcile, m, slog.Default()).RunDue(ctx, time.Now())
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	for _, sweep := range []string{"work_files", "provider_callbacks", "rate_counters", "routing_decisions", "idempotency_keys", "budget_notifications_kept", "token_counters", "job_deltas", "audit_events", "console_sessions", "job_reconcile", "budget_notifications", "batches", "scratch"} {
		require.Contains(t, string(body), `gateway_housekeeping_runs_total{outcome="ok",sweep="`+sweep+`"} 1`)
	}
}
