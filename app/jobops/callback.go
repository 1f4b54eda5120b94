package jobops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// callbackSignalTimeout bounds the signal that wakes a job's workflow to
// read a vendor's post.
const callbackSignalTimeout = 2 * time.Second

// CallbackTokens checks the token of a vendor callback
// (*vendorcallback.Tokens is one).
type CallbackTokens interface {
	Valid(jobID string, attempt int, token string) bool
}

// CallbackStore keeps what vendors post back.
type CallbackStore interface {
	SaveProviderCallback(ctx context.Context, jobID string, attempt int, body []byte, at time.Time) error
}

// CheckProviderCallback refuses a post this gateway takes no callbacks
// for, or whose token is not that of the job's attempt. It reads nothing,
// so the API calls it before it reads the post's body.
func (s *Service) CheckProviderCallback(jobID string, attempt int, token string) error {
	if s.cfg.CallbackTokens == nil || s.cfg.Callbacks == nil {
		return refuse(ErrUnknownJob, "this gateway takes no vendor callbacks")
	}
	if attempt < 1 || !s.cfg.CallbackTokens.Valid(jobID, attempt, token) {
		return refuse(ErrCallbackToken, "query parameter token: not the token of job %s, attempt %d", jobID, attempt)
	}
	return nil
}

// ReceiveProviderCallback keeps what a vendor posted back about an attempt
// of a job, then wakes the job's workflow to read it (docs/providers.md,
// Vendor callbacks). The token is checked before the job is looked up, so
// a post with a wrong token learns nothing about which jobs exist.
func (s *Service) ReceiveProviderCallback(ctx context.Context, jobID string, attempt int, token string, body []byte) error {
	if err := s.CheckProviderCallback(jobID, attempt, token); err != nil {
		return err
	}
	job, err := s.cfg.Jobs.GetJob(ctx, jobID)
	if errors.Is(err, store.ErrNotFound) {
		return refuse(ErrUnknownJob, "no job with id %s", jobID)
	}
	if err != nil {
		s.cfg.Logger.Error("read the job of a provider callback", "job", jobID, "error", err)
		return refuse(ErrUnavailable, "the callback could not be taken now; post it again")
	}
	if job.Terminal() {
		return finished(job)
	}
	if err := s.cfg.Callbacks.SaveProviderCallback(ctx, jobID, attempt, body, s.cfg.Now()); err != nil {
		s.cfg.Logger.Error("keep a provider callback", "job", jobID, "error", err)
		return refuse(ErrUnavailable, "the callback could not be taken now; post it again")
	}
	// Kept: the workflow's next check reads it even if this signal is
	// lost, so a failed signal is only logged.
	// Briefly: while Temporal is away the post is kept all the same, and
	// must not hold the vendor (or a callback slot) waiting.
	signalCtx, cancel := context.WithTimeout(ctx, callbackSignalTimeout)
	defer cancel()
	if err := s.cfg.Temporal.SignalWorkflow(signalCtx, workflows.JobWorkflowID(jobID), "", workflows.ProviderCallbackSignal, attempt); err != nil && !isNotFound(err) {
		s.cfg.Logger.Warn("signal a provider callback to the job's workflow", "job", jobID, "error", fmt.Sprint(err))
	}
	return nil
}
