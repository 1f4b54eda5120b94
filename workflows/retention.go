package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
)

// The retention sweep (docs/operations.md, Retention): a Temporal
// Schedule starts RetentionWorkflow every hour.
const (
	RetentionWorkflowName = "RetentionWorkflow"
	// RetentionScheduleID is the schedule's id.
	RetentionScheduleID = "gateway-retention"
	// RetentionWorkflowID is the workflow id of its runs (the schedule
	// appends the time).
	RetentionWorkflowID = "gateway-retention-sweep"
	// RetentionEvery is how often it runs.
	RetentionEvery = time.Hour
)

// Batches of the sweep: each activity call handles retentionBatch jobs,
// and a run that made retentionBatchesPerRun calls continues as new.
const (
	retentionBatch         = 500
	retentionBatchesPerRun = 200
)

// RetentionInput is a sweep's input.
type RetentionInput struct {
	// Now is the time the sweep expires things at; zero: when the run
	// started. Set by tests and runs continued as new.
	Now time.Time `json:"now"`
	// Counts are what the runs before this one (continued as new) expired.
	Counts RetentionCounts `json:"counts"`
}

// RetentionCounts are what a sweep expired.
type RetentionCounts struct {
	// Jobs deleted, Results erased and Erasures started again.
	Jobs     int `json:"jobs"`
	Results  int `json:"results"`
	Erasures int `json:"erasures"`
}

var retention *activities.Retention

// retentionOptions: each batch is short and idempotent; a sweep whose
// batch keeps failing fails, and the next hour's sweeps again.
var retentionOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Minute,
	HeartbeatTimeout:    time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5,
	},
}

// RetentionWorkflow expires what tenants' retention no longer keeps
// (docs/api.md, Retention): it deletes the jobs past their jobs retention
// (as DELETE does), erases the results and files of those past their
// results retention, and starts again the erasures of deleted jobs that
// did not finish, each in batches until none is left.
func RetentionWorkflow(ctx workflow.Context, in RetentionInput) (RetentionCounts, error) {
	now := in.Now
	if now.IsZero() {
		now = workflow.Now(ctx)
	}
	counts := in.Counts
	// Expired jobs and results leave the selection once handled, so
	// their steps run until a batch is not full; an erasure may run for
	// long (a vendor's outage) and be selected again, so that step runs
	// one batch a sweep.
	steps := []struct {
		summary string
		run     any
		count   *int
		once    bool
	}{
		{"delete expired jobs", retention.ExpireJobs, &counts.Jobs, false},
		{"erase expired results", retention.ExpireResults, &counts.Results, false},
		{"restart unfinished erasures", retention.RestartErasures, &counts.Erasures, true},
	}
	calls := 0
	for _, step := range steps {
		opts := retentionOptions
		opts.Summary = step.summary
		actx := workflow.WithActivityOptions(ctx, opts)
		for {
			if calls == retentionBatchesPerRun {
				return counts, workflow.NewContinueAsNewError(ctx, RetentionWorkflowName, RetentionInput{Now: now, Counts: counts})
			}
			calls++
			var out activities.RetentionBatchResult
			err := workflow.ExecuteActivity(actx, step.run, activities.RetentionBatch{Now: now, Limit: retentionBatch}).Get(ctx, &out)
			if err != nil {
				recordSweep(ctx, "failed")
				return counts, err
			}
			*step.count += out.Expired
			if out.Selected < retentionBatch || step.once {
				break
			}
		}
	}
	recordSweep(ctx, "ok")
	workflow.GetLogger(ctx).Info("retention sweep", "jobs", counts.Jobs, "results", counts.Results, "erasures", counts.Erasures)
	return counts, nil
}

// recordSweep counts the sweep in the worker's metrics; a failure to
// count is only logged.
func recordSweep(ctx workflow.Context, outcome string) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second, Summary: "count the sweep",
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	if err := workflow.ExecuteActivity(ctx, retention.RecordRetentionSweep, outcome).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("retention sweep not counted", "error", err)
	}
}
