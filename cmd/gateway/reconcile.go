package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
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
	// reconcileEvery is how often a round runs.
	reconcileEvery = 3 * time.Minute
	// reconcileBudget bounds a round: it walks on through the open jobs,
	// a page at a time, until it reaches the newest or this runs out, and
	// the next round goes on from where it stopped. The other sweeps of
	// the worker wait meanwhile.
	reconcileBudget = 30 * time.Second
	// reconcilePage is how many open jobs are read at a time.
	reconcilePage = 200
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
	// unsentWindow and unsentBatch bound the *.failed messages whose send
	// a round starts again: recorded within the window, that many a round.
	unsentWindow = 24 * time.Hour
	unsentBatch  = 50
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

	budget time.Duration       // reconcileBudget
	page   int                 // reconcilePage
	cursor store.OpenJobCursor // the last job checked
}

func newReconciler(st *store.Store, tc client.Client, dc converter.DataConverter, m *metrics.Metrics, logger *slog.Logger) *reconciler {
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	return &reconciler{store: st, temporal: tc, dataConverter: dc, metrics: m, logger: logger, budget: reconcileBudget, page: reconcilePage}
}

// temporalUnreachable says that err is Temporal's being away or slow, or
// the round's end: the round stops there, as the next calls would fare
// alike.
func temporalUnreachable(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	var canceled *serviceerror.Canceled
	return errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.As(err, &canceled) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// sweep runs a round within the reconciler's budget: it starts again the
// sends of *.failed messages recorded and not sent, then checks the open
// jobs created over reconcileMinAge before now from where the last round
// stopped, and fails those whose workflow ended or never started. It
// returns how many it failed. It stops at the first sign that Temporal is
// unreachable, leaving the job it was checking to the next round.
func (r *reconciler) sweep(ctx context.Context, now time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, r.budget)
	defer cancel()
	if err := r.sendUnsent(ctx, now); err != nil {
		return 0, outOfTime(ctx, err)
	}
	failed := 0
	var errs []error
	for {
		open, next, err := r.store.Jobs.OpenJobs(ctx, now.Add(-reconcileMinAge), r.cursor, r.page)
		if err != nil {
			return failed, outOfTime(ctx, errors.Join(append(errs, err)...))
		}
		for _, job := range open {
			n, err := r.reconcile(ctx, job, now)
			failed += n
			if temporalUnreachable(err) || ctx.Err() != nil {
				return failed, outOfTime(ctx, errors.Join(append(errs, err)...))
			}
			if err != nil && len(errs) < 3 { // a few say enough; the rest are alike
				errs = append(errs, err)
			}
			r.cursor = store.OpenJobCursor{CreatedAt: job.CreatedAt, ID: job.ID}
		}
		if next == (store.OpenJobCursor{}) {
			r.cursor = next // the newest reached: the next round starts over
			return failed, errors.Join(errs...)
		}
	}
}

// outOfTime is err, or nil when the round's budget ran out: a round that
// used its time is not a failed one.
func outOfTime(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil
	}
	return err
}

// reconcile checks one job against its workflow and fails it if the
// workflow is closed, or was never started.
func (r *reconciler) reconcile(ctx context.Context, open store.OpenJob, now time.Time) (int, error) {
	code, message, workflowStatus, err := r.verdict(ctx, open, now)
	if err != nil || code == "" {
		return 0, err
	}
	log := r.logger.With("job", open.ID)
	var sub jobs.Submission
	event := ""
	if code == jobs.CodeWorkflowClosed {
		// Read before the job fails, so that its *.failed message is
		// recorded with the failure, or the job is left to a later round.
		sub, err = r.submission(ctx, open.ID)
		svc, known := jobs.ServiceOf(open.Service)
		switch {
		case temporalUnreachable(err):
			return 0, fmt.Errorf("job %s: read its submission: %w", open.ID, err)
		case err != nil:
			log.Warn("the failed job's webhook is not sent: its submission cannot be read", "error", err)
		case sub.Webhook != nil && !known:
			log.Warn("the failed job's webhook is not sent: its service is not known", "service", open.Service)
		case sub.Webhook != nil:
			event = jobs.EventName(svc, jobs.EventFailed)
		}
	}
	failed, sent, err := r.store.Jobs.FailOpenJob(ctx, open.ID, code, message, now, event)
	if err != nil {
		return 0, fmt.Errorf("job %s: fail it: %w", open.ID, err)
	}
	if failed == nil {
		return 0, nil // it ended meanwhile
	}
	r.metrics.JobReconciled(code)
	log.Warn("job failed: its workflow ended without recording its outcome, or never started",
		"was", open.Status, "workflow", workflowStatus, "code", code)
	if sent == nil {
		return 1, nil
	}
	if err := r.send(ctx, *sent, sub); err != nil {
		// Recorded: the next rounds start it again (sendUnsent).
		log.Error("the failed job's webhook is not sent yet: its workflow did not start", "error", err)
		if temporalUnreachable(err) {
			return 1, err
		}
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

// send starts the WebhookResendWorkflow that sends message m of a failed
// job to sub's webhook: signed, retried and logged as the job's own
// events are. The workflow is named after the message and a closed one
// is not run again, so that a start made twice sends it once: a start
// that finds it started is done.
func (r *reconciler) send(ctx context.Context, m store.WebhookMessage, sub jobs.Submission) error {
	snap, err := m.Job()
	if err != nil {
		return fmt.Errorf("read message %s: %w", m.MessageID, err)
	}
	in := workflows.WebhookResend{
		JobID: m.JobID, Service: sub.Service, Target: *sub.Webhook, GiveUpAfter: sub.WebhookGiveUpAfter,
		// No trigger: the message is the job's own, as its workflow would
		// have sent it, so resends and recoveries take it.
		Messages: []workflows.ResendMessage{{MessageID: m.MessageID, Event: m.Event, Job: snap}},
	}
	sctx, cancel := context.WithTimeout(ctx, reconcileCallTimeout)
	defer cancel()
	opts := client.StartWorkflowOptions{
		ID:        reconciledSendID(m),
		TaskQueue: workflows.TaskQueue,
		// A send that ended (delivered or given up) is not made again
		// (the namespace's retention outlasts unsentWindow).
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}
	_, err = r.temporal.ExecuteWorkflow(sctx, opts, workflows.WebhookResendWorkflowName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	return err
}

// reconciledSendID is the id of the workflow sending message m of a job
// the sweep failed.
func reconciledSendID(m store.WebhookMessage) string {
	return workflows.WebhookResendWorkflowID(m.JobID, "reconciled-"+strconv.Itoa(m.Seq))
}

// sendUnsent starts again the sends of the *.failed messages recorded in
// the last unsentWindow that no delivery was attempted of: their start
// failed, or the process stopped before it. It stops at the first sign
// that Temporal is unreachable.
func (r *reconciler) sendUnsent(ctx context.Context, now time.Time) error {
	unsent, err := r.store.Jobs.UnsentReconciledWebhooks(ctx, now.Add(-unsentWindow), unsentBatch)
	if err != nil {
		return fmt.Errorf("read the unsent *.failed messages: %w", err)
	}
	for _, m := range unsent {
		log := r.logger.With("job", m.JobID, "message", m.MessageID)
		sub, err := r.submission(ctx, m.JobID)
		if err == nil && sub.Webhook == nil {
			err = errors.New("its submission names no webhook")
		}
		if err == nil {
			err = r.send(ctx, m, sub)
		}
		if temporalUnreachable(err) {
			return fmt.Errorf("job %s: send message %s: %w", m.JobID, m.MessageID, err)
		}
		if err != nil {
			log.Warn("the failed job's webhook is not sent yet; the next round tries again", "error", err)
		}
	}
	return nil
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
