package activities

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/providers"
)

// Providers that work asynchronously (docs/providers.md, Asynchronous
// providers) are called in two steps: SubmitToProvider hands the job over,
// then the workflow runs CheckProvider on durable timers until the
// provider is done. No worker holds the job in between.

// AsyncCalls run jobs on asynchronous providers.
type AsyncCalls struct {
	Providers *providers.Registry
	// Projections keeps the job's projected progress up to date.
	Projections *Projections
	// Files holds the media calls read and the result files they write.
	Files Blobs
	// CallbackURLs makes the addresses vendors post results back to
	// (docs/providers.md, Vendor callbacks); nil: this gateway takes no
	// callbacks. Callbacks reads what they posted.
	CallbackURLs CallbackAddresses
	Callbacks    CallbackStore
	// WorkerID identifies this worker process in job metadata.
	WorkerID string
	// HeartbeatInterval is how often a submission records a heartbeat
	// (default: half its heartbeat timeout).
	HeartbeatInterval time.Duration
	// Metrics times the calls; nil records none.
	Metrics *metrics.Metrics
	// Breakers counts how submissions end, and checks that fail; nil
	// counts none.
	Breakers *Breakers
	// Tombstones tells a deleted job, which is not submitted; nil checks
	// none.
	Tombstones TombstoneReader
}

// CallbackAddresses makes the callback address of a job's attempt
// (*vendorcallback.Addresses is one).
type CallbackAddresses interface {
	URL(jobID string, attempt int) string
}

// CallbackStore reads what vendors posted back about jobs, and sweeps
// what no workflow read.
type CallbackStore interface {
	ProviderCallback(ctx context.Context, jobID string, attempt int) (body []byte, ok bool, err error)
	DeleteProviderCallbacksBefore(ctx context.Context, t time.Time) (int64, error)
}

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
func (c *AsyncCalls) SubmitToProvider(ctx context.Context, in CallInput) (SubmitOutput, error) {
	submitter, provider, err := c.submitter(in.ProviderID)
	if err != nil {
		return SubmitOutput{}, err
	}
	stop := heartbeat(ctx, c.HeartbeatInterval, new(atomic.Int64))
	defer stop()
	call, done, err := c.Files.withMedia(ctx, in)
	if err != nil {
		return SubmitOutput{}, err
	}
	defer done()
	call.JobID, call.Service, call.Provider, call.Input, call.Options = in.JobID, in.Service, provider, in.Input, in.Options
	if c.CallbackURLs != nil && in.Attempt > 0 {
		call.CallbackURL = c.CallbackURLs.URL(in.JobID, in.Attempt)
	}
	if err := refuseDeleted(ctx, c.Tombstones, in); err != nil {
		return SubmitOutput{}, err
	}
	started := time.Now()
	callCtx, cancel := withCallTimeout(ctx, provider)
	defer cancel()
	handle, err := submitter.Submit(callCtx, call)
	err = timedOut(ctx, callCtx, provider, err)
	c.Breakers.record(ctx, in.ProviderID, in.Service, err)
	if err != nil {
		c.Metrics.ProviderCall(string(in.Service), in.ProviderID, outcome(ctx, err), time.Since(started))
		return SubmitOutput{}, failedCall(ctx, err)
	}
	return SubmitOutput{Handle: handle, WorkerID: c.WorkerID}, nil
}

// CheckProvider asks an asynchronous provider about submitted work. When
// the work is done, the result is finished as CallProvider's is (result
// files); while it is not, the job's progress is projected.
func (c *AsyncCalls) CheckProvider(ctx context.Context, in CheckInput) (CheckOutput, error) {
	submitter, provider, err := c.submitter(in.Call.ProviderID)
	if err != nil {
		return CheckOutput{}, err
	}
	stop := heartbeat(ctx, c.HeartbeatInterval, new(atomic.Int64))
	defer stop()
	call := providers.Call{JobID: in.Call.JobID, Service: in.Call.Service, Provider: provider,
		Input: in.Call.Input, Options: in.Call.Options, Submitted: in.Since}
	if c.Callbacks != nil && in.Call.Attempt > 0 {
		body, ok, err := c.Callbacks.ProviderCallback(ctx, in.Call.JobID, in.Call.Attempt)
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
		c.Breakers.record(ctx, in.Call.ProviderID, in.Call.Service, err)
		c.Metrics.ProviderCall(string(in.Call.Service), in.Call.ProviderID, outcome(ctx, err), time.Since(in.Since))
		return CheckOutput{}, failedCall(ctx, err)
	}
	if !check.Done {
		if check.Progress > 0 && check.Progress < 100 {
			if err := c.Projections.updateProgress(ctx, in.Call.JobID, check.Progress); err != nil {
				activity.GetLogger(ctx).Warn("progress not projected", "job", in.Call.JobID, "error", err)
			}
		}
		return CheckOutput{Progress: check.Progress, Wait: check.Wait}, nil
	}
	c.Metrics.ProviderCall(string(in.Call.Service), in.Call.ProviderID, "ok", time.Since(in.Since))
	out := CallOutput{Result: check.Result, WorkerID: c.WorkerID}
	if err := c.Files.finishResult(ctx, in.Call, call, &out); err != nil {
		return CheckOutput{}, err
	}
	// The post stays until the sweep: deleting it here would lose it if
	// this activity's completion were never recorded and it ran again.
	return CheckOutput{Done: true, Output: out}, nil
}

func (c *AsyncCalls) submitter(providerID string) (providers.Submitter, *providers.Provider, error) {
	submitter, ok := c.Providers.Submitter(providerID)
	if !ok {
		return nil, nil, temporal.NewNonRetryableApplicationError(
			"provider "+providerID+" is not an asynchronous provider of this worker's catalog", ErrTypeProviderRejected, nil)
	}
	provider, _ := c.Providers.Catalog().Lookup(providerID)
	return submitter, provider, nil
}

// submits reports whether the provider's adapter works asynchronously.
func submits(registry *providers.Registry, providerID string) bool {
	_, ok := registry.Submitter(providerID)
	return ok
}
