package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// jobsFlags are the flags of `gateway jobs` (docs/operations.md, Jobs from
// the command line).
type jobsFlags struct {
	filter  store.JobFilter
	status  string
	limit   int
	out     string
	raw     bool
	output  string
	dryRun  bool
	rate    float64
	webhook string
}

func (f *jobsFlags) register(fs *flag.FlagSet, sub string) {
	switch sub {
	case "list", "show":
		registerOutput(fs, &f.output, "output format: text, or json (an array for list, an object for show; docs/operations.md)")
	}
	switch sub {
	case "list":
		fs.StringVar(&f.filter.Tenant, "tenant", "", "only this tenant's jobs")
		fs.StringVar((*string)(&f.filter.Service), "service", "", "only this service's jobs")
		fs.StringVar(&f.status, "status", "", "only jobs in this status: pending, processing, completed, failed")
		fs.StringVar(&f.filter.Provider, "provider", "", "only jobs on this provider")
		fs.StringVar(&f.filter.ErrorCode, "error-code", "", "only jobs that failed with this error code")
		fs.StringVar(&f.webhook, "webhook", "", "failed: only jobs with a webhook event given up (docs/webhooks.md)")
		fs.IntVar(&f.limit, "limit", 50, "at most this many jobs, newest first")
	case "history":
		fs.StringVar(&f.out, "out", "", "write the history to this file (default: standard output)")
		fs.BoolVar(&f.raw, "raw", false, "keep the payloads as Temporal holds them (encrypted), instead of decrypting them with the payload keys")
	case "retry":
		fs.StringVar(&f.filter.Tenant, "tenant", "", "retry this tenant's failed jobs")
		fs.StringVar((*string)(&f.filter.Service), "service", "", "retry this service's failed jobs")
		fs.StringVar(&f.filter.Provider, "provider", "", "retry the failed jobs last routed to this provider")
		fs.StringVar(&f.filter.ErrorCode, "error-code", "", "retry the failed jobs with this error code, e.g. PROVIDERS_EXHAUSTED")
		fs.IntVar(&f.limit, "limit", 1000, "retry at most this many of the jobs the filters select, newest first")
		fs.BoolVar(&f.dryRun, "dry-run", false, "print what would be retried, and retry nothing")
		fs.Float64Var(&f.rate, "rate", 5, "retries started per second, so a bulk retry does not flood the providers")
	}
}

// runJobs runs a `gateway jobs` subcommand.
func runJobs(ctx context.Context, cfg config, sub string, f jobsFlags, args []string, stdout, stderr io.Writer, logger *slog.Logger) error {
	if f.output != "" && f.output != "text" && f.output != "json" {
		return usageErrorf("-o %q: use text or json", f.output)
	}
	switch sub {
	case "list":
		return listJobs(ctx, cfg, f, stdout)
	case "retry":
		return retryJobs(ctx, cfg, f, args, stdout, stderr, logger)
	case "cancel":
		if len(args) == 0 {
			return errors.New("jobs cancel takes one or more job ids")
		}
		return cancelJobs(ctx, cfg, args, stdout, stderr, logger)
	case "show", "history":
		if len(args) != 1 {
			return fmt.Errorf("jobs %s takes one job id", sub)
		}
		if sub == "show" {
			return showJob(ctx, cfg, args[0], f.output, stdout, logger)
		}
		return jobHistoryFile(ctx, cfg, args[0], f.out, f.raw, stdout, logger)
	}
	return fmt.Errorf("unknown command %q", sub)
}

// jobNotFound is the error of an id the store (or Temporal) does not have.
func jobNotFound(id string) error {
	return fmt.Errorf("job %s not found", id)
}

// jobJSON is a job in -o json: stable names, as the API's attributes
// where it has them (docs/operations.md, Jobs from the command line);
// fields that do not apply are left out.
type jobJSON struct {
	ID           string         `json:"id"`
	Service      jobs.ServiceID `json:"service"`
	Tenant       string         `json:"tenant"`
	UserID       string         `json:"user_id"`
	Status       string         `json:"status"`
	Progress     int            `json:"progress"`
	Provider     string         `json:"provider,omitempty"`
	PolicyID     string         `json:"policy_id,omitempty"`
	Application  string         `json:"application,omitempty"`
	ErrorCode    string         `json:"error_code,omitempty"`
	ErrorMessage string         `json:"error_message,omitempty"`
	WorkerID     string         `json:"worker_id,omitempty"`
	TraceID      string         `json:"trace_id,omitempty"`
	CreatedAt    time.Time      `json:"created_at"`
	ProcessedAt  *time.Time     `json:"processed_at,omitempty"`
	CompletedAt  *time.Time     `json:"completed_at,omitempty"`
}

func newJobJSON(r *jobs.Record) jobJSON {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	return jobJSON{
		ID: r.ID, Service: r.Service, Tenant: r.Tenant, UserID: r.UserID, Status: string(r.Status),
		Progress: r.Progress, Provider: r.Provider, PolicyID: r.PolicyID, Application: r.Application,
		ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage, WorkerID: r.WorkerID, TraceID: r.TraceID,
		CreatedAt: r.CreatedAt.UTC(), ProcessedAt: utc(r.ProcessedAt), CompletedAt: utc(r.CompletedAt),
	}
}

// jobDetailJSON is `jobs show -o json`: the job, its routing history (as
// the API's routing_history) and its workflow's steps.
type jobDetailJSON struct {
	jobJSON
	RoutingHistory []jobs.RoutingInfo `json:"routing_history"`
	// Workflow is null when Temporal has no history of the job.
	Workflow *workflowJSON `json:"workflow"`
}

type workflowJSON struct {
	Events int                `json:"events"`
	Steps  []workflowStepJSON `json:"steps"`
}

type workflowStepJSON struct {
	EventID int64     `json:"event_id"`
	Time    time.Time `json:"time"`
	Summary string    `json:"summary"`
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// errNoStore: no --database-url, and the data dir holds no store.
var errNoStore = errors.New("no store")

// openJobStore opens the store read as serve does (dev: the data dir's).
// A data dir without a store is errNoStore: opening it would create an
// empty store, and the data dir, that the commands cannot read.
func openJobStore(ctx context.Context, cfg config) (*store.Store, error) {
	if cfg.DatabaseURL == "" {
		path := filepath.Join(cfg.DataDir, "gateway.db")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s: give --database-url, or the --data-dir gateway dev ran with", errNoStore, path)
		}
		cfg.DatabaseURL = "sqlite:" + path
	}
	return openStore(ctx, cfg, false)
}

func listJobs(ctx context.Context, cfg config, f jobsFlags, stdout io.Writer) error {
	if f.status != "" {
		status := jobs.Status(f.status)
		if !status.Valid() {
			return usageErrorf("--status %q: use pending, processing, completed or failed", f.status)
		}
		f.filter.Status = status
	}
	switch f.webhook {
	case "":
	case "failed":
		f.filter.WebhookFailed = true
	default:
		return usageErrorf("--webhook %q: use failed", f.webhook)
	}
	if f.limit < 1 || f.limit > 1000 {
		return usageErrorf("--limit must be between 1 and 1000")
	}
	st, err := openJobStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	records, total, err := st.Jobs.ListJobs(ctx, f.filter, 0, f.limit)
	if err != nil {
		return err
	}
	if f.output == "json" {
		out := make([]jobJSON, len(records))
		for i := range records {
			out[i] = newJobJSON(&records[i])
		}
		return writeJSON(stdout, out)
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
func showJob(ctx context.Context, cfg config, id, output string, stdout io.Writer, logger *slog.Logger) error {
	st, err := openJobStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := st.Jobs.GetJob(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return jobNotFound(id)
	}
	if err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	detail := jobDetailJSON{jobJSON: newJobJSON(r), RoutingHistory: []jobs.RoutingInfo{}}
	if r.RoutingHistory != "" {
		if err := json.Unmarshal([]byte(r.RoutingHistory), &detail.RoutingHistory); err != nil {
			return fmt.Errorf("job %s: routing history: %w", id, err)
		}
	}

	// Summaries are plaintext; the converter reads any other payload too.
	if err := encryptPayloads(ctx, &cfg, "jobs", decryptingOnly, st, logger); err != nil {
		return err
	}
	tc, err := dialTemporal(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer tc.Close()
	events, err := jobHistory(ctx, tc, id)
	if err != nil && !errors.Is(err, errNoHistory) {
		return err
	}
	if events != nil {
		detail.Workflow = &workflowJSON{Events: len(events.Events), Steps: []workflowStepJSON{}}
		dc := cfg.temporal.DataConverter
		if dc == nil {
			dc = converter.GetDefaultDataConverter()
		}
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
			detail.Workflow.Steps = append(detail.Workflow.Steps, workflowStepJSON{
				EventID: e.GetEventId(), Time: e.GetEventTime().AsTime().UTC(), Summary: summary,
			})
		}
	}
	return writeJobDetail(stdout, detail, output)
}

// writeJobDetail prints `jobs show` in the output format asked.
func writeJobDetail(w io.Writer, d jobDetailJSON, output string) error {
	if output == "json" {
		return writeJSON(w, d)
	}
	fmt.Fprintf(w, "job       %s (%s)\ntenant    %s, user %s\nstatus    %s", d.ID, d.Service, d.Tenant, d.UserID, d.Status)
	if d.ErrorCode != "" {
		fmt.Fprintf(w, ": %s: %s", d.ErrorCode, d.ErrorMessage)
	}
	fmt.Fprintf(w, "\ncreated   %s\n", d.CreatedAt.Format(time.RFC3339Nano))
	fmt.Fprintln(w, "routing")
	for _, h := range d.RoutingHistory {
		fmt.Fprintf(w, "  attempt %d  %-20s %-16s %s\n", h.Attempt, h.ProviderID, h.Reason, h.DecidedAt.UTC().Format(time.RFC3339))
	}
	if len(d.RoutingHistory) == 0 {
		fmt.Fprintln(w, "  (not routed)")
	}
	if d.Workflow == nil {
		_, err := fmt.Fprintln(w, "workflow  none in Temporal (not started, or past the namespace's retention)")
		return err
	}
	fmt.Fprintf(w, "workflow  %d events\n", d.Workflow.Events)
	for _, step := range d.Workflow.Steps {
		fmt.Fprintf(w, "  %4d  %s  %s\n", step.EventID, step.Time.Format("15:04:05.000"), step.Summary)
	}
	return nil
}

// jobHistoryFile writes a job workflow's history to path (or stdout), its
// payloads decrypted unless raw.
func jobHistoryFile(ctx context.Context, cfg config, id, path string, raw bool, stdout io.Writer, logger *slog.Logger) error {
	tc, err := dialTemporal(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer tc.Close()
	history, err := jobHistory(ctx, tc, id)
	if errors.Is(err, errNoHistory) {
		return fmt.Errorf("%w: Temporal has no history of it (not started, or past the namespace's retention)", jobNotFound(id))
	}
	if err != nil {
		return err
	}
	if !raw {
		if err := decryptHistory(ctx, cfg, history, logger); err != nil {
			return fmt.Errorf("job %s: decrypt its history (--raw keeps it encrypted): %w", id, err)
		}
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
