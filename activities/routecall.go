package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// RouteAndCallInput is one attempt of a job that is projected once
// (generation 4, docs/operations.md, Replaying histories): its routing
// decision and, when the provider decided on answers quickly, its call.
type RouteAndCallInput struct {
	Route RouteInput `json:"route"`
	// Call is the call to make; its provider and attempt are the
	// decision's.
	Call CallInput `json:"call"`
	// Job is the job as its workflow holds it before the decision, and
	// Now the workflow's time, from which the job's processing state is
	// made as the workflow makes it (jobs.Snapshot.StartProcessing).
	Job jobs.Snapshot `json:"job"`
	Now time.Time     `json:"now"`
}

// RoutedCall is the decision and, when Called, the call's outcome: Done
// when it succeeded, Failure when it failed.
type RoutedCall struct {
	Route   RouteOutput    `json:"route"`
	Called  bool           `json:"called,omitempty"`
	Done    *CompletedCall `json:"done,omitempty"`
	Failure *CallFailure   `json:"failure,omitempty"`
}

// CallFailure is a failed call's error, carried in RoutedCall so that the
// decision is kept with it; Err makes the error again.
type CallFailure struct {
	Type           string        `json:"type"`
	Message        string        `json:"message"`
	NonRetryable   bool          `json:"non_retryable,omitempty"`
	NextRetryDelay time.Duration `json:"next_retry_delay,omitempty"`
	// JobError is the job's error of an input the provider refused
	// (ErrTypeInvalidInput).
	JobError *jobs.Error `json:"job_error,omitempty"`
}

// Err is the failure as CallProvider returned it.
func (f *CallFailure) Err() error {
	var details []any
	if f.JobError != nil {
		details = append(details, *f.JobError)
	}
	return temporal.NewApplicationErrorWithOptions(f.Message, f.Type, temporal.ApplicationErrorOptions{
		NonRetryable: f.NonRetryable, NextRetryDelay: f.NextRetryDelay, Details: details})
}

// errTypeCallFailed is the type of a failed call whose error had none.
const errTypeCallFailed = "ProviderCallFailed"

func callFailure(err error) *CallFailure {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return &CallFailure{Type: errTypeCallFailed, Message: err.Error()}
	}
	f := &CallFailure{Type: appErr.Type(), Message: appErr.Message(), NonRetryable: appErr.NonRetryable(), NextRetryDelay: appErr.NextRetryDelay()}
	var jobErr jobs.Error
	if appErr.HasDetails() && appErr.Details(&jobErr) == nil && jobErr.Code != "" {
		f.JobError = &jobErr
	}
	return f
}

// RouteAndCall decides the provider of one attempt (DecideRoute) and,
// when the provider's calls are short, calls it and projects a success
// as CallAndComplete does: one local activity where generation 3 runs
// two. A decision that is not a short call is returned as it is, for the
// workflow to go on as DecideRoute's caller. A failed call is returned
// with the decision (Failure); only a cancelled one fails the activity.
func (c *ProviderCalls) RouteAndCall(ctx context.Context, in RouteAndCallInput) (RoutedCall, error) {
	route, err := c.Routing.DecideRoute(ctx, in.Route)
	if err != nil {
		return RoutedCall{}, err
	}
	out := RoutedCall{Route: route}
	if route.Error != nil || route.Wait != nil || !route.CallLocally || route.Submits {
		return out, nil
	}
	out.Called = true
	job := in.Job
	job.StartProcessing(route.Routing, route.WorkerID, in.Now.UTC())
	job.Revision++ // the workflow's transition to processing takes the same
	call := in.Call
	call.ProviderID = route.Routing.ProviderID
	done, err := c.CallAndComplete(ctx, CompleteInput{Call: call, Job: job})
	switch {
	case err == nil:
		out.Done = &done
	case ctx.Err() != nil || temporal.IsCanceledError(err):
		return RoutedCall{}, err
	default:
		out.Failure = callFailure(err)
	}
	return out, nil
}
