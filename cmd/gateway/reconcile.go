package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// The reconciliation sweep (docs/operations.md, Housekeeping).
const (
	// reconcileEvery is how often a batch of open jobs is checked.
	reconcileEvery = 3 * time.Minute
	// reconcileBatch bounds the jobs one round checks (one
	// DescribeWorkflowExecution each); the next round goes on after them.
	reconcileBatch = 200
	// reconcileMinAge keeps the sweep off jobs created just now, whose
	// workflow may be starting.
	reconcileMinAge = time.Minute
	// neverStartedAge is how old a pending job without a start in the
	// outbox nor a workflow must be to be taken as never started: past a
	// dispatcher's lease of its start (jobops.Config.Lease, 30 s), with a
	// margin.
	neverStartedAge = 30*time.Second + time.Minute
	// reconcileCallTimeout bounds each call to Temporal.
	reconcileCallTimeout = 10 * time.Second
)

// closedStatuses name the statuses of a closed workflow; continued as new
// is not one: the chain goes on in its latest run.
var closedStatuses = map[enumspb.WorkflowExecutionStatus]string{
	enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:  "completed",
	enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:     "failed",
	enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED: "terminated",
	enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:  "timed out",
	enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:   "cancelled",
}

// reconciler fails the jobs the store holds as pending or processing
// while Temporal says their workflow is closed (WORKFLOW_CLOSED) or was
// never started (JOB_NOT_STARTED), and sends their *.failed webhook.
type reconciler struct {
	store    *store.Store
	temporal client.Client
	// dataConverter reads the job's submission (its webhook) from its
	// workflow's history; nil: the SDK's default.
	dataConverter converter.DataConverter
	metrics       *metrics.Metrics
	logger        *slog.Logger

	cursor store.OpenJobCursor // where the last round left off
}

func newReconciler(st *store.Store, tc client.Client, dc converter.DataConverter, m *metrics.Metrics, logger *slog.Logger) *reconciler {
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	return &reconciler{store: st, temporal: tc, dataConverter: dc, metrics: m, logger: logger}
}

// sweep checks the next batch of open jobs created over reconcileMinAge
// before now and fails those whose workflow ended or never started; it
// returns how many it failed.
func (r *reconciler) sweep(ctx context.Context, now time.Time) (int, error) {
	open, next, err := r.store.OpenJobs(ctx, now.Add(-reconcileMinAge), r.cursor, reconcileBatch)
	if err != nil {
		return 0, err
	}
	r.cursor = next
	failed := 0
	var errs []error
	for _, job := range open {
		if ctx.Err() != nil {
			break
		}
		n, err := r.reconcile(ctx, job, now)
		failed += n
		if err != nil && len(errs) < 3 { // a few say enough; the rest are alike
			errs = append(errs, err)
		}
	}
	return failed, errors.Join(errs...)
}

// reconcile checks one job against its workflow and fails it if the
// workflow is closed, or was never started.
func (r *reconciler) reconcile(ctx context.Context, open store.OpenJob, now time.Time) (int, error) {
	code, message, workflowStatus, err := r.verdict(ctx, open, now)
	if err != nil || code == "" {
		return 0, err
	}
	failed, err := r.store.FailOpenJob(ctx, open.ID, code, message, now)
	if err != nil {
		return 0, fmt.Errorf("job %s: fail it: %w", open.ID, err)
	}
	if failed == nil {
		return 0, nil // it ended meanwhile
	}
	r.metrics.JobReconciled(code)
	r.logger.Warn("job failed: its workflow ended without recording its outcome, or never started",
		"job", open.ID, "was", open.Status, "workflow", workflowStatus, "code", code)
	if code == jobs.CodeWorkflowClosed {
		r.sendFailed(ctx, failed)
	}
	return 1, nil
}

// verdict is the code and message the job fails with, or "" when its
// workflow runs (or the job is too young to tell).
func (r *reconciler) verdict(ctx context.Context, open store.OpenJob, now time.Time) (code, message, workflowStatus string, err error) {
	dctx, cancel := context.WithTimeout(ctx, reconcileCallTimeout)
	defer cancel()
	desc, err := r.temporal.DescribeWorkflowExecution(dctx, workflows.JobWorkflowID(open.ID), "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound) && open.Status == jobs.StatusPending:
		if open.CreatedAt.After(now.Add(-neverStartedAge)) {
			return "", "", "", nil
		}
		return jobs.CodeNotStarted, "the job's workflow was never started (or Temporal no longer has it); the job did not run", "not found", nil
	case errors.As(err, &notFound):
		return jobs.CodeWorkflowClosed, "the job's workflow is gone from Temporal without recording the job's outcome", "not found", nil
	case err != nil:
		return "", "", "", fmt.Errorf("job %s: describe its workflow: %w", open.ID, err)
	}
	if name, closed := closedStatuses[desc.GetWorkflowExecutionInfo().GetStatus()]; closed {
		return jobs.CodeWorkflowClosed, "the job's workflow ended (" + name + ") without recording the job's outcome", name, nil
	}
	// Running, or continued as new an instant ago: the latest run (the
	// empty run id) carries the job on.
	return "", "", "", nil
}

// sendFailed sends the failed job's *.failed webhook, if its submission
// named one, through a WebhookResendWorkflow with one message: signed,
// retried and logged as the job's own events are. The message is numbered
// after the job's last one. A job whose submission cannot be read gets
// none, and the log says so.
func (r *reconciler) sendFailed(ctx context.Context, failed *jobs.Record) {
	log := r.logger.With("job", failed.ID)
	sub, err := r.submission(ctx, failed.ID)
	if err != nil {
		log.Warn("the failed job's webhook is not sent: its submission cannot be read", "error", err)
		return
	}
	if sub.Webhook == nil {
		return
	}
	seq, err := r.lastMessage(ctx, failed.ID)
	if err != nil {
		log.Warn("the failed job's webhook is not sent: its messages cannot be read", "error", err)
		return
	}
	svc, ok := jobs.ServiceOf(failed.Service)
	snap, serr := failed.Snapshot()
	if !ok || serr != nil {
		log.Warn("the failed job's webhook is not sent: the job cannot be rendered", "error", serr)
		return
	}
	in := workflows.WebhookResend{
		JobID: failed.ID, Service: failed.Service, Target: *sub.Webhook, GiveUpAfter: sub.WebhookGiveUpAfter,
		// No trigger: the message is the job's own, as its workflow would
		// have sent it, so resends and recoveries take it.
		Messages: []workflows.ResendMessage{{
			MessageID: fmt.Sprintf("%s-%d", failed.ID, seq+1),
			Event:     jobs.EventName(svc, jobs.EventFailed),
			Job:       snap.WithoutDocuments(),
		}},
	}
	sctx, cancel := context.WithTimeout(ctx, reconcileCallTimeout)
	defer cancel()
	opts := client.StartWorkflowOptions{ID: workflows.WebhookResendWorkflowID(failed.ID, "reconciled"), TaskQueue: workflows.TaskQueue}
	if _, err := r.temporal.ExecuteWorkflow(sctx, opts, workflows.WebhookResendWorkflowName, in); err != nil {
		log.Error("the failed job's webhook is not sent: its workflow did not start", "error", err)
	}
}

// submission is the job's submission, the input its workflow started
// with.
func (r *reconciler) submission(ctx context.Context, id string) (jobs.Submission, error) {
	hctx, cancel := context.WithTimeout(ctx, reconcileCallTimeout)
	defer cancel()
	iter := r.temporal.GetWorkflowHistory(hctx, workflows.JobWorkflowID(id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !iter.HasNext() {
		return jobs.Submission{}, errors.New("its workflow has no history")
	}
	event, err := iter.Next()
	if err != nil {
		return jobs.Submission{}, err
	}
	input := event.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(input) == 0 {
		return jobs.Submission{}, errors.New("its workflow history does not start with its submission")
	}
	var sub jobs.Submission
	err = r.dataConverter.FromPayload(input[0], &sub)
	return sub, err
}

// lastMessage is the number of the job's last webhook message, recorded
// or attempted; 0 when it has none.
func (r *reconciler) lastMessage(ctx context.Context, id string) (int, error) {
	messages, err := r.store.WebhookMessages(ctx, id)
	if err != nil {
		return 0, err
	}
	attempts, err := r.store.ListDeliveries(ctx, id)
	if err != nil {
		return 0, err
	}
	last := 0
	for _, m := range messages {
		last = max(last, m.Seq)
	}
	for _, a := range attempts {
		if seq, err := store.MessageSeq(a.MessageID); err == nil {
			last = max(last, seq)
		}
	}
	return last, nil
}
