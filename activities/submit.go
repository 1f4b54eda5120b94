package activities

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/providers"
)

// Providers that work asynchronously (docs/providers.md, Asynchronous
// providers) are called in two steps: SubmitToProvider hands the job over,
// then the workflow runs CheckProvider on durable timers until the
// provider is done. No worker holds the job in between.

// SubmitOutput is the provider's handle of the submitted work.
type SubmitOutput struct {
	Handle   string `json:"handle"`
	WorkerID string `json:"worker_id"`
}

// CheckInput asks about submitted work.
type CheckInput struct {
	Call   CallInput `json:"call"`
	Handle string    `json:"handle"`
	// Since is when the work was submitted, for the provider-call metric.
	Since time.Time `json:"since"`
}

// CheckOutput is what the provider said: done with the call's output, or
// its progress and when to ask again.
type CheckOutput struct {
	Done     bool          `json:"done"`
	Output   CallOutput    `json:"output"`
	Progress int           `json:"progress,omitempty"`
	Wait     time.Duration `json:"wait,omitempty"`
}

// SubmitToProvider hands the job to an asynchronous provider.
func (a *Activities) SubmitToProvider(ctx context.Context, in CallInput) (SubmitOutput, error) {
	submitter, provider, err := a.submitter(in.ProviderID)
	if err != nil {
		return SubmitOutput{}, err
	}
	stop := a.heartbeat(ctx, new(atomic.Int64))
	defer stop()
	call, done, err := a.withMedia(ctx, in)
	if err != nil {
		return SubmitOutput{}, err
	}
	defer done()
	call.JobID, call.Service, call.Provider, call.Input, call.Options = in.JobID, in.Service, provider, in.Input, in.Options
	if a.CallbackURLs != nil && in.Attempt > 0 {
		call.CallbackURL = a.CallbackURLs.URL(in.JobID, in.Attempt)
	}
	started := time.Now()
	callCtx, cancel := withCallTimeout(ctx, provider)
	defer cancel()
	handle, err := submitter.Submit(callCtx, call)
	err = timedOut(ctx, callCtx, provider, err)
	if err != nil {
		a.Metrics.ProviderCall(string(in.Service), in.ProviderID, outcome(ctx, err), time.Since(started))
		return SubmitOutput{}, classify(err)
	}
	return SubmitOutput{Handle: handle, WorkerID: a.WorkerID}, nil
}

// CheckProvider asks an asynchronous provider about submitted work. When
// the work is done, the result is finished as CallProvider's is (result
// files); while it is not, the job's progress is projected.
func (a *Activities) CheckProvider(ctx context.Context, in CheckInput) (CheckOutput, error) {
	submitter, provider, err := a.submitter(in.Call.ProviderID)
	if err != nil {
		return CheckOutput{}, err
	}
	call := providers.Call{JobID: in.Call.JobID, Service: in.Call.Service, Provider: provider,
		Input: in.Call.Input, Options: in.Call.Options, Submitted: in.Since}
	if a.Callbacks != nil && in.Call.Attempt > 0 {
		body, ok, err := a.Callbacks.ProviderCallback(ctx, in.Call.JobID, in.Call.Attempt)
		if err != nil {
			return CheckOutput{}, fmt.Errorf("read the provider's callback: %w", err)
		}
		if ok {
			call.Callback = body
		}
	}
	callCtx, cancel := withCallTimeout(ctx, provider)
	defer cancel()
	check, err := submitter.Check(callCtx, call, in.Handle)
	err = timedOut(ctx, callCtx, provider, err)
	if err != nil {
		a.Metrics.ProviderCall(string(in.Call.Service), in.Call.ProviderID, outcome(ctx, err), time.Since(in.Since))
		return CheckOutput{}, classify(err)
	}
	if !check.Done {
		if check.Progress > 0 && check.Progress < 100 {
			if err := a.updateProgress(ctx, in.Call.JobID, check.Progress); err != nil {
				activity.GetLogger(ctx).Warn("progress not projected", "job", in.Call.JobID, "error", err)
			}
		}
		return CheckOutput{Progress: check.Progress, Wait: check.Wait}, nil
	}
	a.Metrics.ProviderCall(string(in.Call.Service), in.Call.ProviderID, "ok", time.Since(in.Since))
	out := CallOutput{Result: check.Result, WorkerID: a.WorkerID}
	if err := a.finishResult(ctx, in.Call, call, &out); err != nil {
		return CheckOutput{}, err
	}
	// The post stays until the sweep: deleting it here would lose it if
	// this activity's completion were never recorded and it ran again.
	return CheckOutput{Done: true, Output: out}, nil
}

// callbackAge is when a vendor's post is swept: a waiting workflow reads
// a post within a minute, and a post stays until then so that a check
// that runs again still finds it (docs/providers.md, Vendor callbacks).
const callbackAge = 24 * time.Hour

// SweepProviderCallbacks removes vendors' posts older than callbackAge and
// returns how many it removed. One worker of the deployment runs it each
// round (docs/operations.md, Housekeeping).
func (a *Activities) SweepProviderCallbacks(ctx context.Context, now time.Time) (int, error) {
	if a.Callbacks == nil {
		return 0, nil
	}
	n, err := a.Callbacks.DeleteProviderCallbacksBefore(ctx, now.Add(-callbackAge))
	return int(n), err
}

func (a *Activities) submitter(providerID string) (providers.Submitter, *providers.Provider, error) {
	submitter, ok := a.Providers.Submitter(providerID)
	if !ok {
		return nil, nil, temporal.NewNonRetryableApplicationError(
			"provider "+providerID+" is not an asynchronous provider of this worker's catalog", ErrTypeProviderRejected, nil)
	}
	provider, _ := a.Providers.Catalog().Lookup(providerID)
	return submitter, provider, nil
}

// submits reports whether the provider's adapter works asynchronously.
func (a *Activities) submits(providerID string) bool {
	_, ok := a.Providers.Submitter(providerID)
	return ok
}
