package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"golang.org/x/time/rate"

	"github.com/ai-job-gateway/gateway/internal/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// jobOperations builds the job operations of the CLI: the store and
// Temporal of serve, and a dispatcher that starts pending jobs on demand.
func jobOperations(ctx context.Context, cfg config, logger *slog.Logger) (*jobops.Service, *store.Store, func(), error) {
	st, err := openJobStore(ctx, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	tc, err := dialTemporal(ctx, cfg, logger)
	if err != nil {
		_ = st.Close()
		return nil, nil, nil, err
	}
	registry, err := loadRegistry(cfg)
	if err == nil {
		var ops *jobops.Service
		ops, err = jobops.New(jobops.Config{
			Jobs: st, Tenants: st, Statuses: st, Policies: st, Rates: st,
			Catalog: registry.Catalog(), Temporal: tc, Logger: logger,
			Starts: jobops.NewDispatcher(jobops.DispatcherConfig{Store: st, Temporal: tc, Logger: logger}),
		})
		if err == nil {
			return ops, st, func() { tc.Close(); _ = st.Close() }, nil
		}
	}
	tc.Close()
	_ = st.Close()
	return nil, nil, nil, err
}

// retryJobs retries the jobs named, or the failed jobs the filter selects,
// at most f.rate a second, printing what happened to each. Run again, it
// resumes: jobs already retried are no longer failed.
func retryJobs(ctx context.Context, cfg config, f jobsFlags, ids []string, stdout io.Writer, logger *slog.Logger) error {
	if len(ids) > 0 && (f.filter != store.JobFilter{} || f.errorCode != "") {
		return errors.New("jobs retry takes job ids or filters, not both")
	}
	if len(ids) == 0 && f.filter == (store.JobFilter{}) && f.errorCode == "" {
		return errors.New("jobs retry needs job ids or at least one filter (--tenant, --service, --provider, --error-code)")
	}
	if f.rate <= 0 {
		return errors.New("--rate must be more than 0")
	}
	ops, st, done, err := jobOperations(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer done()
	var targets []jobs.Record
	if len(ids) > 0 {
		for _, id := range ids {
			r, err := st.GetJob(ctx, id)
			if err != nil {
				fmt.Fprintf(stdout, "%s  skipped: %v\n", id, err)
				continue
			}
			targets = append(targets, *r)
		}
	} else {
		f.filter.Status = jobs.StatusFailed
		records, _, err := st.ListJobs(ctx, f.filter, 0, f.limit)
		if err != nil {
			return err
		}
		for _, r := range records {
			if f.errorCode == "" || r.ErrorCode == f.errorCode {
				targets = append(targets, r)
			}
		}
	}
	limiter := rate.NewLimiter(rate.Limit(f.rate), 1)
	var retried, failed int
	for _, r := range targets {
		if f.dryRun {
			fmt.Fprintf(stdout, "%s  would retry (%s, %s: %s)\n", r.ID, r.Service, r.Status, dash(r.ErrorCode))
			continue
		}
		if err := limiter.Wait(ctx); err != nil {
			return err
		}
		if _, err := ops.Retry(ctx, &r); err != nil {
			failed++
			fmt.Fprintf(stdout, "%s  not retried: %v\n", r.ID, err)
			continue
		}
		retried++
		fmt.Fprintf(stdout, "%s  retried (it had failed with %s)\n", r.ID, dash(r.ErrorCode))
	}
	if f.dryRun {
		fmt.Fprintf(stdout, "%d jobs would be retried\n", len(targets))
		return nil
	}
	fmt.Fprintf(stdout, "%d retried, %d not\n", retried, failed)
	if failed > 0 {
		return fmt.Errorf("%d jobs were not retried", failed)
	}
	return nil
}

// cancelJobs cancels the jobs named, printing what happened to each.
func cancelJobs(ctx context.Context, cfg config, ids []string, stdout io.Writer, logger *slog.Logger) error {
	ops, st, done, err := jobOperations(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer done()
	var failed int
	for _, id := range ids {
		r, err := st.GetJob(ctx, id)
		if err == nil {
			r, err = ops.Cancel(ctx, r)
		}
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "%s  not cancelled: %v\n", id, err)
			continue
		}
		fmt.Fprintf(stdout, "%s  %s\n", id, r.Status)
	}
	if failed > 0 {
		return fmt.Errorf("%d jobs were not cancelled", failed)
	}
	return nil
}
