package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// DeletionWorkflowName is the registered name of DeletionWorkflow.
const DeletionWorkflowName = "JobDeletionWorkflow"

// deletionPrefix starts the workflow id of a job's erasure.
const deletionPrefix = "deletion-"

// DeletionWorkflowID is the workflow id of a deleted job's erasure.
func DeletionWorkflowID(jobID string) string { return deletionPrefix + jobID }

// JobOfWorkflow is the job a workflow id belongs to: the job's own
// workflow or its erasure.
func JobOfWorkflow(workflowID string) string { return strings.TrimPrefix(workflowID, deletionPrefix) }

// DeletionInput is a deleted job's erasure: its tombstone, which names
// the providers its attempts went to.
type DeletionInput struct {
	Tombstone jobs.Tombstone `json:"tombstone"`
	// StartMayFollow: the job was pending, and a dispatcher that took its
	// start before the deletion may still make it, within its lease.
	StartMayFollow bool `json:"start_may_follow,omitempty"`
	// Webhook is the webhook of a job deleted pending, read from its
	// start; a job whose workflow ran has it in its history.
	Webhook *jobs.Webhook `json:"webhook,omitempty"`
}

// lateStartWindow is how long after a pending job's deletion its start
// may still be made: a dispatcher's lease (jobops.DispatcherConfig.Lease,
// 30 s), and a margin.
const lateStartWindow = 35 * time.Second

var erasure *activities.Erasure

// Erasure activity options: each step is idempotent and retried until it
// succeeds (a store or Temporal outage delays the erasure, never ends it);
// vendors' deletes are retried for a day.
var (
	erasureOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		HeartbeatTimeout:    20 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		},
	}
	purgeOptions = workflow.ActivityOptions{
		StartToCloseTimeout:    time.Minute,
		ScheduleToCloseTimeout: 24 * time.Hour,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Minute,
		},
	}
	deletedEventOptions = workflow.ActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: webhookRetryWindow,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 10 * time.Second, BackoffCoefficient: 2, MaximumInterval: webhookMaxBackoff,
			NonRetryableErrorTypes: []string{activities.ErrTypeWebhookForbidden},
		},
	}
)

// DeletionWorkflow erases what lies outside the store of a job that was
// deleted (docs/api.md, Deleting a job): it waits out the start of a job
// deleted while pending, stops the job's workflow,
// reads its histories for its webhook and the work it handed to vendors,
// deletes the vendors' copies where they can be deleted, its files and
// its workflow's runs, records on the tombstone that the erasure
// finished, and sends the job's *.deleted event to its webhook.
func DeletionWorkflow(ctx workflow.Context, in DeletionInput) error {
	id := in.Tombstone.ID
	if in.StartMayFollow {
		if err := workflow.Sleep(ctx, lateStartWindow); err != nil {
			return err
		}
	}
	step := func(summary string) workflow.Context {
		opts := erasureOptions
		opts.Summary = summary
		return workflow.WithActivityOptions(ctx, opts)
	}
	if err := workflow.ExecuteActivity(step("stop the job's workflow"), erasure.StopJobWorkflow, id).Get(ctx, nil); err != nil {
		return err
	}
	var trail activities.JobTrail
	if err := workflow.ExecuteActivity(step("read the job's histories"), erasure.ReadJobTrail, id).Get(ctx, &trail); err != nil {
		return err
	}
	// Files and histories first: a vendor's delete may be retried for a
	// day, and they must be gone within a minute.
	if err := workflow.ExecuteActivity(step("delete the job's files"), erasure.DeleteJobFiles, id).Get(ctx, nil); err != nil {
		return err
	}
	if err := workflow.ExecuteActivity(step("delete the job's workflow runs"), erasure.DeleteJobRuns, id, trail.Runs).Get(ctx, nil); err != nil {
		return err
	}
	copies := purgeVendorCopies(ctx, in, trail)
	if err := workflow.ExecuteActivity(step("record the erasure"), erasure.FinishErasure, id, copies).Get(ctx, nil); err != nil {
		return err
	}
	webhook := trail.Webhook
	if webhook == nil {
		// A job deleted pending, whose workflow never ran.
		webhook = in.Webhook
	}
	if webhook == nil {
		return nil
	}
	tomb := in.Tombstone
	tomb.VendorCopies = jobs.VendorCopiesJSON(copies)
	svc := jobs.MustService(tomb.Service)
	opts := deletedEventOptions
	opts.Summary = "deliver " + jobs.EventName(svc, jobs.EventDeleted)
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), webhooks.DeliverWebhook, activities.WebhookDelivery{
		Target:    *webhook,
		Event:     jobs.EventName(svc, jobs.EventDeleted),
		MessageID: id + "-deleted",
		Job:       jobs.Snapshot{ID: id, Service: tomb.Service, Tenant: tomb.Tenant},
		Deleted:   &tomb,
	}).Get(ctx, nil)
	if err != nil {
		// Given up, as any event after its retry window: the delivery log
		// shows the attempts.
		workflow.GetLogger(ctx).Warn("job's deleted event given up", "job", id, "error", err)
	}
	return nil
}

// purgeVendorCopies deletes each vendor's copy of the job's work: by its
// handle for work handed to an asynchronous provider, and as the adapter
// declares for the other providers its attempts went to.
func purgeVendorCopies(ctx workflow.Context, in DeletionInput, trail activities.JobTrail) []jobs.VendorCopy {
	work := append([]activities.VendorWork(nil), trail.Submitted...)
	handled := map[string]bool{}
	for _, w := range trail.Submitted {
		handled[w.ProviderID] = true
	}
	for _, p := range in.Tombstone.Providers() {
		if !handled[p] {
			handled[p] = true
			work = append(work, activities.VendorWork{ProviderID: p, Service: in.Tombstone.Service})
		}
	}
	var copies []jobs.VendorCopy
	for _, w := range work {
		opts := purgeOptions
		opts.Summary = fmt.Sprintf("purge %s's copy", w.ProviderID)
		var outcome string
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), erasure.PurgeVendorCopy, w).Get(ctx, &outcome)
		if err != nil {
			outcome = jobs.VendorCopyFailed
		}
		copies = append(copies, jobs.VendorCopy{Provider: w.ProviderID, Outcome: outcome})
	}
	return copies
}
