package jobops

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// Delete deletes a job, as its caller read it (the API checks the caller
// may see it), on behalf of by (a user, or jobs.DeletedByRetention), and
// returns its tombstone (docs/api.md, Deleting a job). The store's part
// is done at once: the job's content is gone from every table and the
// job answers as deleted. What lies outside the store (a running
// workflow, the workflow's histories, the job's files, vendors' copies)
// is erased by the job's DeletionWorkflow, started here; if it cannot be
// started now, the retention sweep starts it later. A job deleted
// already is ErrJobDeleted.
func (s *Service) Delete(ctx context.Context, job *jobs.Record, by string) (*jobs.Tombstone, error) {
	now := time.Now
	if s.cfg.Now != nil {
		now = s.cfg.Now
	}
	webhook := s.pendingWebhook(ctx, job)
	// The retention sweep deletes the job as it found it: not one whose
	// retry started meanwhile.
	revision := 0
	if by == jobs.DeletedByRetention {
		revision = job.Revision
	}
	before, tomb, err := s.cfg.Jobs.DeleteJobIf(ctx, job.ID, by, now(), revision)
	switch {
	case errors.Is(err, store.ErrDeleted):
		return nil, refuse(ErrJobDeleted, "job %s was deleted", job.ID)
	case errors.Is(err, store.ErrNotFound):
		return nil, refuse(ErrUnknownJob, "no job with id %s", job.ID)
	case err != nil:
		return nil, err
	}
	if err := s.startErasure(ctx, workflows.DeletionInput{Tombstone: *tomb, StartMayFollow: before.Status == jobs.StatusPending, Webhook: webhook}); err != nil {
		s.cfg.Logger.Warn("job deleted; its erasure starts with the next retention sweep", "job", job.ID, "error", err)
	}
	s.cfg.Logger.Info("job deleted", "job", job.ID, "tenant", job.Tenant, "by", by)
	return tomb, nil
}

// StartErasure starts the DeletionWorkflow of a deleted job unless it
// runs: once by Delete, again by the retention sweep for a tombstone whose
// erasure did not finish. pending says the job was deleted pending, when
// its workflow's start may still be made.
func (s *Service) StartErasure(ctx context.Context, tomb *jobs.Tombstone, pending bool) error {
	return s.startErasure(ctx, workflows.DeletionInput{Tombstone: *tomb, StartMayFollow: pending})
}

func (s *Service) startErasure(ctx context.Context, in workflows.DeletionInput) error {
	_, err := s.cfg.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.DeletionWorkflowID(in.Tombstone.ID),
		TaskQueue:                workflows.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "erase deleted job " + in.Tombstone.ID,
	}, workflows.DeletionWorkflowName, in)
	return err
}

// pendingWebhook is the webhook of a pending job, read from its start in
// the outbox (its workflow may never run); nil otherwise.
func (s *Service) pendingWebhook(ctx context.Context, job *jobs.Record) *jobs.Webhook {
	if job.Status != jobs.StatusPending {
		return nil
	}
	start, err := s.cfg.Jobs.GetJobStart(ctx, job.ID)
	if err != nil {
		return nil
	}
	var sub jobs.Submission
	if json.Unmarshal([]byte(start.Input), &sub) != nil {
		return nil
	}
	return sub.Webhook
}
