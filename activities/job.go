// Package activities holds the Temporal activities of the job workflow:
// projection writes, routing decisions, provider calls (synchronous, and
// submit then check for asynchronous providers), the media stage
// (docs/media.md), webhook deliveries (docs/webhooks.md), budget
// reservations, and the steps of the deletion, retention and batch-file
// workflows and of the sweeps housekeeping runs (docs/operations.md,
// Housekeeping).
//
// Activities are methods of a few receivers grouped by what they do, each
// holding only the dependencies it uses; New builds them all from Deps,
// and Set.Register registers them with a worker. Temporal names an
// activity after its method, so no two receivers export the same name.
package activities

import (
	"context"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// JobStore is what the projections need of the store.
type JobStore interface {
	SaveJob(ctx context.Context, job *jobs.Record) error
	// SaveJobUsage is SaveJob with the job's usage ledger entry, written
	// in the same transaction.
	SaveJobUsage(ctx context.Context, job *jobs.Record, entry *store.UsageEntry) error
	UpdateProgress(ctx context.Context, id string, progress int) error
}

// Projections write the job's projection in the store.
type Projections struct {
	Store JobStore
	// Metrics times the writes and counts finished jobs; nil records none.
	Metrics *metrics.Metrics
	// Providers prices completed jobs (docs/api.md, Usage and cost); nil
	// bills none.
	Providers *providers.Registry
	// Budgets gives back the reservations of budgeted jobs that end
	// unbilled (docs/api.md, Budgets); nil: none are reserved.
	Budgets BudgetReserver
}

// SaveJob writes a job snapshot into the store. It is idempotent, and a
// snapshot older than the stored one is ignored, so retries are safe. A
// completed job is billed in the same write: its usage, and its entry in
// the usage ledger.
func (p *Projections) SaveJob(ctx context.Context, snap jobs.Snapshot) error {
	row, err := snap.Record()
	if err != nil {
		return err
	}
	var (
		entry  *store.UsageEntry
		priced bool
	)
	if snap.Status == jobs.StatusCompleted && p.Providers != nil {
		if entry, priced, err = bill(p.Providers.Prices(), snap, row); err != nil {
			return err
		}
	}
	started := time.Now()
	if entry != nil {
		err = p.Store.SaveJobUsage(ctx, row, entry)
	} else {
		err = p.Store.SaveJob(ctx, row)
	}
	p.Metrics.StoreWrite("save_job", err, time.Since(started))
	if err != nil {
		return err
	}
	if entry != nil {
		p.recordUsage(ctx, entry, priced)
	}
	if snap.Status.Terminal() && entry == nil && snap.Budgeted {
		// Ended unbilled: its budget reservations are given back.
		if err := p.releaseBudget(ctx, snap.ID); err != nil {
			return err
		}
	}
	if snap.Status.Terminal() {
		code := ""
		if snap.Error != nil {
			code = snap.Error.Code
		}
		p.Metrics.JobFinished(string(snap.Service), snap.Provider, string(snap.Status), code)
	}
	return nil
}

// updateProgress projects a job's progress, measured as a store write.
func (p *Projections) updateProgress(ctx context.Context, jobID string, progress int) error {
	started := time.Now()
	err := p.Store.UpdateProgress(ctx, jobID, progress)
	p.Metrics.StoreWrite("update_progress", err, time.Since(started))
	return err
}
