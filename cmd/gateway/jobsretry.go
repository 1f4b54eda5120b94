package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"golang.org/x/term"
	"golang.org/x/time/rate"

	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// jobOperations builds the job operations of the CLI on st: Temporal of
// serve, and a dispatcher that starts pending jobs on demand. Payloads
// are encrypted as serve's are: retry and cancel start workflows.
func jobOperations(ctx context.Context, cfg config, st *store.Store, logger *slog.Logger) (*jobops.Service, func(), error) {
	return jobOperationsWith(ctx, cfg, st, encrypting, logger, func(*jobops.Config) {})
}

// jobOperationsWith is jobOperations with the configuration amended by
// amend, using the payload keys as use says.
func jobOperationsWith(ctx context.Context, cfg config, st *store.Store, use keyUse, logger *slog.Logger, amend func(*jobops.Config)) (*jobops.Service, func(), error) {
	if err := encryptPayloads(ctx, &cfg, "jobs", use, st, logger); err != nil {
		return nil, nil, err
	}
	tc, err := dialTemporal(ctx, cfg, logger)
	if err != nil {
		return nil, nil, err
	}
	registry, err := loadRegistry(cfg)
	if err == nil {
		var ops *jobops.Service
		opsCfg := jobops.Config{
			Jobs: st.Jobs, Tenants: st.Routing, Statuses: st.Routing, Policies: st.Routing, Rates: st.Routing, Batches: st.Batches,
			Catalog: registry.Catalog(), Temporal: tc, Logger: logger, DataConverter: cfg.temporal.DataConverter,
			Starts:     jobops.NewDispatcher(jobops.DispatcherConfig{Store: st.Jobs, Temporal: tc, Generation: cfg.JobGeneration, Logger: logger}),
			Generation: cfg.JobGeneration,
			Audit:      st.Audit,
		}
		amend(&opsCfg)
		ops, err = jobops.New(opsCfg)
		if err == nil {
			return ops, tc.Close, nil
		}
	}
	tc.Close()
	return nil, nil, err
}

// lookUpJobs reads the jobs named; those the store does not have are
// named on stderr and counted.
func lookUpJobs(ctx context.Context, st *store.Store, ids []string, stderr io.Writer) ([]jobs.Record, int, error) {
	var found []jobs.Record
	var missing int
	for _, id := range ids {
		r, err := st.Jobs.GetJob(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			missing++
			fmt.Fprintln(stderr, jobNotFound(id))
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("job %s: %w", id, err)
		}
		found = append(found, *r)
	}
	return found, missing, nil
}

// notFoundError is the command's error when ids were not found.
func notFoundError(missing int) error {
	if missing == 1 {
		return errors.New("1 job was not found")
	}
	return fmt.Errorf("%d jobs were not found", missing)
}

// retryTargets are the jobs a retry takes: those named, or the newest
// f.limit failed jobs the filters select. The filters, the error code
// too, are in the store's query, so --limit counts matching jobs only.
func retryTargets(ctx context.Context, st *store.Store, f jobsFlags, ids []string, stderr io.Writer) ([]jobs.Record, int, error) {
	if len(ids) > 0 {
		return lookUpJobs(ctx, st, ids, stderr)
	}
	f.filter.Status = jobs.StatusFailed
	records, _, err := st.Jobs.ListJobs(ctx, f.filter, 0, f.limit)
	return records, 0, err
}

// retryJobs retries the jobs named, or the failed jobs the filter selects,
// at most f.rate a second, printing what happened to each. Run again, it
// resumes: jobs already retried are no longer failed.
func retryJobs(ctx context.Context, cfg config, f jobsFlags, ids []string, stdout, stderr io.Writer, logger *slog.Logger) error {
	if len(ids) > 0 && f.filter != (store.JobFilter{}) {
		return usageErrorf("jobs retry takes job ids or filters, not both")
	}
	if len(ids) == 0 && f.filter == (store.JobFilter{}) {
		return usageErrorf("jobs retry needs job ids or at least one filter (--tenant, --service, --provider, --error-code)")
	}
	if f.rate <= 0 {
		return usageErrorf("--rate must be more than 0")
	}
	if f.limit < 1 {
		return usageErrorf("--limit must be at least 1")
	}
	st, err := openJobStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	targets, missing, err := retryTargets(ctx, st, f, ids, stderr)
	if err != nil {
		return err
	}
	var retried, failed int
	if f.dryRun {
		for _, r := range targets {
			fmt.Fprintf(stdout, "%s  would retry (%s, %s: %s)\n", r.ID, r.Service, r.Status, dash(r.ErrorCode))
		}
		fmt.Fprintf(stdout, "%d jobs would be retried\n", len(targets))
	} else {
		if len(targets) > 0 {
			ops, done, err := jobOperations(ctx, cfg, st, logger)
			if err != nil {
				return err
			}
			defer done()
			if retried, failed, err = retryEach(ctx, ops, targets, f.rate, stdout, newProgress(stderr, len(targets))); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "%d retried, %d not\n", retried, failed)
	}
	if failed > 0 {
		return fmt.Errorf("%d jobs were not retried", failed)
	}
	if missing > 0 {
		return notFoundError(missing)
	}
	return nil
}

// retrier retries one job (jobops.Service; tests fake it).
type retrier interface {
	Retry(ctx context.Context, job *jobs.Record) (*jobs.Record, error)
}

// retryEach retries targets at most perSecond a second, printing a line
// for each and drawing p between them.
func retryEach(ctx context.Context, ops retrier, targets []jobs.Record, perSecond float64, stdout io.Writer, p *progress) (retried, failed int, err error) {
	limiter := rate.NewLimiter(rate.Limit(perSecond), 1)
	p.draw()
	defer p.finish()
	for i := range targets {
		r := &targets[i]
		if err := limiter.Wait(ctx); err != nil {
			return retried, failed, err
		}
		_, err := ops.Retry(ctx, r)
		p.clear() // the job's line goes where the progress line was
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "%s  not retried: %v\n", r.ID, err)
		} else {
			retried++
			fmt.Fprintf(stdout, "%s  retried (it had failed with %s)\n", r.ID, dash(r.ErrorCode))
		}
		p.done++
		p.draw()
	}
	return retried, failed, nil
}

// progress is a bulk retry's progress line on a terminal: done/total, the
// rate so far and the time left, redrawn in place after each job. On
// anything but a terminal it writes nothing.
type progress struct {
	w           io.Writer // nil: draw nothing
	done, total int
	start       time.Time
	now         func() time.Time
}

// newProgress draws on stderr if it is a terminal.
func newProgress(stderr io.Writer, total int) *progress {
	p := &progress{total: total, now: time.Now}
	if isTerminal(stderr) {
		p.w = stderr
	}
	p.start = p.now()
	return p
}

// isTerminal reports whether w is a terminal (not a file or a pipe).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// line is the progress line, e.g. "retrying: 120/500 done, 4.9/s, ETA 1m18s".
func (p *progress) line() string {
	s := fmt.Sprintf("retrying: %d/%d done", p.done, p.total)
	elapsed := p.now().Sub(p.start)
	if p.done == 0 || elapsed <= 0 {
		return s
	}
	perSecond := float64(p.done) / elapsed.Seconds()
	eta := time.Duration(float64(p.total-p.done) / perSecond * float64(time.Second))
	return s + fmt.Sprintf(", %.1f/s, ETA %s", perSecond, eta.Round(time.Second))
}

func (p *progress) draw() {
	if p.w != nil {
		fmt.Fprint(p.w, "\r\033[K"+p.line())
	}
}

func (p *progress) clear() {
	if p.w != nil {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// finish leaves the last progress line in place.
func (p *progress) finish() {
	if p.w != nil {
		fmt.Fprintln(p.w)
	}
}

// cancelJobs cancels the jobs named, printing what happened to each.
func cancelJobs(ctx context.Context, cfg config, ids []string, stdout, stderr io.Writer, logger *slog.Logger) error {
	st, err := openJobStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	targets, missing, err := lookUpJobs(ctx, st, ids, stderr)
	if err != nil {
		return err
	}
	var failed int
	if len(targets) > 0 {
		ops, done, err := jobOperations(ctx, cfg, st, logger)
		if err != nil {
			return err
		}
		defer done()
		for i := range targets {
			r, err := ops.Cancel(ctx, &targets[i])
			if err != nil {
				failed++
				fmt.Fprintf(stdout, "%s  not cancelled: %v\n", targets[i].ID, err)
				continue
			}
			fmt.Fprintf(stdout, "%s  %s\n", r.ID, r.Status)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d jobs were not cancelled", failed)
	}
	if missing > 0 {
		return notFoundError(missing)
	}
	return nil
}
