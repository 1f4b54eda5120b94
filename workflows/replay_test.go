package workflows_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/workflows"
)

// TestReplayRecordedHistories replays every recorded history in testdata/
// against the current JobWorkflow, DeletionWorkflow, WebhookResendWorkflow
// and BatchFileWorkflow: a change that would break running workflows
// (non-determinism) fails here. Histories are recorded by cmd/gateway's
// TestRecordHistories (job-*.json), TestRecordDeletionHistories
// (deletion-*.json), TestWebhookResendAndRecovery
// (job-v14-webhook-given-up.json, webhook-resend-*.json),
// TestRecordBatchFileHistories (batchfile-*.json) and, in this package,
// TestRecordDeletedBeforeCallHistories (job-v18-deleted-before-*.json),
// each with GATEWAY_RECORD_HISTORIES set; keep old ones when adding new.
func TestReplayRecordedHistories(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded histories in testdata/")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			replayer := worker.NewWorkflowReplayer()
			replayer.RegisterWorkflowWithOptions(workflows.JobWorkflow, workflow.RegisterOptions{Name: workflows.JobWorkflowName})
			replayer.RegisterWorkflowWithOptions(workflows.DeletionWorkflow, workflow.RegisterOptions{Name: workflows.DeletionWorkflowName})
			replayer.RegisterWorkflowWithOptions(workflows.WebhookResendWorkflow, workflow.RegisterOptions{Name: workflows.WebhookResendWorkflowName})
			replayer.RegisterWorkflowWithOptions(workflows.BatchFileWorkflow, workflow.RegisterOptions{Name: workflows.BatchFileWorkflowName})
			require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, file))
		})
	}
}
