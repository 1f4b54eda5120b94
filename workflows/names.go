// Package workflows holds the gateway's Temporal workflows: one JobWorkflow
// per job, whose workflow id is the job id, and the DeletionWorkflow,
// RetentionWorkflow, WebhookResendWorkflow and BatchFileWorkflow around it.
// Changes that running jobs could notice are guarded by a change id or a
// generation (docs/workflow-versions.md).
package workflows

// TaskQueue is the task queue of the gateway's workers.
const TaskQueue = "ai-job-gateway"

// JobWorkflowName is the registered name of JobWorkflow.
const JobWorkflowName = "JobWorkflow"

// StateQuery is the query that returns a job's current snapshot.
const StateQuery = "state"

// JobWorkflowID is the workflow id of a job: the job id itself, so an
// operator can paste a job id into the Temporal UI.
func JobWorkflowID(jobID string) string { return jobID }
