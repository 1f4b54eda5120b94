package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
)

// asyncCallChange names the GetVersion marker of calling asynchronous
// providers in two steps (submit, then check on timers). Only jobs routed
// to such a provider take it.
const asyncCallChange = "async-provider-call"

// providerCallbackChange names the GetVersion marker of waking the checks
// early when the provider posts its result back (docs/providers.md,
// Vendor callbacks): version 1 gives the submit the routing attempt, for
// the callback address, and ends a wait when ProviderCallbackSignal
// arrives for that attempt.
const providerCallbackChange = "provider-callback"

// ProviderCallbackSignal tells a job's workflow that the provider posted
// back about an attempt; its value is the attempt number.
const ProviderCallbackSignal = "provider-callback"

// How the workflow waits for an asynchronous provider (docs/providers.md,
// Asynchronous providers).
const (
	// firstCheckWait is the wait before the first check; it doubles after
	// each check up to maxCheckWait, unless the provider asks otherwise.
	firstCheckWait = 2 * time.Second
	maxCheckWait   = time.Minute
	// asyncCallTimeout bounds the whole wait: a provider that has not
	// finished by then is failed over.
	asyncCallTimeout = 12 * time.Hour
)

// checkOptions: one short read of the provider's status, retried a few
// times before the provider is failed over. The check heartbeats, so a
// worker that dies during it is noticed after HeartbeatTimeout, not after
// the whole StartToCloseTimeout.
var checkOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Minute,
	HeartbeatTimeout:    10 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        30 * time.Second,
		MaximumAttempts:        5,
		NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput, activities.ErrTypeProviderRejected},
	},
}

// callAsync submits the job to an asynchronous provider once, then checks
// on it on durable timers until it is done. The handle is in the history,
// so a worker or server restart in between resumes the checks and submits
// nothing again.
func (j *job) callAsync(ctx workflow.Context, in activities.CallInput, attempt int) (activities.CallOutput, error) {
	var callbacks workflow.ReceiveChannel
	if j.version(ctx, providerCallbackChange, 1) == 1 {
		in.Attempt = attempt
		callbacks = workflow.GetSignalChannel(ctx, ProviderCallbackSignal)
	}
	submit := providerCallOptions
	submit.Summary = fmt.Sprintf("submit to %s (attempt %d)", in.ProviderID, attempt)
	var sub activities.SubmitOutput
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, submit), asyncCalls.SubmitToProvider, in).Get(ctx, &sub); err != nil {
		return activities.CallOutput{}, err
	}
	since := workflow.Now(ctx)
	wait := firstCheckWait
	for n := 1; ; n++ {
		if workflow.Now(ctx).Add(wait).Sub(since) > asyncCallTimeout {
			return activities.CallOutput{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("provider %s did not finish within %s", in.ProviderID, asyncCallTimeout), activities.ErrTypeProviderUnavailable, nil)
		}
		if err := waitForCheck(ctx, wait, callbacks, attempt, fmt.Sprintf("wait for %s (check %d)", in.ProviderID, n)); err != nil {
			return activities.CallOutput{}, err
		}
		options := checkOptions
		options.Summary = fmt.Sprintf("check %s (check %d)", in.ProviderID, n)
		var check activities.CheckOutput
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, options), asyncCalls.CheckProvider,
			activities.CheckInput{Call: in, Handle: sub.Handle, Since: since}).Get(ctx, &check)
		if err != nil {
			return activities.CallOutput{}, err
		}
		if check.Done {
			return check.Output, nil
		}
		if check.Progress > j.snap.Progress && check.Progress < 100 {
			j.snap.Progress = check.Progress
			if j.hooks != nil {
				j.hooks.addProgress(j.snap, workflow.Now(ctx))
			}
		}
		wait = min(2*wait, maxCheckWait)
		if check.Wait > 0 {
			wait = min(max(check.Wait, firstCheckWait), maxCheckWait)
		}
	}
}

// waitForCheck waits until the next check is due, or until the provider
// posts back about this attempt (callbacks; nil in histories recorded
// before vendor callbacks). A post about an earlier attempt, which failed
// over already, is dropped.
func waitForCheck(ctx workflow.Context, wait time.Duration, callbacks workflow.ReceiveChannel, attempt int, summary string) error {
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	timer := workflow.NewTimerWithOptions(timerCtx, wait, workflow.TimerOptions{Summary: summary})
	if callbacks == nil {
		return timer.Get(ctx, nil)
	}
	var err error
	due := false
	selector := workflow.NewSelector(ctx)
	selector.AddFuture(timer, func(f workflow.Future) {
		err = f.Get(ctx, nil)
		due = true
	})
	selector.AddReceive(callbacks, func(c workflow.ReceiveChannel, _ bool) {
		var posted int
		c.Receive(ctx, &posted)
		due = posted == attempt
	})
	for !due {
		selector.Select(ctx)
	}
	return err
}
