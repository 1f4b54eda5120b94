package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// Error types of CallProvider failures, for the workflow to branch on.
const (
	// ErrTypeProviderUnavailable is a retryable failure (429, 5xx, timeout).
	ErrTypeProviderUnavailable = "ProviderUnavailable"
	// ErrTypeProviderRejected is a failure the provider marks permanent:
	// retrying the same provider is pointless, another may succeed.
	ErrTypeProviderRejected = "ProviderRejected"
	// ErrTypeInvalidInput is a failure of the job's input itself; the job
	// fails at once, with the jobs.Error in the details.
	ErrTypeInvalidInput = "InvalidInput"
	// ErrTypeJobDeleted: the job was deleted before its provider call,
	// which was not made; the job ends at once (docs/api.md, Deleting a
	// job).
	ErrTypeJobDeleted = "JobDeleted"
	// ErrTypeCallCancelled: the call's activity was cancelled (its job
	// was cancelled or deleted, or the worker stops).
	ErrTypeCallCancelled = "CallCancelled"
	// ErrTypeOutputInvalid: the provider answered, but not what the job's
	// response_format asks; the job fails over, and fails OUTPUT_INVALID
	// when no provider is left (docs/api.md, LLM tasks). The jobs.Error is
	// in the details.
	ErrTypeOutputInvalid = "OutputInvalid"
)

// ProgressSignal is the signal a provider call sends its job's workflow
// when progress advances (jobs with a webhook only), carrying the percentage.
const ProgressSignal = "progress"

// progressSignalStep is how far progress must advance between signals.
const progressSignalStep = 10

// CallInput is one provider call for a job.
type CallInput struct {
	JobID      string          `json:"job_id"`
	Service    jobs.ServiceID  `json:"service"`
	ProviderID string          `json:"provider_id"`
	Input      json.RawMessage `json:"input"`
	Options    json.RawMessage `json:"options,omitempty"`
	// SignalProgress asks for ProgressSignal signals, for *.progress events.
	SignalProgress bool `json:"signal_progress,omitempty"`
	// Media is the job's media as the media stage prepared it; nil
	// without media.
	Media *PreparedMedia `json:"media,omitempty"`
	// Attempt is the routing attempt (1 for the first provider), for the
	// callback address of asynchronous providers; 0 in histories recorded
	// before vendor callbacks.
	Attempt int `json:"attempt,omitempty"`
}

// PreparedMedia is what the media stage made of a job's media.
type PreparedMedia struct {
	// File is the audio track (transcriptions) or the fetched file.
	File MediaFile `json:"file"`
	// Duration is the media's length in seconds (0: not probed).
	Duration float64 `json:"duration,omitempty"`
	// Video describes the video, when the media has one.
	Video *jobs.VideoMetadata `json:"video,omitempty"`
	// SourceURL is the job's input.url, for naming result files.
	SourceURL string `json:"source_url,omitempty"`
}

// CallOutput is the provider's result.
type CallOutput struct {
	Result   json.RawMessage `json:"result"`
	WorkerID string          `json:"worker_id"`
	// ResultFile is the blob key of the result file, if the job has one.
	ResultFile string `json:"result_file,omitempty"`
}

// LatencyRecorder records how long a provider's calls take, for routing
// by latency (RoutingStore is one).
type LatencyRecorder interface {
	RecordLatency(ctx context.Context, providerID string, service jobs.ServiceID, d time.Duration) error
}

// ProviderCalls run jobs on providers that answer within the call
// (CallProvider); AsyncCalls takes the asynchronous ones.
type ProviderCalls struct {
	Providers *providers.Registry
	// Projections keeps the job's projected progress up to date.
	Projections *Projections
	// Files holds the media calls read and the result files they write.
	Files Blobs
	// Latencies records each call's duration; nil records none.
	Latencies LatencyRecorder
	// Temporal signals progress to job workflows (for *.progress events).
	Temporal client.Client
	// WorkerID identifies this worker process in job metadata.
	WorkerID string
	// HeartbeatInterval is how often a running call records a heartbeat
	// (default: half its heartbeat timeout).
	HeartbeatInterval time.Duration
	// Metrics times the calls; nil records none.
	Metrics *metrics.Metrics
	// Breakers counts how calls end; nil counts none.
	Breakers *Breakers
	// Tombstones tells a deleted job, whose call is not made; nil checks
	// none.
	Tombstones TombstoneReader
	// Deltas records the pieces of answers streamed for jobs that asked
	// (docs/api.md, Streamed answers); nil records none.
	Deltas DeltaWriter
}

// TombstoneReader reads a deleted job's tombstone; store.ErrNotFound for a
// job that was not deleted.
type TombstoneReader interface {
	GetTombstone(ctx context.Context, id string) (*jobs.Tombstone, error)
}

// CallProvider runs the job on the provider. It heartbeats its progress,
// resumes from the progress of an earlier attempt, and keeps the job's
// projected progress up to date.
func (c *ProviderCalls) CallProvider(ctx context.Context, in CallInput) (CallOutput, error) {
	adapter, ok := c.Providers.Adapter(in.ProviderID)
	if !ok {
		return CallOutput{}, temporal.NewNonRetryableApplicationError(
			"provider "+in.ProviderID+" is not in this worker's catalog", ErrTypeProviderRejected, nil)
	}
	provider, _ := c.Providers.Catalog().Lookup(in.ProviderID)

	var resumeFrom int
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &resumeFrom)
	}
	var progress atomic.Int64
	progress.Store(int64(resumeFrom))
	signaled := resumeFrom
	stop := heartbeat(ctx, c.HeartbeatInterval, &progress)
	defer stop()

	call, done, err := c.Files.withMedia(ctx, in)
	if err != nil {
		return CallOutput{}, err
	}
	defer done()

	if err := refuseDeleted(ctx, c.Tombstones, in); err != nil {
		return CallOutput{}, err
	}
	started := time.Now()
	callCtx, cancel := withCallTimeout(ctx, provider)
	defer cancel()
	var stream func(string)
	if deltas := streamOf(ctx, c.Deltas, in); deltas != nil {
		stream = deltas.add
		defer deltas.close()
	}
	result, err := adapter.Run(callCtx, providers.Call{
		Stream:     stream,
		Delegate:   c.delegate,
		Media:      call.Media,
		ResultFile: call.ResultFile,
		JobID:      in.JobID,
		Service:    in.Service,
		Provider:   provider,
		Input:      in.Input,
		Options:    in.Options,
		ResumeFrom: resumeFrom,
		Report: func(p int) {
			// 0 is what the job showed on entering processing, and 100
			// comes with the result: neither is worth a heartbeat or a
			// store write.
			if int64(p) <= progress.Load() || p >= 100 {
				return
			}
			progress.Store(int64(p))
			activity.RecordHeartbeat(ctx, p)
			if err := c.Projections.updateProgress(ctx, in.JobID, p); err != nil {
				activity.GetLogger(ctx).Warn("progress not projected", "job", in.JobID, "error", err)
			}
			if in.SignalProgress && c.Temporal != nil && p < 100 && p >= signaled+progressSignalStep {
				signaled = p
				if err := c.Temporal.SignalWorkflow(ctx, in.JobID, "", ProgressSignal, p); err != nil {
					activity.GetLogger(ctx).Warn("progress not signalled", "job", in.JobID, "error", err)
				}
			}
		},
	})
	err = timedOut(ctx, callCtx, provider, err)
	c.Metrics.ProviderCall(string(in.Service), in.ProviderID, outcome(ctx, err), time.Since(started))
	c.Breakers.record(ctx, in.ProviderID, in.Service, err)
	if err != nil {
		return CallOutput{}, failedCall(ctx, err)
	}
	if c.Latencies != nil && resumeFrom == 0 {
		// A resumed call's duration says nothing about the provider.
		if err := c.Latencies.RecordLatency(ctx, in.ProviderID, in.Service, time.Since(started)); err != nil {
			activity.GetLogger(ctx).Warn("latency not recorded", "provider", in.ProviderID, "error", err)
		}
	}
	if err := checkOutput(in, result); err != nil {
		return CallOutput{}, err
	}
	out := CallOutput{Result: result, WorkerID: c.WorkerID}
	if err := c.Files.finishResult(ctx, in, call, &out); err != nil {
		return CallOutput{}, err
	}
	return out, nil
}

// checkOutput checks an llm-task's answer against its options'
// response_format (docs/api.md, LLM tasks). An answer that does not match
// is a failure of the provider, not retried on it: the job fails over.
func checkOutput(in CallInput, result json.RawMessage) error {
	if in.Service != jobs.LLMTasks || len(in.Options) == 0 {
		return nil
	}
	var options jobs.LLMTaskOptions
	if err := json.Unmarshal(in.Options, &options); err != nil || options.ResponseFormat == nil {
		return nil // the job's options were validated at create
	}
	var answer jobs.LLMTaskResult
	err := json.Unmarshal(result, &answer)
	if err == nil {
		err = options.ResponseFormat.CheckOutput(answer.Content)
	} else {
		err = fmt.Errorf("%w: the result is not an llm-task result: %v", jobs.ErrOutputInvalid, err)
	}
	if err == nil {
		return nil
	}
	message := fmt.Sprintf("provider %s: %v", in.ProviderID, err)
	return temporal.NewNonRetryableApplicationError(message, ErrTypeOutputInvalid, err,
		jobs.Error{Code: jobs.CodeOutputInvalid, Message: message})
}

// refuseDeleted fails the call of a job deleted before it is made, for
// good: the provider is never called, and the job ends (docs/api.md,
// Deleting a job). A call whose deletion comes after this check is under
// way: the erasure finds it in the job's history and purges its
// provider's copy. So does it when the tombstone cannot be read, and the
// call goes ahead.
func refuseDeleted(ctx context.Context, tombstones TombstoneReader, in CallInput) error {
	if tombstones == nil {
		return nil
	}
	_, err := tombstones.GetTombstone(ctx, in.JobID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		activity.GetLogger(ctx).Warn("deletion not checked before the provider call", "job", in.JobID, "error", err)
		return nil
	}
	return temporal.NewApplicationErrorWithOptions(fmt.Sprintf("job %s was deleted before its call to %s", in.JobID, in.ProviderID),
		ErrTypeJobDeleted, temporal.ApplicationErrorOptions{NonRetryable: true, Category: temporal.ApplicationErrorCategoryBenign})
}

// failedCall is the error of a call that failed: classified, or, when
// its activity was cancelled, that cancellation, as benign: the SDK logs
// a benign failure at DEBUG where it logs any other at ERROR, and, as it
// wraps the context's error, reports the activity cancelled.
func failedCall(ctx context.Context, err error) error {
	if !errors.Is(ctx.Err(), context.Canceled) {
		return classify(err)
	}
	return temporal.NewApplicationErrorWithOptions("provider call cancelled", ErrTypeCallCancelled,
		temporal.ApplicationErrorOptions{Cause: ctx.Err(), Category: temporal.ApplicationErrorCategoryBenign})
}

// withCallTimeout bounds one try of a call to the provider by its
// call_timeout_seconds (docs/providers.md, The catalog file), whatever
// the provider does: hang, trickle, or never finish.
func withCallTimeout(ctx context.Context, p *providers.Provider) (context.Context, context.CancelFunc) {
	if p == nil || p.CallTimeoutSeconds <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Duration(p.CallTimeoutSeconds)*time.Second)
}

// timedOut turns the failure of a try that ran out of its call timeout
// into a retryable provider error: the try is repeated, then the job
// fails over.
func timedOut(ctx, callCtx context.Context, p *providers.Provider, err error) error {
	if err == nil || ctx.Err() != nil || !errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return err
	}
	return providers.Retryable(jobs.CodeProviderUnavailable,
		fmt.Sprintf("provider %q did not finish within its call_timeout_seconds (%d s)", p.ID, p.CallTimeoutSeconds), err)
}

// delegate runs a call an adapter hands on to another provider of the
// catalog, in the same activity (an asynchronous provider's whole call,
// submit and checks, included).
func (c *ProviderCalls) delegate(ctx context.Context, providerID string, call providers.Call) (json.RawMessage, error) {
	adapter, ok := c.Providers.Adapter(providerID)
	provider, _ := c.Providers.Catalog().Lookup(providerID)
	if !ok || provider == nil {
		return nil, providers.Permanent(jobs.CodeProviderRejected, "provider "+providerID+" is not in this worker's catalog", nil)
	}
	if provider.Services[call.Service] == nil {
		return nil, providers.Permanent(jobs.CodeUnsupportedService, fmt.Sprintf("provider %s does not offer %s", providerID, call.Service), nil)
	}
	call.Provider, call.Delegate = provider, nil
	return adapter.Run(ctx, call)
}

// ShortCall is the longest expected provider call the job workflow runs as
// a local activity, inside its workflow task, rather than as a heartbeating
// activity of its own.
const ShortCall = time.Second

// callsLocally reports whether the provider's adapter expects its calls to
// be short (see providers.DurationEstimator).
func callsLocally(registry *providers.Registry, providerID string) bool {
	d, ok := registry.ExpectedDuration(providerID)
	return ok && d <= ShortCall
}

// heartbeat keeps the call alive between progress reports, so a long step
// is not mistaken for a dead worker, beating every interval (0: half the
// heartbeat timeout). Local activities have no heartbeats.
//
// A timer, not a goroutine, waits between beats: with a thousand calls in
// flight that is a thousand fewer parked stacks. The SDK sends at most one
// heartbeat per 80 % of the heartbeat timeout and keeps the latest details
// for the end of that window, so beating every half timeout keeps a
// heartbeat in every window without recording details nobody sends.
func heartbeat(ctx context.Context, interval time.Duration, progress *atomic.Int64) (stop func()) {
	info := activity.GetInfo(ctx)
	if info.IsLocalActivity {
		return func() {}
	}
	if interval <= 0 {
		interval = info.HeartbeatTimeout / 2
	}
	if interval <= 0 {
		interval = time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu    sync.Mutex
		timer *time.Timer
	)
	beat := func() {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		activity.RecordHeartbeat(ctx, int(progress.Load()))
		timer.Reset(interval)
	}
	mu.Lock()
	timer = time.AfterFunc(interval, beat)
	mu.Unlock()
	return func() {
		cancel() // ends a beat's RPC in flight
		mu.Lock()
		defer mu.Unlock()
		timer.Stop()
	}
}

// classify turns an adapter's error into a Temporal error the workflow can
// branch on.
func classify(err error) error {
	var perr *providers.Error
	if !errors.As(err, &perr) {
		if errors.Is(err, context.Canceled) {
			return err
		}
		return temporal.NewApplicationErrorWithCause(err.Error(), ErrTypeProviderUnavailable, err)
	}
	details := jobs.Error{Code: perr.Code, Message: perr.Message}
	switch perr.Kind {
	case providers.KindInput:
		return temporal.NewNonRetryableApplicationError(perr.Error(), ErrTypeInvalidInput, perr, details)
	case providers.KindPermanent:
		return temporal.NewNonRetryableApplicationError(perr.Error(), ErrTypeProviderRejected, perr, details)
	default:
		// The provider's Retry-After, when it gave one, is the wait
		// before the next try.
		return temporal.NewApplicationErrorWithOptions(perr.Error(), ErrTypeProviderUnavailable, temporal.ApplicationErrorOptions{
			Cause: perr, Details: []any{details}, NextRetryDelay: perr.RetryAfter,
		})
	}
}

// outcome names how a provider call ended, for metrics.
func outcome(ctx context.Context, err error) string {
	var perr *providers.Error
	switch {
	case err == nil:
		return "ok"
	case ctx.Err() != nil:
		return "cancelled"
	case errors.As(err, &perr) && perr.Kind == providers.KindInput:
		return "input"
	case errors.As(err, &perr) && perr.Kind == providers.KindPermanent:
		return "permanent"
	}
	return "retryable"
}
