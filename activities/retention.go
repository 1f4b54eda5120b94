package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/store"
)

// Retention expires what tenants' retention no longer keeps (docs/api.md,
// Retention): the RetentionWorkflow runs its activities, one batch each.
type Retention struct {
	Store RetentionStore
	// Deleter deletes expired jobs as DELETE does; nil deletes none.
	Deleter Deleter
	// Files holds the jobs' result and media stage files; nil: none.
	Files *blobstore.Store
	// Defaults are the deployment's retention.
	Defaults store.RetentionDefaults
	Metrics  *metrics.Metrics
}

// RetentionStore is what the sweep reads and writes of jobs (*store.Store).
type RetentionStore interface {
	RetentionCutoffs(ctx context.Context, d store.RetentionDefaults, now time.Time) ([]store.RetentionCutoff, error)
	ExpiredResults(ctx context.Context, tenant string, before time.Time, limit int) ([]jobs.Record, error)
	ExpiredJobs(ctx context.Context, tenant string, before time.Time, limit int) ([]jobs.Record, error)
	ExpireResult(ctx context.Context, id string, revision int, at time.Time) (bool, error)
	UnerasedTombstones(ctx context.Context, before time.Time, limit int) ([]jobs.Tombstone, error)
	GetJob(ctx context.Context, id string) (*jobs.Record, error)
}

// Deleter deletes jobs (*jobops.Service).
type Deleter interface {
	Delete(ctx context.Context, job *jobs.Record, by string) (*jobs.Tombstone, error)
	StartErasure(ctx context.Context, tomb *jobs.Tombstone, pending bool) error
}

// RetentionBatch is one activity call of a sweep: at most Limit jobs (or
// tombstones) due at Now.
type RetentionBatch struct {
	Now   time.Time `json:"now"`
	Limit int       `json:"limit"`
}

// RetentionBatchResult is what a batch found (Selected: a batch that found
// Limit has more to do) and how many of them it expired.
type RetentionBatchResult struct {
	Selected int `json:"selected"`
	Expired  int `json:"expired"`
}

// ErasureRestartAge is how long a deleted job's erasure may run before the
// sweep starts it again: Delete starts it at once, and it takes seconds.
const ErasureRestartAge = 10 * time.Minute

// ExpireResults erases the results and files of up to b.Limit finished
// jobs past their tenant's results retention: the files first, then the
// store's result, so that a failure leaves the job to the next batch.
func (r *Retention) ExpireResults(ctx context.Context, b RetentionBatch) (RetentionBatchResult, error) {
	var out RetentionBatchResult
	err := r.eachDue(ctx, b, func(c store.RetentionCutoff) time.Time { return c.Results }, r.Store.ExpiredResults,
		func(ctx context.Context, job *jobs.Record) (bool, error) {
			if err := r.deleteFiles(ctx, job.ID); err != nil {
				return false, err
			}
			return r.Store.ExpireResult(ctx, job.ID, job.Revision, time.Now())
		}, &out)
	r.Metrics.RetentionExpired("results", out.Expired)
	return out, err
}

// ExpireJobs deletes up to b.Limit finished jobs past their tenant's jobs
// retention, as DELETE does, by jobs.DeletedByRetention.
func (r *Retention) ExpireJobs(ctx context.Context, b RetentionBatch) (RetentionBatchResult, error) {
	var out RetentionBatchResult
	if r.Deleter == nil {
		return out, nil
	}
	err := r.eachDue(ctx, b, func(c store.RetentionCutoff) time.Time { return c.Jobs }, r.Store.ExpiredJobs,
		func(ctx context.Context, job *jobs.Record) (bool, error) {
			_, err := r.Deleter.Delete(ctx, job, jobs.DeletedByRetention)
			if err == nil {
				return true, nil
			}
			if errors.Is(err, store.ErrConflict) {
				return false, nil // retried meanwhile: no longer expired
			}
			if _, getErr := r.Store.GetJob(ctx, job.ID); errors.Is(getErr, store.ErrNotFound) {
				return false, nil // deleted meanwhile
			}
			return false, err
		}, &out)
	r.Metrics.RetentionExpired("jobs", out.Expired)
	return out, err
}

// RestartErasures starts again up to b.Limit erasures of deleted jobs
// that did not finish within ErasureRestartAge (docs/api.md, Deleting a
// job).
func (r *Retention) RestartErasures(ctx context.Context, b RetentionBatch) (RetentionBatchResult, error) {
	var out RetentionBatchResult
	if r.Store == nil || r.Deleter == nil {
		return out, nil
	}
	tombs, err := r.Store.UnerasedTombstones(ctx, b.Now.Add(-ErasureRestartAge), b.Limit)
	if err != nil {
		return out, err
	}
	out.Selected = len(tombs)
	for i := range tombs {
		beatIfActivity(ctx)
		if err = r.Deleter.StartErasure(ctx, &tombs[i], false); err != nil {
			break
		}
		out.Expired++
	}
	r.Metrics.RetentionExpired("erasures", out.Expired)
	return out, err
}

// RecordRetentionSweep counts a sweep that ended with outcome (ok,
// failed).
func (r *Retention) RecordRetentionSweep(_ context.Context, outcome string) error {
	r.Metrics.RetentionSweep(outcome)
	return nil
}

// eachDue runs expire on the jobs due by each tenant's cutoff (the time
// due picks of it; zero: none) until b.Limit are selected.
func (r *Retention) eachDue(ctx context.Context, b RetentionBatch, due func(store.RetentionCutoff) time.Time,
	find func(ctx context.Context, tenant string, before time.Time, limit int) ([]jobs.Record, error),
	expire func(ctx context.Context, job *jobs.Record) (bool, error), out *RetentionBatchResult) error {
	if r.Store == nil {
		return nil
	}
	cutoffs, err := r.Store.RetentionCutoffs(ctx, r.Defaults, b.Now)
	if err != nil {
		return err
	}
	for _, c := range cutoffs {
		before := due(c)
		if before.IsZero() {
			continue
		}
		if out.Selected >= b.Limit {
			return nil
		}
		batch, err := find(ctx, c.Tenant, before, b.Limit-out.Selected)
		if err != nil {
			return err
		}
		out.Selected += len(batch)
		for i := range batch {
			beatIfActivity(ctx)
			done, err := expire(ctx, &batch[i])
			if err != nil {
				return err
			}
			if done {
				out.Expired++
			}
		}
	}
	return nil
}

// deleteFiles removes a job's result and media stage files.
func (r *Retention) deleteFiles(ctx context.Context, jobID string) error {
	if r.Files == nil {
		return nil
	}
	// Only the result files: the media stage's files go when their job
	// ends, and a retry that started meanwhile may be using them.
	_, err := r.Files.DeletePrefix(ctx, ResultPrefix(jobID))
	return err
}

// beatIfActivity records a heartbeat when ctx is an activity's.
func beatIfActivity(ctx context.Context) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx)
	}
}
