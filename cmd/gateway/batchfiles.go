package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ai-job-gateway/gateway/app/batches"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/internal/netguard"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// batchFileTimeout bounds the fetch of a batch's input file.
const batchFileTimeout = 5 * time.Minute

// batchFileReader is the workers' reader of file batches (docs/api.md,
// Batches): each item checked as an inline item is, its jobs recorded
// with their starts in the outbox, which the dispatchers' sweeps take.
func batchFileReader(ctx context.Context, cfg config, st *store.Cache, tc client.Client, registry *providers.Registry, scratch string, m *metrics.Metrics, logger *slog.Logger) (*batches.FileReader, error) {
	ops, err := jobops.New(jobops.Config{
		Jobs:                   st.Store.Jobs,
		Tenants:                st,
		Statuses:               st,
		Policies:               st,
		Rates:                  st,
		Batches:                st.Store.Batches,
		Catalog:                registry.Catalog(),
		Temporal:               tc,
		Starts:                 outboxStarts{},
		CheckURLs:              !cfg.AllowPrivateNetworks,
		TenantCreatesPerMinute: cfg.TenantCreateRate,
		Backlog:                startBacklogGuard(ctx, cfg, st.Store, logger),
		WebhookGiveUpAfter:     cfg.WebhookGiveUpAfter,
		DataConverter:          cfg.temporal.DataConverter,
		Budgets:                budgetReserver(st.Store, registry, m, logger),
		Logger:                 logger,
	})
	if err != nil {
		return nil, err
	}
	return &batches.FileReader{Ops: ops, Store: st.Store.Batches, Client: netguard.NewMediaClient(cfg.AllowPrivateNetworks, batchFileTimeout),
		ScratchDir: scratch, Logger: logger.With("component", "batch-files")}, nil
}

// outboxStarts leaves the starts of a file batch's jobs in the outbox,
// due at once, for the dispatchers to take.
type outboxStarts struct{}

func (outboxStarts) Lease(string) time.Time              { return time.Now() }
func (outboxStarts) Offer(store.JobStart, time.Duration) {}
func (outboxStarts) Shed(time.Duration)                  {}
func (outboxStarts) StartNow(context.Context, string) error {
	return errors.New("a batch file's reader starts no job itself")
}
