package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// Erasure removes what lies outside the store of a deleted job: its
// workflow runs and their histories, its files, and the vendors' copies
// of its work (docs/api.md, Deleting a job). The store's part, the
// tombstone, is done before the erasure starts.
type Erasure struct {
	Temporal client.Client
	// Namespace is the Temporal namespace of job workflows.
	Namespace string
	// DataConverter reads the payloads of job histories (they may be
	// encrypted); nil is the SDK's default.
	DataConverter converter.DataConverter
	Providers     *providers.Registry
	Files         *blobstore.Store
	Tombstones    TombstoneStore
	// StopWait is how long a running job's workflow is given to end once
	// cancelled before it is terminated (default 30 s).
	StopWait time.Duration
}

// TombstoneStore records the end of an erasure.
type TombstoneStore interface {
	FinishErasure(ctx context.Context, id string, copies []jobs.VendorCopy, at time.Time) error
}

// ErrTypeErasure is a failure of an erasure step, retried.
const ErrTypeErasure = "ErasureFailed"

// defaultStopWait is Erasure.StopWait's default.
const defaultStopWait = 30 * time.Second

// StopJobWorkflow ends the job's workflow if it runs: it is cancelled, so
// that its provider call stops, and terminated if it has not ended within
// StopWait.
func (e *Erasure) StopJobWorkflow(ctx context.Context, jobID string) error {
	running, err := e.running(ctx, jobID)
	if err != nil || !running {
		return err
	}
	if err := e.Temporal.CancelWorkflow(ctx, jobID, ""); err != nil && !isNotFound(err) {
		return err
	}
	wait := e.StopWait
	if wait <= 0 {
		wait = defaultStopWait
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		activity.RecordHeartbeat(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if running, err = e.running(ctx, jobID); err != nil || !running {
			return err
		}
	}
	err = e.Temporal.TerminateWorkflow(ctx, jobID, "", "job deleted")
	if err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

// running reports whether the job's workflow runs.
func (e *Erasure) running(ctx context.Context, jobID string) (bool, error) {
	desc, err := e.Temporal.DescribeWorkflowExecution(ctx, jobID, "")
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// JobTrail is what a deleted job's histories say it left outside the
// gateway: where its webhook was, and the work it handed to vendors.
type JobTrail struct {
	// Runs are the run ids of the job's workflow, newest first.
	Runs []string `json:"runs,omitempty"`
	// Webhook is the job's webhook; nil without one.
	Webhook *jobs.Webhook `json:"webhook,omitempty"`
	// Submitted is the work handed to providers: each asynchronous
	// provider's with its handle, and, once per provider, without one,
	// the calls that may have reached a provider without leaving a handle
	// (synchronous calls, submits that did not complete).
	Submitted []VendorWork `json:"submitted,omitempty"`
}

// VendorWork is a job's work at one provider: Handle is the provider's
// handle of it, "" for a synchronous call.
type VendorWork struct {
	ProviderID string         `json:"provider_id"`
	Service    jobs.ServiceID `json:"service"`
	Handle     string         `json:"handle,omitempty"`
}

// ReadJobTrail reads every run of the job's workflow for its trail.
func (e *Erasure) ReadJobTrail(ctx context.Context, jobID string) (JobTrail, error) {
	runs, err := e.runs(ctx, jobID)
	if err != nil {
		return JobTrail{}, err
	}
	trail := JobTrail{Runs: runs}
	var called []VendorWork
	for _, run := range runs {
		if err := e.readRun(ctx, jobID, run, &trail, &called); err != nil {
			return JobTrail{}, err
		}
		activity.RecordHeartbeat(ctx)
	}
	named := map[string]bool{}
	for _, w := range trail.Submitted {
		named[w.ProviderID] = true
	}
	for _, w := range called {
		if !named[w.ProviderID] {
			named[w.ProviderID] = true
			trail.Submitted = append(trail.Submitted, w)
		}
	}
	return trail, nil
}

// runs lists the job workflow's runs, newest first; the latest alone when
// visibility has none listed yet.
func (e *Erasure) runs(ctx context.Context, jobID string) ([]string, error) {
	var runs []string
	var token []byte
	for {
		resp, err := e.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: e.Namespace, Query: fmt.Sprintf("WorkflowId = '%s'", jobID), NextPageToken: token,
		})
		if err != nil {
			return nil, err
		}
		for _, ex := range resp.GetExecutions() {
			runs = append(runs, ex.GetExecution().GetRunId())
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	if len(runs) > 0 {
		return runs, nil
	}
	desc, err := e.Temporal.DescribeWorkflowExecution(ctx, jobID, "")
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []string{desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()}, nil
}

// Names of the history's events readRun reads.
const (
	localActivityMarker    = "LocalActivity" // the SDK's marker of a local activity
	localActivityDataKey   = "data"
	localActivityResultKey = "result"
)

// providerCall is a provider call (CallProvider, or SubmitToProvider)
// scheduled in a run's history, as readRun follows it.
type providerCall struct {
	work    VendorWork
	submits bool
	attempt int32 // of the try whose outcome the history holds
}

// readRun adds one run's webhook and handed-over work to trail, and to
// called the calls that may have reached a provider without leaving a
// handle: every provider call in the history but one refused, at its
// first try, because the job was deleted (refuseDeleted).
func (e *Erasure) readRun(ctx context.Context, jobID, runID string, trail *JobTrail, called *[]VendorWork) error {
	dc := e.DataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	var service jobs.ServiceID
	routed := "" // the provider of the run's latest routing decision
	calls := map[int64]*providerCall{}
	var order []int64
	iter := e.Temporal.GetWorkflowHistory(ctx, jobID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		event, err := iter.Next()
		if isNotFound(err) {
			break
		}
		if err != nil {
			return err
		}
		switch {
		case event.GetWorkflowExecutionStartedEventAttributes() != nil:
			payloads := event.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
			var sub jobs.Submission
			if len(payloads) > 0 && dc.FromPayload(payloads[0], &sub) == nil {
				service = sub.Service
				if sub.Webhook != nil && trail.Webhook == nil {
					trail.Webhook = sub.Webhook
				}
			}
		case event.GetMarkerRecordedEventAttributes() != nil:
			routed = e.readLocalCall(event.GetMarkerRecordedEventAttributes(), dc, routed, service, called)
		case event.GetActivityTaskScheduledEventAttributes() != nil:
			attrs := event.GetActivityTaskScheduledEventAttributes()
			name := attrs.GetActivityType().GetName()
			if name != "SubmitToProvider" && name != "CallProvider" {
				continue
			}
			var in CallInput
			if payloads := attrs.GetInput().GetPayloads(); len(payloads) > 0 && dc.FromPayload(payloads[0], &in) == nil {
				calls[event.GetEventId()] = &providerCall{work: VendorWork{ProviderID: in.ProviderID, Service: in.Service}, submits: name == "SubmitToProvider"}
				order = append(order, event.GetEventId())
			}
		case event.GetActivityTaskStartedEventAttributes() != nil:
			attrs := event.GetActivityTaskStartedEventAttributes()
			if call, ok := calls[attrs.GetScheduledEventId()]; ok {
				call.attempt = attrs.GetAttempt()
			}
		case event.GetActivityTaskCompletedEventAttributes() != nil:
			attrs := event.GetActivityTaskCompletedEventAttributes()
			call, ok := calls[attrs.GetScheduledEventId()]
			if !ok || !call.submits {
				continue
			}
			var out SubmitOutput
			if payloads := attrs.GetResult().GetPayloads(); len(payloads) > 0 && dc.FromPayload(payloads[0], &out) == nil && out.Handle != "" {
				work := call.work
				work.Handle = out.Handle
				trail.Submitted = append(trail.Submitted, work)
				delete(calls, attrs.GetScheduledEventId())
			}
		case event.GetActivityTaskFailedEventAttributes() != nil:
			attrs := event.GetActivityTaskFailedEventAttributes()
			if call, ok := calls[attrs.GetScheduledEventId()]; ok && call.attempt == 1 && refusedDeleted(attrs.GetFailure()) {
				delete(calls, attrs.GetScheduledEventId())
			}
		}
	}
	for _, id := range order {
		if call, ok := calls[id]; ok {
			*called = append(*called, call.work)
		}
	}
	return nil
}

// readLocalCall reads a local activity's marker: a routing decision's
// provider, which it returns as the run's latest, or a short provider
// call, added to called as a call to the latest one unless refused.
func (e *Erasure) readLocalCall(attrs *historypb.MarkerRecordedEventAttributes, dc converter.DataConverter, routed string, service jobs.ServiceID, called *[]VendorWork) string {
	if attrs.GetMarkerName() != localActivityMarker {
		return routed
	}
	var marker struct{ ActivityType string }
	if dc.FromPayloads(attrs.GetDetails()[localActivityDataKey], &marker) != nil {
		return routed
	}
	switch marker.ActivityType {
	case "DecideRoute":
		var route RouteOutput
		if result := attrs.GetDetails()[localActivityResultKey]; result != nil && dc.FromPayloads(result, &route) == nil {
			return route.Routing.ProviderID
		}
	case "CallProvider", "CallAndComplete":
		if routed != "" && !refusedDeleted(attrs.GetFailure()) {
			*called = append(*called, VendorWork{ProviderID: routed, Service: service})
		}
	}
	return routed
}

// refusedDeleted reports whether a provider call failed as refuseDeleted
// fails it: the provider was not called.
func refusedDeleted(f *failurepb.Failure) bool {
	return f.GetApplicationFailureInfo().GetType() == ErrTypeJobDeleted
}

// PurgeVendorCopy deletes a vendor's copy of a job's work and says what
// became of it (docs/providers.md, Deleting a job's vendor copy). Work
// without a handle (a synchronous call) is reported as the adapter
// declares its vendor's retention.
func (e *Erasure) PurgeVendorCopy(ctx context.Context, work VendorWork) (string, error) {
	if e.Providers == nil {
		return "", temporal.NewApplicationError("this worker has no providers", ErrTypeErasure)
	}
	handle := work.Handle
	if handle == "" {
		outcome, _ := e.Providers.Purge(ctx, work.ProviderID, work.Service, "")
		if outcome == providers.PurgePurged || outcome == providers.PurgeFailed {
			// The vendor keeps a copy, but its handle is not known (the
			// job's history is gone, past the namespace's retention).
			activity.GetLogger(ctx).Warn("vendor copy not deleted: its handle is unknown", "provider", work.ProviderID)
			outcome = providers.PurgeFailed
		}
		return string(outcome), nil
	}
	outcome, err := e.Providers.Purge(ctx, work.ProviderID, work.Service, handle)
	if err == nil {
		return string(outcome), nil
	}
	var perr *providers.Error
	if errors.As(err, &perr) && perr.Kind != providers.KindRetryable {
		activity.GetLogger(ctx).Warn("vendor copy not deleted", "provider", work.ProviderID, "error", err)
		return string(providers.PurgeFailed), nil
	}
	return "", temporal.NewApplicationError(err.Error(), ErrTypeErasure)
}

// DeleteJobFiles removes the job's result files and media stage files
// and returns how many it removed.
func (e *Erasure) DeleteJobFiles(ctx context.Context, jobID string) (int, error) {
	if e.Files == nil {
		return 0, nil
	}
	removed := 0
	for _, prefix := range []string{ResultPrefix(jobID), WorkPrefix(jobID)} {
		n, err := e.Files.DeletePrefix(ctx, prefix)
		removed += n
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// runsGoneWait is how long DeleteJobRuns waits for Temporal to delete the
// runs before it fails, to be retried.
const runsGoneWait = 90 * time.Second

// DeleteJobRuns deletes the runs of the job's workflow, with their
// histories, from Temporal, and returns once they are gone: Temporal
// deletes a closed run in the background once it has processed its close
// (within about 30 s at its defaults), and the tombstone may not say the
// job's histories are gone before they are.
func (e *Erasure) DeleteJobRuns(ctx context.Context, jobID string, runs []string) error {
	if len(runs) == 0 {
		runs = []string{""}
	}
	for _, run := range runs {
		_, err := e.Temporal.WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{
			Namespace:         e.Namespace,
			WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: jobID, RunId: run},
		})
		if err != nil && !isNotFound(err) {
			return err
		}
	}
	deadline := time.Now().Add(runsGoneWait)
	for {
		left := 0
		for _, run := range runs {
			_, err := e.Temporal.DescribeWorkflowExecution(ctx, jobID, run)
			if err != nil && !isNotFound(err) {
				return err
			}
			if err == nil {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return temporal.NewApplicationError(fmt.Sprintf("Temporal has not deleted %d runs of the job's workflow yet", left), ErrTypeErasure)
		}
		activity.RecordHeartbeat(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// FinishErasure records on the tombstone that the erasure finished.
func (e *Erasure) FinishErasure(ctx context.Context, jobID string, copies []jobs.VendorCopy) error {
	if e.Tombstones == nil {
		return temporal.NewApplicationError("this worker has no store of tombstones", ErrTypeErasure)
	}
	return e.Tombstones.FinishErasure(ctx, jobID, copies, time.Now())
}

// isNotFound reports Temporal's NotFound: no such workflow (run).
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
