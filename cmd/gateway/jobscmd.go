package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/store"
)

// jobsFlags are the flags of `gateway jobs` (docs/operations.md, Jobs from
// the command line).
type jobsFlags struct {
	filter    store.JobFilter
	status    string
	limit     int
	out       string
	errorCode string
	dryRun    bool
	rate      float64
}

const jobsUsage = `gateway jobs: look at jobs as an SRE, with the configuration of serve.

Usage:
  gateway jobs list    [--tenant T] [--service S] [--status S] [--provider P] [--limit N]
  gateway jobs show    ID
  gateway jobs history ID [--out FILE]   the workflow history, as gateway replay reads it
  gateway jobs retry   ID... | --tenant T --service S --provider P --error-code C [--dry-run] [--rate N] [--limit N]
  gateway jobs cancel  ID...
`

func (f *jobsFlags) register(fs *flag.FlagSet, sub string) {
	switch sub {
	case "list":
		fs.StringVar(&f.filter.Tenant, "tenant", "", "only this tenant's jobs")
		fs.StringVar(&f.filter.Service, "service", "", "only this service's jobs")
		fs.StringVar(&f.status, "status", "", "only jobs in this status: pending, processing, completed, failed")
		fs.StringVar(&f.filter.Provider, "provider", "", "only jobs on this provider")
		fs.IntVar(&f.limit, "limit", 50, "at most this many jobs, newest first")
	case "history":
		fs.StringVar(&f.out, "out", "", "write the history to this file (default: standard output)")
	case "retry":
		fs.StringVar(&f.filter.Tenant, "tenant", "", "retry this tenant's failed jobs")
		fs.StringVar(&f.filter.Service, "service", "", "retry this service's failed jobs")
		fs.StringVar(&f.filter.Provider, "provider", "", "retry the failed jobs last routed to this provider")
		fs.StringVar(&f.errorCode, "error-code", "", "retry the failed jobs with this error code, e.g. PROVIDERS_EXHAUSTED")
		fs.IntVar(&f.limit, "limit", 1000, "retry at most this many jobs, newest first")
		fs.BoolVar(&f.dryRun, "dry-run", false, "print what would be retried, and retry nothing")
		fs.Float64Var(&f.rate, "rate", 5, "retries started per second, so a bulk retry does not flood the providers")
	}
}

// runJobs runs a `gateway jobs` subcommand.
func runJobs(ctx context.Context, cfg config, sub string, f jobsFlags, args []string, stdout io.Writer, logger *slog.Logger) error {
	switch sub {
	case "list":
		return listJobs(ctx, cfg, f, stdout)
	case "retry":
		return retryJobs(ctx, cfg, f, args, stdout, logger)
	case "cancel":
		if len(args) == 0 {
			return errors.New("jobs cancel takes one or more job ids")
		}
		return cancelJobs(ctx, cfg, args, stdout, logger)
	case "show", "history":
		if len(args) != 1 {
			return fmt.Errorf("jobs %s takes one job id", sub)
		}
		if sub == "show" {
			return showJob(ctx, cfg, args[0], stdout, logger)
		}
		return jobHistoryFile(ctx, cfg, args[0], f.out, stdout, logger)
	}
	return fmt.Errorf("unknown subcommand %q\n\n%s", sub, jobsUsage)
}

// openJobStore opens the store read as serve does (dev: the data dir's).
func openJobStore(ctx context.Context, cfg config) (*store.Store, error) {
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = "sqlite:" + filepath.Join(cfg.DataDir, "gateway.db")
	}
	return openStore(ctx, cfg, false)
}

func listJobs(ctx context.Context, cfg config, f jobsFlags, stdout io.Writer) error {
	if f.status != "" {
		status := jobs.Status(f.status)
		if !status.Valid() {
			return fmt.Errorf("--status %q: use pending, processing, completed or failed", f.status)
		}
		f.filter.Status = status
	}
	if f.limit < 1 || f.limit > 1000 {
		return errors.New("--limit must be between 1 and 1000")
	}
	st, err := openJobStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	records, total, err := st.ListJobs(ctx, f.filter, 0, f.limit)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSERVICE\tTENANT\tSTATUS\tPROVIDER\tERROR\tCREATED")
	for _, r := range records {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Service, r.Tenant, r.Status, dash(r.Provider), dash(r.ErrorCode), r.CreatedAt.UTC().Format(time.RFC3339))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d of %d matching jobs\n", len(records), total)
	return nil
}

// showJob prints a job as the store has it, its routing history, and
// what its workflow's history says.
func showJob(ctx context.Context, cfg config, id string, stdout io.Writer, logger *slog.Logger) error {
	st, err := openJobStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := st.GetJob(ctx, id)
	if err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	fmt.Fprintf(stdout, "job       %s (%s)\ntenant    %s, user %s\nstatus    %s", r.ID, r.Service, r.Tenant, r.UserID, r.Status)
	if r.ErrorCode != "" {
		fmt.Fprintf(stdout, ": %s: %s", r.ErrorCode, r.ErrorMessage)
	}
	fmt.Fprintf(stdout, "\ncreated   %s\n", r.CreatedAt.UTC().Format(time.RFC3339Nano))
	var history []policy.RoutingInfo
	if r.RoutingHistory != "" {
		if err := json.Unmarshal([]byte(r.RoutingHistory), &history); err != nil {
			return fmt.Errorf("job %s: routing history: %w", id, err)
		}
	}
	fmt.Fprintln(stdout, "routing")
	for _, h := range history {
		fmt.Fprintf(stdout, "  attempt %d  %-20s %-16s %s\n", h.Attempt, h.ProviderID, h.Reason, h.DecidedAt.UTC().Format(time.RFC3339))
	}
	if len(history) == 0 {
		fmt.Fprintln(stdout, "  (not routed)")
	}

	tc, err := dialTemporal(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer tc.Close()
	events, err := jobHistory(ctx, tc, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "workflow  %d events\n", len(events.Events))
	dc := converter.GetDefaultDataConverter()
	for _, e := range events.Events {
		var summary string
		if s := e.GetUserMetadata().GetSummary(); s != nil {
			_ = dc.FromPayload(s, &summary)
		}
		if summary == "" && e.GetActivityTaskScheduledEventAttributes() == nil {
			continue
		}
		if summary == "" {
			summary = e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		}
		fmt.Fprintf(stdout, "  %4d  %s  %s\n", e.GetEventId(), e.GetEventTime().AsTime().UTC().Format("15:04:05.000"), summary)
	}
	return nil
}

// jobHistoryFile writes a job workflow's history to path (or stdout).
func jobHistoryFile(ctx context.Context, cfg config, id, path string, stdout io.Writer, logger *slog.Logger) error {
	tc, err := dialTemporal(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer tc.Close()
	history, err := jobHistory(ctx, tc, id)
	if err != nil {
		return err
	}
	if path == "" {
		return writeHistory(stdout, history)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeHistory(f, history); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
