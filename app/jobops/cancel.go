package jobops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/workflows"
)

// cancelWait bounds how long Cancel waits for the workflow to record the
// cancellation.
const cancelWait = 5 * time.Second

// Cancel cancels a job, as its caller read it (the API checks the caller
// may see it), and returns it as it is then: usually failed with
// CANCELLED, as the workflow records the cancellation within cancelWait.
// A finished job is ErrJobFinished. A pending job's workflow may not be
// started yet: Cancel starts it first, so that it ends the job as
// cancelled and tells the webhook.
func (s *Service) Cancel(ctx context.Context, job *jobs.Record) (*jobs.Record, error) {
	if job.Terminal() {
		return nil, finished(job)
	}
	if job.Status == jobs.StatusPending {
		if err := s.cfg.Starts.StartNow(ctx, job.ID); err != nil {
			// A start refused for good fails the job: it is finished.
			if fresh, gerr := s.cfg.Jobs.GetJob(ctx, job.ID); gerr == nil && fresh.Terminal() {
				return nil, finished(fresh)
			}
			s.cfg.Logger.Error("start job workflow to cancel it", "job", job.ID, "error", err)
			return nil, refuse(ErrUnavailable, "the job could not be cancelled now; retry the request")
		}
	}
	workflowID := workflows.JobWorkflowID(job.ID)
	if err := s.cfg.Temporal.CancelWorkflow(ctx, workflowID, ""); err != nil && !isNotFound(err) {
		return nil, fmt.Errorf("cancel the workflow of job %s: %w", job.ID, err)
	}
	wait, cancel := context.WithTimeout(ctx, cancelWait)
	defer cancel()
	_ = s.cfg.Temporal.GetWorkflow(wait, workflowID, "").Get(wait, nil)
	if fresh, err := s.cfg.Jobs.GetJob(ctx, job.ID); err == nil {
		return fresh, nil
	}
	return job, nil
}

func finished(job *jobs.Record) *Error {
	return refuse(ErrJobFinished, "job %s already %s", job.ID, job.Status)
}

// isNotFound reports a workflow that no longer runs (it finished between
// the caller's read and the cancel request).
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
