package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// CompleteInput is a short provider call of a job whose processing state
// the workflow has not projected (generation 3, docs/operations.md,
// Replaying histories): Job is that state.
type CompleteInput struct {
	Call CallInput     `json:"call"`
	Job  jobs.Snapshot `json:"job"`
}

// CompletedCall is a call's output and, when Projected, when the job
// completed as CallAndComplete projected it.
type CompletedCall struct {
	CallOutput
	CompletedAt time.Time `json:"completed_at"`
	Projected   bool      `json:"projected"`
}

// projectionMargin is how long before its local activity's deadline
// CallAndComplete's projection must end.
const projectionMargin = time.Second

// CallAndComplete runs a short call and, when it succeeds, projects the
// job as completed: one local activity where CallProvider and SaveJob
// are two. A failed call is CallProvider's failure, and nothing is
// projected. A projection that fails is left to the workflow
// (Projected false), which retries it as SaveJob: the call is not made
// again.
func (c *ProviderCalls) CallAndComplete(ctx context.Context, in CompleteInput) (CompletedCall, error) {
	out, err := c.CallProvider(ctx, in.Call)
	if err != nil {
		return CompletedCall{}, err
	}
	done := CompletedCall{CallOutput: out, CompletedAt: time.Now().UTC()}
	if deadline, ok := ctx.Deadline(); ok {
		// Past the activity's deadline the workflow takes the call for
		// failed and makes it again: the projection ends well before it,
		// or is left to the workflow.
		if time.Until(deadline) < 2*projectionMargin {
			return done, nil
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-projectionMargin))
		defer cancel()
	}
	job := in.Job
	job.WorkerID, job.ResultFile = out.WorkerID, out.ResultFile
	job.Complete(out.Result, done.CompletedAt)
	job.Revision++ // the workflow's transition to completed takes the same
	if err := c.Projections.SaveJob(ctx, job); err != nil {
		activity.GetLogger(ctx).Warn("completed job not projected; its workflow projects it", "job", in.Call.JobID, "error", err)
		return done, nil
	}
	done.Projected = true
	return done, nil
}
