package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
)

// BatchFileWorkflowName is the registered name of BatchFileWorkflow.
const BatchFileWorkflowName = "BatchFileWorkflow"

// BatchFileWorkflowID is the workflow id of a file batch's reading.
func BatchFileWorkflowID(batchID string) string { return "batch-file-" + batchID }

var batchFiles *activities.BatchFiles

// The reading resumes where an attempt stopped (each chunk of items is
// recorded once), retried for an hour; then the batch fails.
var (
	batchFileOptions = workflow.ActivityOptions{
		StartToCloseTimeout:    30 * time.Minute,
		HeartbeatTimeout:       time.Minute,
		ScheduleToCloseTimeout: time.Hour,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		},
	}
	batchFileFailOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		},
	}
)

// BatchFileWorkflow reads the items of a file batch into it (docs/api.md,
// Batches).
func BatchFileWorkflow(ctx workflow.Context, batchID string) error {
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, batchFileOptions), batchFiles.ReadBatchFile, batchID).Get(ctx, nil)
	if err == nil {
		return nil
	}
	workflow.GetLogger(ctx).Error("batch file not read", "batch", batchID, "error", err)
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, batchFileFailOptions), batchFiles.FailBatchFile,
		batchID, "the file could not be read into the batch in an hour; create it again with another Idempotency-Key").Get(ctx, nil)
}
