package jobops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// ErrNotRetryable: only a failed job whose workflow ran can be retried.
var ErrNotRetryable = errors.New("the job cannot be retried")

// Retry runs a failed job again under its own id (docs/operations.md,
// Retrying jobs): a new run of its workflow, with the job's original
// submission, that keeps its routing history and continues its attempt
// numbers. The job goes back to pending, then through the media stage and
// routing as a new job would; clients see it by polling and by its
// webhook's events. It returns the job as it is once the retry started.
func (s *Service) Retry(ctx context.Context, job *jobs.Record) (*jobs.Record, error) {
	if job.Status != jobs.StatusFailed {
		return nil, refuse(ErrNotRetryable, "job %s is %s; only failed jobs are retried", job.ID, job.Status)
	}
	if job.ErrorCode == jobs.CodeNotStarted {
		return nil, refuse(ErrNotRetryable, "job %s never started (%s): submit it again", job.ID, job.ErrorCode)
	}
	sub, priority, err := s.submission(ctx, job.ID, ErrNotRetryable)
	if err != nil {
		return nil, err
	}
	var history []jobs.RoutingInfo
	if job.RoutingHistory != "" {
		if err := json.Unmarshal([]byte(job.RoutingHistory), &history); err != nil {
			return nil, fmt.Errorf("job %s: read its routing history: %w", job.ID, err)
		}
	}
	sub.Retry = &jobs.Retry{RoutingHistory: history, Revision: job.Revision, Error: job.Failure()}
	sub.Generation = s.cfg.Generation // a new run
	opts := startOptions(sub, priority, false)
	// The one start of a job's workflow that follows a finished run.
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL
	run, err := s.cfg.Temporal.ExecuteWorkflow(ctx, opts, workflows.JobWorkflowName, sub)
	var running *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &running) {
		return nil, refuse(ErrNotRetryable, "job %s is running again already", job.ID)
	}
	if err != nil {
		s.cfg.Logger.Error("start the retry of a job", "job", job.ID, "error", err)
		return nil, refuse(ErrUnavailable, "the retry of job %s could not be started now; retry it", job.ID)
	}
	s.cfg.Logger.Info("job retried", "job", job.ID, "run", run.GetRunID(), "failed_with", job.ErrorCode)
	s.audit(ctx, store.AuditEntry{Tenant: job.Tenant, Action: "job.retry", Target: "job/" + job.ID,
		Before: map[string]any{"status": job.Status, "error_code": job.ErrorCode}, After: map[string]any{"status": jobs.StatusPending}})
	return job, nil
}

// submission is the job's original submission and start priority, as the
// first event of its workflow's latest run records them; a job without a
// history is refused as kind.
func (s *Service) submission(ctx context.Context, id string, kind error) (jobs.Submission, int, error) {
	iter := s.cfg.Temporal.GetWorkflowHistory(ctx, workflows.JobWorkflowID(id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !iter.HasNext() {
		return jobs.Submission{}, 0, refuse(kind, "job %s has no workflow history (retention may have removed it)", id)
	}
	event, err := iter.Next()
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return jobs.Submission{}, 0, refuse(kind, "job %s has no workflow history (retention may have removed it)", id)
		}
		s.cfg.Logger.Error("read a job's workflow history", "job", id, "error", err)
		return jobs.Submission{}, 0, refuse(ErrUnavailable, "job %s: its workflow history cannot be read now; try again", id)
	}
	started := event.GetWorkflowExecutionStartedEventAttributes()
	if started == nil || len(started.GetInput().GetPayloads()) == 0 {
		return jobs.Submission{}, 0, fmt.Errorf("job %s: its workflow history does not start with its submission", id)
	}
	var sub jobs.Submission
	if err := s.dataConverter().FromPayload(started.GetInput().GetPayloads()[0], &sub); err != nil {
		if errors.Is(err, payloadcodec.ErrSecretUnavailable) {
			s.cfg.Logger.Error("read the payload secret of a job's workflow history", "job", id, "error", err)
			return jobs.Submission{}, 0, refuse(ErrUnavailable, "job %s: its workflow history cannot be decrypted now; try again", id)
		}
		if undecryptable(err) {
			s.cfg.Logger.Warn("a job's workflow history does not decrypt with this process's payload keys", "job", id, "error", err)
			return jobs.Submission{}, 0, refuse(ErrPayloadUndecryptable, "job %s: its workflow history cannot be decrypted with this server's payload keys", id)
		}
		return jobs.Submission{}, 0, fmt.Errorf("job %s: read its submission: %w", id, err)
	}
	return sub, int(started.GetPriority().GetPriorityKey()), nil
}

// dataConverter reads payloads of job workflows' histories.
func (s *Service) dataConverter() converter.DataConverter {
	if s.cfg.DataConverter != nil {
		return s.cfg.DataConverter
	}
	return converter.GetDefaultDataConverter()
}
