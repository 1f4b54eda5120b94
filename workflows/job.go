package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// The nil receivers workflow code names activities through: Temporal
// names an activity after its method.
var (
	projections   *activities.Projections
	router        *activities.Routing
	providerCalls *activities.ProviderCalls
	asyncCalls    *activities.AsyncCalls
	mediaSteps    *activities.Media
	webhooks      *activities.Webhooks
)

// projectionRetryFor is how long a projection write or routing decision
// is retried while the store is away before the job's workflow fails.
const projectionRetryFor = 24 * time.Hour

// Activity timeouts and retries.
var (
	// projectionOptions: short local steps, retried until they succeed so
	// no projection write is lost while the database is away. Without
	// ScheduleToCloseTimeout the SDK would take StartToCloseTimeout for it,
	// and give up after 10 s of tries: a partition that holds one try for
	// its whole 10 s failed the job's workflow (docs/reliability.md, Soak).
	// Options of local activities are not in the history: replay is
	// unchanged.
	projectionOptions = workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: projectionRetryFor,
		StartToCloseTimeout:    10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    200 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	}
	// providerCallOptions: the provider call heartbeats every half timeout, so a
	// dead worker is noticed after HeartbeatTimeout and the call resumes on
	// another one. Three tries per provider before failing over.
	providerCallOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput, activities.ErrTypeProviderRejected},
		},
	}

	// localCallOptions: one try of a short provider call inside the
	// workflow task; a dead worker is noticed at the workflow task timeout
	// and the call runs again. Further tries use providerCallOptions.
	localCallOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	}
)

// job is the workflow's private state.
type job struct {
	in     jobs.Submission
	snap   jobs.Snapshot
	saved  jobs.Status // the status of the last projection write
	failed []string
	// outputInvalid: providers of this run that answered, but not what
	// the job's response_format asks; when no provider is left, the job
	// fails OUTPUT_INVALID rather than PROVIDERS_EXHAUSTED.
	outputInvalid []string
	hooks         *webhookQueue // nil without a webhook
	// indexed: the job keeps its search attributes and details up to
	// date (workflows/searchattributes.go).
	indexed bool
	// coalesce: a transition that the next one follows within the same
	// workflow task (processing before a short call) is not upserted on
	// its own; pendingIndex says the last one waits (version 2).
	coalesce, skipNextIndex, pendingIndex bool
	// processingUnsaved: the processing state was recorded but not
	// projected (projectsOnce); the next projection carries it.
	processingUnsaved bool
	// completedAt is when a generation-3 short call returned
	// (callAndComplete), the job's completed_at; completionProjected: the
	// call's local activity projected the completion, which finish does
	// not project again.
	completedAt         *time.Time
	completionProjected bool
	// firstAttempt numbers this run's first routing decision: 1, or one
	// more than the decisions of the runs an operator's retry follows.
	firstAttempt int
	// The media stage (workflows/media.go): whether the job took it, and
	// what it prepared for the provider calls.
	mediaStarted bool
	media        *activities.PreparedMedia
	mediaSize    int64 // bytes fetched
	// waitingSince is when the job first waited out an outage, and
	// waitReportedAt when it last projected a wait (workflows/outage.go).
	waitingSince   *time.Time
	waitReportedAt time.Time
}

// JobWorkflow runs one job: route it, call the provider (failing over to
// the next candidate when a provider fails), and project every state change
// into the store. A job that fails is a completed workflow whose result has
// status failed; only cancellation ends the workflow as cancelled.
func JobWorkflow(ctx workflow.Context, in jobs.Submission) (*jobs.Snapshot, error) {
	j := &job{}
	if err := j.setup(ctx, in); err != nil {
		return nil, err
	}
	return j.run(ctx)
}

func (j *job) setup(ctx workflow.Context, in jobs.Submission) error {
	if in.JobID == "" || in.Service == "" {
		return temporal.NewNonRetryableApplicationError("job id and service are required", "InvalidWorkflowInput", nil)
	}
	j.in = in
	j.snap = in.Snapshot()
	j.firstAttempt = 1
	if in.Retry != nil {
		// An operator's retry: the job carries on from where it failed.
		j.snap.RoutingHistory = append(j.snap.RoutingHistory, in.Retry.RoutingHistory...)
		j.snap.Revision = in.Retry.Revision
		j.saved = jobs.StatusFailed
		j.firstAttempt = len(in.Retry.RoutingHistory) + 1
	}
	if in.SearchAttributes {
		version := j.version(ctx, searchAttributesChange, 2)
		j.indexed = version >= 1
		j.coalesce = version >= 2
	}
	if in.Webhook != nil {
		// Version 1 leaves the job's documents out of delivery attempts.
		stored := j.version(ctx, webhookDocumentsChange, 1) == 1
		j.hooks = newWebhookQueue(*in.Webhook, in.Service, stored)
		j.hooks.window = webhookWindow(in.WebhookGiveUpAfter)
		j.hooks.onGiveUp = j.webhookGivenUp
		senderCtx, _ := workflow.NewDisconnectedContext(ctx)
		workflow.Go(senderCtx, j.hooks.run)
	}
	return workflow.SetQueryHandler(ctx, StateQuery, func() (jobs.Snapshot, error) {
		return j.snap, nil
	})
}

// GetVersion markers of webhook delivery. The first, "webhooks", was a
// marker no branch read; its call is gone, and the SDK skips the markers
// older histories hold (docs/workflow-versions.md).
const (
	// webhookDocumentsChange: deliveries read the job's documents from the
	// store (DeliverWebhookEvent) instead of carrying them.
	webhookDocumentsChange = "webhook-stored-documents"
	// webhookGiveUpChange: a given-up event is recorded in the store and
	// marks the job's search attributes (docs/webhooks.md).
	webhookGiveUpChange = "webhook-given-up"
)

// webhookGivenUp records that the job's event d was given up, so the job
// can be found and the event recovered (docs/webhooks.md, Resending and
// recovering events).
func (j *job) webhookGivenUp(ctx workflow.Context, d activities.WebhookDelivery) {
	if j.version(ctx, webhookGiveUpChange, 1) < 1 {
		return
	}
	recordGivenUp(ctx, d)
	if j.indexed {
		if err := workflow.UpsertTypedSearchAttributes(ctx, WebhookKey.ValueSet(WebhookFailed)); err != nil {
			workflow.GetLogger(ctx).Warn("search attribute not upserted", "attribute", WebhookKey.GetName(), "error", err)
		}
	}
}

func (j *job) run(ctx workflow.Context) (*jobs.Snapshot, error) {
	if j.in.Retry != nil {
		// Clients see the job pending again, without its error.
		if err := j.save(ctx); err != nil {
			return j.stop(ctx, err)
		}
	}
	if jobErr, err := j.mediaStage(ctx); err != nil {
		return j.stop(ctx, err)
	} else if jobErr != nil {
		return j.finish(ctx, nil, jobErr)
	}
	if jobErr, err := j.reserveBudget(ctx); err != nil {
		return j.stop(ctx, err)
	} else if jobErr != nil {
		return j.finish(ctx, nil, jobErr)
	}
	for attempt := j.firstAttempt; ; attempt++ {
		route, err := j.decide(ctx, attempt)
		if err != nil {
			return j.stop(ctx, err)
		}
		if route.Error != nil {
			return j.finish(ctx, nil, j.exhausted(route.Error))
		}
		if route.Wait != nil {
			waited, err := j.waitOutOutage(ctx, route, attempt)
			if err != nil {
				return j.stop(ctx, err)
			}
			if !waited {
				return j.finish(ctx, nil, j.exhausted(&jobs.Error{Code: jobs.CodeProvidersExhausted, Message: route.Wait.Message}))
			}
			attempt-- // a wait is no attempt: the next decision takes its number
			continue
		}
		if err := j.startProcessing(ctx, route); err != nil {
			return j.stop(ctx, err)
		}
		out, err := j.callProvider(ctx, route)
		if err == nil {
			j.snap.WorkerID = out.WorkerID
			j.snap.ResultFile = out.ResultFile
			return j.finish(ctx, out.Result, nil)
		}
		if jobErr, ok := inputError(err); ok {
			return j.finish(ctx, nil, jobErr)
		}
		if temporal.IsCanceledError(err) {
			return j.stop(ctx, err)
		}
		if deletedBeforeCall(err) && j.version(ctx, deletedBeforeCallChange, 1) == 1 {
			// Ended as the deletion ends a job it stops (docs/api.md,
			// Deleting a job); no other provider is tried.
			return j.finish(ctx, nil, &jobs.Error{Code: jobs.CodeCancelled, Message: "the job was deleted"})
		}
		workflow.GetLogger(ctx).Warn("provider failed, failing over", "provider", route.Routing.ProviderID, "attempt", attempt, "error", err)
		j.failed = append(j.failed, route.Routing.ProviderID)
		if outputInvalid(err) {
			j.outputInvalid = append(j.outputInvalid, route.Routing.ProviderID)
		}
	}
}

// exhausted is the error of a job no provider is left for: OUTPUT_INVALID
// when a provider answered, but not what the job's response_format asks
// (docs/api.md, Job error codes). Histories recorded before the output
// check hold no such failure, so they replay as they ran.
func (j *job) exhausted(jobErr *jobs.Error) *jobs.Error {
	if jobErr.Code != jobs.CodeProvidersExhausted || len(j.outputInvalid) == 0 {
		return jobErr
	}
	return &jobs.Error{Code: jobs.CodeOutputInvalid, Message: fmt.Sprintf(
		"no provider gave an answer matching response_format (%s did not)", strings.Join(j.outputInvalid, ", "))}
}

// outputInvalid reports whether a provider call failed because its
// answer is not what the job's response_format asks.
func outputInvalid(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeOutputInvalid
}

func (j *job) decide(ctx workflow.Context, attempt int) (activities.RouteOutput, error) {
	var out activities.RouteOutput
	sizeMB, duration := j.mediaFacts()
	options := projectionOptions
	options.Summary = fmt.Sprintf("choose a provider (attempt %d)", attempt)
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, options), router.DecideRoute, activities.RouteInput{
		MediaSizeMB:   sizeMB,
		MediaDuration: duration,
		JobID:         j.in.JobID,
		Service:       j.in.Service,
		Tenant:        j.in.Tenant,
		Application:   j.in.Application,
		Input:         j.in.Input,
		Options:       j.in.Options,
		Explicit:      j.in.Provider,
		PolicyID:      j.in.PolicyID,
		Pinned:        j.pinnedPolicy(),
		Failed:        j.failed,
		Attempt:       attempt,
		Retried:       j.in.Retry != nil && attempt == j.firstAttempt,
		// Whether the job may wait is decided when it would
		// (workflows/outage.go).
		WaitOutOutages: true,
		WaitingSince:   j.waitingSince,
	}).Get(ctx, &out)
	return out, err
}

// pinnedPolicy is the policy version of the job's first routing, which
// every failover decision keeps.
func (j *job) pinnedPolicy() *activities.PolicyPin {
	// The first decision of this run: a retry is routed afresh.
	if len(j.snap.RoutingHistory) < j.firstAttempt || j.snap.RoutingHistory[j.firstAttempt-1].PolicyID == "" {
		return nil
	}
	first := j.snap.RoutingHistory[j.firstAttempt-1]
	return &activities.PolicyPin{ID: first.PolicyID, Version: first.PolicyVersion, Source: first.PolicySource}
}

func (j *job) startProcessing(ctx workflow.Context, route activities.RouteOutput) error {
	routing := route.Routing
	j.snap.Waiting = nil
	j.snap.Status = jobs.StatusProcessing
	j.snap.Provider = routing.ProviderID
	j.snap.Progress = 0
	j.snap.Routing = &routing
	j.snap.RoutingHistory = append(j.snap.RoutingHistory, routing)
	j.snap.WorkerID = route.WorkerID
	// A short call completes or fails within this workflow task: its
	// outcome's upsert carries the processing one.
	j.skipNextIndex = j.coalesce && j.callsLocally(route)
	if j.snap.ProcessedAt == nil {
		// The job moves to processing once its provider is selected.
		now := workflow.Now(ctx).UTC()
		if routing.DecidedAt.After(now) {
			now = routing.DecidedAt.UTC()
		}
		j.snap.ProcessedAt = &now
	}
	if j.projectsOnce(route) {
		// Generation 2: no client can tell this processing state from
		// the outcome's projection, which carries processed_at and the
		// routing; it is projected on its own only if the short call
		// does not settle the job (projectProcessing).
		j.processingUnsaved = true
		return j.transition(ctx)
	}
	if err := j.save(ctx); err != nil {
		return err
	}
	if j.hooks != nil {
		j.hooks.addProgress(j.snap, workflow.Now(ctx))
	}
	return nil
}

// callProvider runs the provider call. A short call runs first as a local
// activity; otherwise, and for the remaining tries of a short call that
// failed, the call is a heartbeating activity.
func (j *job) callProvider(ctx workflow.Context, route activities.RouteOutput) (activities.CallOutput, error) {
	in := activities.CallInput{
		JobID:          j.in.JobID,
		Service:        j.in.Service,
		ProviderID:     route.Routing.ProviderID,
		Input:          j.in.Input,
		Options:        j.in.Options,
		SignalProgress: j.hooks != nil && j.hooks.progress,
		Media:          j.media,
	}
	summary := fmt.Sprintf("call %s (attempt %d)", route.Routing.ProviderID, route.Routing.Attempt)
	options := providerCallOptions
	options.Summary = summary
	if route.Submits && j.version(ctx, asyncCallChange, 1) == 1 {
		return j.callAsync(ctx, in, route.Routing.Attempt)
	}
	if route.CallLocally && !in.SignalProgress &&
		j.version(ctx, localCallChange, 1) == 1 {
		var out activities.CallOutput
		var err error
		local := localCallOptions
		local.Summary = summary
		if j.processingUnsaved && j.since(3) {
			out, err = j.callAndComplete(ctx, local, in)
		} else {
			err = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, local), providerCalls.CallProvider, in).Get(ctx, &out)
		}
		if _, ok := inputError(err); err == nil || ok || temporal.IsCanceledError(err) {
			return out, err // the job is settled: its outcome's projection carries processing
		}
		if perr := j.projectProcessing(ctx); perr != nil {
			return out, perr
		}
		if !retryable(err) {
			return out, err
		}
		workflow.GetLogger(ctx).Warn("short provider call failed, trying again as an activity", "provider", in.ProviderID, "error", err)
		if err := j.upsertPendingIndex(ctx); err != nil {
			return out, err
		}
		retry := *options.RetryPolicy
		retry.MaximumAttempts--
		options.RetryPolicy = &retry
		if err := workflow.Sleep(ctx, retry.InitialInterval); err != nil {
			return out, err
		}
	}
	return j.callActivity(ctx, options, in)
}

// callAndComplete runs a short call of a job projected once in the local
// activity that also projects it as completed (generation 3): one local
// activity and one marker less than a call and then SaveJob.
func (j *job) callAndComplete(ctx workflow.Context, options workflow.LocalActivityOptions, in activities.CallInput) (activities.CallOutput, error) {
	options.Summary += ", then project the job as completed"
	var done activities.CompletedCall
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, options), providerCalls.CallAndComplete,
		activities.CompleteInput{Call: in, Job: j.snap}).Get(ctx, &done)
	if err != nil {
		// The activity may still have projected the call's success (one
		// revision past this snapshot's) before its deadline or a cancel
		// passed: what the job projects next passes it.
		j.snap.Revision += 2
		return done.CallOutput, err
	}
	at := done.CompletedAt
	j.completedAt, j.completionProjected = &at, done.Projected
	return done.CallOutput, nil
}

// localCallChange names the GetVersion marker of short provider calls run
// as local activities.
const localCallChange = "local-provider-call"

// retryable reports whether a failed provider call may succeed if tried
// again on the same provider.
func retryable(err error) bool {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.NonRetryable() {
		return false
	}
	return !temporal.IsCanceledError(err)
}

// callActivity runs the provider call as an activity. While it runs,
// progress signals from the activity become *.progress events (jobs with a
// webhook only).
func (j *job) callActivity(ctx workflow.Context, options workflow.ActivityOptions, in activities.CallInput) (activities.CallOutput, error) {
	call := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, options), providerCalls.CallProvider, in)
	var out activities.CallOutput
	var err error
	done := false
	progress := workflow.GetSignalChannel(ctx, activities.ProgressSignal)
	selector := workflow.NewSelector(ctx)
	selector.AddFuture(call, func(f workflow.Future) {
		err = f.Get(ctx, &out)
		done = true
	})
	selector.AddReceive(progress, func(c workflow.ReceiveChannel, _ bool) {
		var p int
		c.Receive(ctx, &p)
		if j.hooks != nil && p > j.snap.Progress && p < 100 {
			j.snap.Progress = p
			j.hooks.addProgress(j.snap, workflow.Now(ctx))
		}
	})
	for !done {
		selector.Select(ctx)
	}
	return out, err
}

// finish ends the job as completed (result) or failed (jobErr).
func (j *job) finish(ctx workflow.Context, result json.RawMessage, jobErr *jobs.Error) (*jobs.Snapshot, error) {
	now := workflow.Now(ctx).UTC()
	if jobErr == nil && j.completedAt != nil {
		now = *j.completedAt // the activity's projection, if any, says the same
	}
	projected := jobErr == nil && j.completionProjected
	if jobErr != nil {
		j.snap.CompletedAt = &now
		j.snap.Status = jobs.StatusFailed
		j.snap.Error = jobErr
	} else {
		j.snap.Complete(result, now)
	}
	if projected {
		// The call's local activity projected this very snapshot.
		if err := j.transition(ctx); err != nil {
			return nil, err
		}
		j.processingUnsaved = false
	} else if err := j.save(ctx); err != nil {
		return nil, err
	}
	j.removeMedia(ctx)
	if j.hooks != nil {
		if jobErr != nil {
			j.hooks.add(jobs.EventFailed, j.snap, workflow.Now(ctx))
		} else {
			j.hooks.add(jobs.EventCompleted, j.snap, workflow.Now(ctx))
		}
		j.hooks.closed = true
		// The job is already completed in the projection; the workflow
		// stays open until its last event was delivered or given up.
		drained := func() bool { return j.hooks.drained }
		if err := workflow.Await(ctx, drained); err != nil {
			// Cancelled while the last events go out: the job is over
			// already, so they are still delivered (from version 1).
			dctx, _ := workflow.NewDisconnectedContext(ctx)
			if j.version(dctx, drainOnCancelChange, 1) == 1 {
				_ = workflow.Await(dctx, drained)
			}
		}
	}
	return j.result(), nil
}

// result is what the workflow returns: the job's snapshot, from
// generation 4 on without the documents other events of its history hold
// already (jobs.Snapshot.WithoutDocuments): the input, options and client
// meta are in the start event, the result in the provider call's.
func (j *job) result() *jobs.Snapshot {
	if !j.since(4) {
		return &j.snap
	}
	out := j.snap.WithoutDocuments()
	return &out
}

// drainOnCancelChange names the GetVersion marker of delivering a finished
// job's last events despite a cancel that comes meanwhile. Only a history
// where that happened holds it.
const drainOnCancelChange = "drain-on-cancel"

// stop handles an error that interrupts the workflow itself: cancellation
// ends the job as failed with CANCELLED; anything else fails the workflow
// task so Temporal retries it.
func (j *job) stop(ctx workflow.Context, err error) (*jobs.Snapshot, error) {
	if !temporal.IsCanceledError(err) && !errors.Is(ctx.Err(), workflow.ErrCanceled) {
		return nil, err
	}
	ctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	if _, ferr := j.finish(ctx, nil, &jobs.Error{Code: jobs.CodeCancelled, Message: "the job was cancelled"}); ferr != nil {
		return nil, ferr
	}
	return j.result(), temporal.NewCanceledError(fmt.Sprintf("job %s cancelled", j.in.JobID))
}

// save records the job's transition to its snapshot's status and projects
// it into the store.
func (j *job) save(ctx workflow.Context) error {
	if err := j.transition(ctx); err != nil {
		return err
	}
	j.processingUnsaved = false // this projection carries it
	return j.project(ctx)
}

// transition records the job's move to its snapshot's status: a new
// revision, and its search attributes and details.
func (j *job) transition(ctx workflow.Context) error {
	if j.saved == "" {
		j.saved = jobs.StatusPending // as the API recorded it
	}
	if !j.saved.CanMoveTo(j.snap.Status) && !(j.in.Retry != nil && j.saved.CanRetryTo(j.snap.Status)) {
		// A bug, not a state of the job: fail the workflow task (it is
		// retried, and shows in the UI) rather than project it.
		panic(fmt.Sprintf("job %s: illegal transition %s -> %s", j.in.JobID, j.saved, j.snap.Status))
	}
	j.saved = j.snap.Status
	j.snap.Revision++
	if j.indexed {
		j.pendingIndex = true
		if !j.skipNextIndex {
			if err := j.upsertPendingIndex(ctx); err != nil {
				return err
			}
		}
		j.skipNextIndex = false
		workflow.SetCurrentDetails(ctx, currentDetails(j.snap))
	}
	return nil
}

// project writes the job's snapshot to the store.
func (j *job) project(ctx workflow.Context) error {
	options := projectionOptions
	options.Summary = "project the job as " + string(j.snap.Status)
	return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, options), projections.SaveJob, j.snap).Get(ctx, nil)
}

// projectsOnce reports whether the job skips the projection of processing
// before route's call (generation 2): the call runs as a local activity
// in this workflow task, and no webhook or progress event reports the
// processing state.
func (j *job) projectsOnce(route activities.RouteOutput) bool {
	if !j.since(2) || j.hooks != nil || !j.callsLocally(route) {
		return false
	}
	svc, ok := jobs.ServiceOf(j.in.Service)
	return ok && !svc.SendsProgress
}

// projectProcessing projects the processing state that projectsOnce left
// out, once the short call did not settle the job.
func (j *job) projectProcessing(ctx workflow.Context) error {
	if !j.processingUnsaved {
		return nil
	}
	j.processingUnsaved = false
	return j.project(ctx)
}

// callsLocally reports whether the route's call runs first as a local
// activity (callProvider).
func (j *job) callsLocally(route activities.RouteOutput) bool {
	return route.CallLocally && !route.Submits && !(j.hooks != nil && j.hooks.progress)
}

// upsertPendingIndex upserts the search attributes of the last
// transition, if they wait.
func (j *job) upsertPendingIndex(ctx workflow.Context) error {
	if !j.pendingIndex {
		return nil
	}
	j.pendingIndex = false
	return workflow.UpsertTypedSearchAttributes(ctx, transitionAttributes(j.snap)...)
}

// deletedBeforeCallChange names the GetVersion marker of ending a job
// whose provider call was refused because the job was deleted. Only a
// history where that happened holds it.
const deletedBeforeCallChange = "deleted-before-call"

// deletedBeforeCall reports whether a provider call was refused because
// its job was deleted.
func deletedBeforeCall(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeJobDeleted
}

// inputError reports whether a provider call failed because of the job's
// own input, and the error the job fails with.
func inputError(err error) (*jobs.Error, bool) {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeInvalidInput {
		return nil, false
	}
	var jobErr jobs.Error
	if appErr.HasDetails() && appErr.Details(&jobErr) == nil && jobErr.Code != "" {
		return &jobErr, true
	}
	return &jobs.Error{Code: jobs.CodeInvalidInput, Message: appErr.Message()}, true
}
