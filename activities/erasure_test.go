package activities_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"google.golang.org/grpc"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/builtin"
	"github.com/ai-job-gateway/gateway/providers/providertest"
)

const erasedJob = "0193a9d4-7c5e-7000-8000-0000000000e1"

// erasureEnv is an activity environment with e's activities registered.
func erasureEnv(e *activities.Erasure) *testsuite.TestActivityEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(e)
	return env
}

// fakeAssemblyAI answers AssemblyAI's DELETE /v2/transcript/{id}: the
// transcript "t-1" is deleted, "t-503" is an outage, "t-401" a refused
// key, any other unknown (404).
func fakeAssemblyAI(t *testing.T) (*providertest.Vendor, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var deleted []string
	v := providertest.NewVendor(t, func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutPrefix(r.URL.Path, "/v2/transcript/")
		if !ok || r.Method != http.MethodDelete {
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			w.WriteHeader(http.StatusNotFound)
			return
		}
		mu.Lock()
		deleted = append(deleted, id)
		mu.Unlock()
		switch id {
		case "t-1":
			providertest.WriteJSON(w, `{"id":"t-1","status":"completed","text":"Deleted by user."}`)
		case "t-503":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "t-401":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"Authentication error"}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":"Transcript not found"}`)
		}
	})
	v.RequireAuth("Authorization", "aai-secret")
	return v, &deleted
}

// purgeRegistry has the sandbox (its vendor keeps nothing) and an
// AssemblyAI whose API is vendor.
func purgeRegistry(t *testing.T, vendor *providertest.Vendor) *providers.Registry {
	t.Helper()
	return registryOf(t, `providers:
  - id: sandbox-fast
    name: Sandbox
    adapter: sandbox
    settings: {latency_ms: 0}
    services:
      transcriptions:
        pricing: {unit: per_minute, amount: 0.001, currency: USD}
  - id: aai
    name: AssemblyAI
    adapter: assemblyai
    settings: {base_url: "`+vendor.URL+`", api_key_env: FAKE_AAI_KEY}
    services:
      transcriptions:
        pricing: {unit: per_minute, amount: 0.0065, currency: USD}
`, builtin.Factories(providertest.Env("FAKE_AAI_KEY", "aai-secret")))
}

func purge(t *testing.T, env *testsuite.TestActivityEnvironment, e *activities.Erasure, work activities.VendorWork) (string, error) {
	t.Helper()
	value, err := env.ExecuteActivity(e.PurgeVendorCopy, work)
	if err != nil {
		return "", err
	}
	var outcome string
	require.NoError(t, value.Get(&outcome))
	return outcome, nil
}

func TestPurgeVendorCopy(t *testing.T) {
	t.Parallel()
	vendor, deleted := fakeAssemblyAI(t)
	e := &activities.Erasure{Providers: purgeRegistry(t, vendor)}
	env := erasureEnv(e)
	work := func(provider, handle string) activities.VendorWork {
		return activities.VendorWork{ProviderID: provider, Service: jobs.Transcriptions, Handle: handle}
	}

	for _, tc := range []struct {
		name    string
		work    activities.VendorWork
		outcome providers.PurgeOutcome
	}{
		{"deleted by its handle", work("aai", "t-1"), providers.PurgePurged},
		{"unknown to the vendor: gone already", work("aai", "t-gone"), providers.PurgePurged},
		{"refused for good", work("aai", "t-401"), providers.PurgeFailed},
		{"a vendor that keeps nothing", work("sandbox-fast", ""), providers.PurgeNotRetained},
		{"a purger's work without a handle (its history gone)", work("aai", ""), providers.PurgeFailed},
		{"a provider no longer in the catalog", work("gone", "h-1"), providers.PurgeFailed},
	} {
		outcome, err := purge(t, env, e, tc.work)
		require.NoError(t, err, tc.name)
		require.Equal(t, string(tc.outcome), outcome, tc.name)
	}
	require.Equal(t, []string{"t-1", "t-gone", "t-401"}, *deleted, "only work with a handle is deleted at the vendor")

	// An outage is retried: the activity fails, retryably.
	_, err := purge(t, env, e, work("aai", "t-503"))
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, activities.ErrTypeErasure, appErr.Type())
	require.False(t, appErr.NonRetryable())

	// A worker without providers cannot purge: retried until one can.
	noProviders := &activities.Erasure{}
	_, err = purge(t, erasureEnv(noProviders), noProviders, work("aai", "t-1"))
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, activities.ErrTypeErasure, appErr.Type())
	require.False(t, appErr.NonRetryable())
}

func TestDeleteJobFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, err := blobstore.Open(t.Context(), blobstore.Config{Dir: dir, SigningKey: []byte("0123456789abcdef0123456789abcdef"), BaseURL: "http://files.test"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = files.Close() })
	const other = "0193a9d4-7c5e-7000-8000-0000000000e2"
	for _, key := range []string{
		activities.ResultPrefix(erasedJob) + "transcript.srt",
		activities.WorkPrefix(erasedJob) + "source.wav",
		activities.WorkPrefix(erasedJob) + "audio.wav",
		activities.ResultPrefix(other) + "transcript.srt",
	} {
		_, err := files.Put(t.Context(), key, "application/octet-stream", strings.NewReader("content of "+key))
		require.NoError(t, err)
	}

	e := &activities.Erasure{Files: files}
	env := erasureEnv(e)
	value, err := env.ExecuteActivity(e.DeleteJobFiles, erasedJob)
	require.NoError(t, err)
	var removed int
	require.NoError(t, value.Get(&removed))
	require.Equal(t, 3, removed)

	var left []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			left = append(left, filepath.ToSlash(rel))
		}
		return err
	}))
	for _, f := range left {
		require.NotContains(t, f, erasedJob, "the job's files and their attributes are gone: %v", left)
	}
	require.Contains(t, left, activities.ResultPrefix(other)+"transcript.srt", "other jobs' files stay")

	// Again (a retried activity): nothing left to remove.
	value, err = env.ExecuteActivity(e.DeleteJobFiles, erasedJob)
	require.NoError(t, err)
	require.NoError(t, value.Get(&removed))
	require.Zero(t, removed)

	// A worker without a file store has none to delete.
	bare := &activities.Erasure{}
	value, err = erasureEnv(bare).ExecuteActivity(bare.DeleteJobFiles, erasedJob)
	require.NoError(t, err)
	require.NoError(t, value.Get(&removed))
	require.Zero(t, removed)
}

// tombstoneStore records FinishErasure.
type tombstoneStore struct {
	id     string
	copies []jobs.VendorCopy
	at     time.Time
}

func (s *tombstoneStore) FinishErasure(_ context.Context, id string, copies []jobs.VendorCopy, at time.Time) error {
	s.id, s.copies, s.at = id, copies, at
	return nil
}

func TestFinishErasure(t *testing.T) {
	t.Parallel()
	st := &tombstoneStore{}
	e := &activities.Erasure{Tombstones: st}
	copies := []jobs.VendorCopy{{Provider: "aai", Outcome: "purged"}}
	_, err := erasureEnv(e).ExecuteActivity(e.FinishErasure, erasedJob, copies)
	require.NoError(t, err)
	require.Equal(t, erasedJob, st.id)
	require.Equal(t, copies, st.copies)
	require.WithinDuration(t, time.Now(), st.at, time.Minute)

	bare := &activities.Erasure{}
	_, err = erasureEnv(bare).ExecuteActivity(bare.FinishErasure, erasedJob, copies)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, activities.ErrTypeErasure, appErr.Type())
}

// described is a DescribeWorkflowExecution answer for a run in status.
func described(run string, status enumspb.WorkflowExecutionStatus) *workflowservice.DescribeWorkflowExecutionResponse {
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: erasedJob, RunId: run}, Status: status,
	}}
}

func TestStopJobWorkflow(t *testing.T) {
	t.Parallel()
	running := described("run-1", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)
	cancelled := described("run-1", enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED)

	t.Run("cancelled and ended", func(t *testing.T) {
		t.Parallel()
		tc := mocks.NewClient(t)
		tc.On("DescribeWorkflowExecution", mock.Anything, erasedJob, "").Return(running, nil).Once()
		tc.On("CancelWorkflow", mock.Anything, erasedJob, "").Return(nil).Once()
		tc.On("DescribeWorkflowExecution", mock.Anything, erasedJob, "").Return(cancelled, nil).Once()
		e := &activities.Erasure{Temporal: tc, StopWait: 10 * time.Second}
		_, err := erasureEnv(e).ExecuteActivity(e.StopJobWorkflow, erasedJob)
		require.NoError(t, err)
	})

	t.Run("terminated when it does not end", func(t *testing.T) {
		t.Parallel()
		tc := mocks.NewClient(t)
		tc.On("DescribeWorkflowExecution", mock.Anything, erasedJob, "").Return(running, nil)
		tc.On("CancelWorkflow", mock.Anything, erasedJob, "").Return(nil).Once()
		tc.On("TerminateWorkflow", mock.Anything, erasedJob, "", "job deleted").Return(nil).Once()
		e := &activities.Erasure{Temporal: tc, StopWait: 1200 * time.Millisecond}
		_, err := erasureEnv(e).ExecuteActivity(e.StopJobWorkflow, erasedJob)
		require.NoError(t, err)
	})

	t.Run("ended or never started", func(t *testing.T) {
		t.Parallel()
		for _, answer := range []struct {
			desc *workflowservice.DescribeWorkflowExecutionResponse
			err  error
		}{{described("run-1", enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED), nil}, {nil, serviceerror.NewNotFound("workflow not found")}} {
			tc := mocks.NewClient(t)
			tc.On("DescribeWorkflowExecution", mock.Anything, erasedJob, "").Return(answer.desc, answer.err).Once()
			e := &activities.Erasure{Temporal: tc}
			_, err := erasureEnv(e).ExecuteActivity(e.StopJobWorkflow, erasedJob)
			require.NoError(t, err, "nothing to stop")
		}
	})
}

// history is a client.HistoryEventIterator over events.
type history struct{ events []*historypb.HistoryEvent }

func (h *history) HasNext() bool { return len(h.events) > 0 }

func (h *history) Next() (*historypb.HistoryEvent, error) {
	e := h.events[0]
	h.events = h.events[1:]
	return e, nil
}

func payloads(t *testing.T, v any) *commonpb.Payloads {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayloads(v)
	require.NoError(t, err)
	return p
}

// submitted are the events of one SubmitToProvider activity (scheduled
// as event id, completed with handle; "" leaves it uncompleted).
func submitted(t *testing.T, id int64, provider, handle string) []*historypb.HistoryEvent {
	t.Helper()
	events := []*historypb.HistoryEvent{{EventId: id, Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{
		ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
			ActivityType: &commonpb.ActivityType{Name: "SubmitToProvider"},
			Input:        payloads(t, activities.CallInput{JobID: erasedJob, Service: jobs.Transcriptions, ProviderID: provider}),
		}}}}
	if handle != "" {
		events = append(events, &historypb.HistoryEvent{EventId: id + 2, Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{
			ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{
				ScheduledEventId: id, Result: payloads(t, activities.SubmitOutput{Handle: handle, WorkerID: "w"}),
			}}})
	}
	return events
}

// started is a job workflow's first event, its submission with hook.
func started(t *testing.T, hook *jobs.Webhook) *historypb.HistoryEvent {
	t.Helper()
	return &historypb.HistoryEvent{EventId: 1, Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
		WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
			Input: payloads(t, jobs.Submission{JobID: erasedJob, Service: jobs.Transcriptions, Tenant: "acme", Webhook: hook}),
		}}}
}

func TestReadJobTrail(t *testing.T) {
	t.Parallel()
	hook := &jobs.Webhook{URL: "https://hooks.test/jobs"}
	// The operator's retry (run-2) and the first run (run-1), which
	// submitted to aai twice: one submit completed, one did not (aai is
	// named once, by its handle); a CallProvider (a synchronous call)
	// leaves work without a handle.
	first := append([]*historypb.HistoryEvent{started(t, hook)}, submitted(t, 5, "aai", "t-1")...)
	first = append(first, submitted(t, 9, "aai", "")...)
	first = append(first, &historypb.HistoryEvent{EventId: 12, Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{
		ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
			ActivityType: &commonpb.ActivityType{Name: "CallProvider"},
			Input:        payloads(t, activities.CallInput{JobID: erasedJob, Service: jobs.Transcriptions, ProviderID: "sandbox-fast"}),
		}}})
	second := append([]*historypb.HistoryEvent{started(t, hook)}, submitted(t, 5, "dg", "req-9")...)

	tc := mocks.NewClient(t)
	tc.On("ListWorkflow", mock.Anything, mock.MatchedBy(func(r *workflowservice.ListWorkflowExecutionsRequest) bool {
		return r.GetNamespace() == "gateway" && r.GetQuery() == "WorkflowId = '"+erasedJob+"'"
	})).Return(&workflowservice.ListWorkflowExecutionsResponse{Executions: []*workflowpb.WorkflowExecutionInfo{
		{Execution: &commonpb.WorkflowExecution{WorkflowId: erasedJob, RunId: "run-2"}},
		{Execution: &commonpb.WorkflowExecution{WorkflowId: erasedJob, RunId: "run-1"}},
	}}, nil).Once()
	tc.On("GetWorkflowHistory", mock.Anything, erasedJob, "run-2", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT).Return(client.HistoryEventIterator(&history{second})).Once()
	tc.On("GetWorkflowHistory", mock.Anything, erasedJob, "run-1", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT).Return(client.HistoryEventIterator(&history{first})).Once()

	e := &activities.Erasure{Temporal: tc, Namespace: "gateway"}
	value, err := erasureEnv(e).ExecuteActivity(e.ReadJobTrail, erasedJob)
	require.NoError(t, err)
	var trail activities.JobTrail
	require.NoError(t, value.Get(&trail))
	require.Equal(t, []string{"run-2", "run-1"}, trail.Runs)
	require.Equal(t, hook, trail.Webhook)
	require.Equal(t, []activities.VendorWork{
		{ProviderID: "dg", Service: jobs.Transcriptions, Handle: "req-9"},
		{ProviderID: "aai", Service: jobs.Transcriptions, Handle: "t-1"},
		{ProviderID: "sandbox-fast", Service: jobs.Transcriptions},
	}, trail.Submitted)
}

// scheduledCall is a CallProvider activity to provider, scheduled as
// event id; attempt > 0 adds its start at that try, and failure its
// failure.
func scheduledCall(t *testing.T, id int64, provider string, attempt int32, failure error) []*historypb.HistoryEvent {
	t.Helper()
	events := []*historypb.HistoryEvent{{EventId: id, Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{
		ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
			ActivityType: &commonpb.ActivityType{Name: "CallProvider"},
			Input:        payloads(t, activities.CallInput{JobID: erasedJob, Service: jobs.Transcriptions, ProviderID: provider}),
		}}}}
	if attempt > 0 {
		events = append(events, &historypb.HistoryEvent{EventId: id + 1, Attributes: &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{
			ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{ScheduledEventId: id, Attempt: attempt}}})
	}
	if failure != nil {
		events = append(events, &historypb.HistoryEvent{EventId: id + 2, Attributes: &historypb.HistoryEvent_ActivityTaskFailedEventAttributes{
			ActivityTaskFailedEventAttributes: &historypb.ActivityTaskFailedEventAttributes{
				ScheduledEventId: id, Failure: temporal.GetDefaultFailureConverter().ErrorToFailure(failure)}}})
	}
	return events
}

// localActivity is the marker of a local activity of type name, with
// result, or failed with failure.
func localActivity(t *testing.T, id int64, name string, result any, failure error) *historypb.HistoryEvent {
	t.Helper()
	details := map[string]*commonpb.Payloads{"data": payloads(t, map[string]any{"ActivityID": "1", "ActivityType": name, "Attempt": 1})}
	if result != nil {
		details["result"] = payloads(t, result)
	}
	return &historypb.HistoryEvent{EventId: id, Attributes: &historypb.HistoryEvent_MarkerRecordedEventAttributes{
		MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
			MarkerName: "LocalActivity", Details: details, Failure: temporal.GetDefaultFailureConverter().ErrorToFailure(failure)}}}
}

// Every provider call in a deleted job's history may have reached its
// provider, and is named, but one its deletion refused at its first try
// (docs/api.md, Deleting a job).
func TestReadJobTrailNamesCallsUnderWay(t *testing.T) {
	t.Parallel()
	refused := temporal.NewNonRetryableApplicationError("job deleted", activities.ErrTypeJobDeleted, nil)
	route := func(provider string) activities.RouteOutput {
		return activities.RouteOutput{Routing: jobs.RoutingInfo{ProviderID: provider}}
	}
	events := []*historypb.HistoryEvent{started(t, nil),
		// Short calls, local activities: the first to a provider routed
		// to, under way when the job was deleted; the second refused.
		localActivity(t, 2, "DecideRoute", route("local-called"), nil),
		localActivity(t, 3, "CallProvider", activities.CallOutput{Result: []byte(`{}`)}, nil),
		localActivity(t, 4, "DecideRoute", route("local-refused"), nil),
		localActivity(t, 5, "CallAndComplete", nil, refused),
	}
	// Activities: running when the job's workflow ended; refused at
	// its first try; refused at its second (the first called it).
	events = append(events, scheduledCall(t, 10, "running", 1, nil)...)
	events = append(events, scheduledCall(t, 20, "refused", 1, refused)...)
	events = append(events, scheduledCall(t, 30, "retried", 2, refused)...)
	// A submit that did not complete: it may have reached the vendor.
	events = append(events, submitted(t, 40, "aai", "")...)

	tc := mocks.NewClient(t)
	tc.On("ListWorkflow", mock.Anything, mock.Anything).Return(&workflowservice.ListWorkflowExecutionsResponse{Executions: []*workflowpb.WorkflowExecutionInfo{
		{Execution: &commonpb.WorkflowExecution{WorkflowId: erasedJob, RunId: "run-1"}},
	}}, nil).Once()
	tc.On("GetWorkflowHistory", mock.Anything, erasedJob, "run-1", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT).Return(client.HistoryEventIterator(&history{events})).Once()
	e := &activities.Erasure{Temporal: tc, Namespace: "gateway"}
	value, err := erasureEnv(e).ExecuteActivity(e.ReadJobTrail, erasedJob)
	require.NoError(t, err)
	var trail activities.JobTrail
	require.NoError(t, value.Get(&trail))
	var named []string
	for _, w := range trail.Submitted {
		require.Empty(t, w.Handle)
		require.Equal(t, jobs.Transcriptions, w.Service)
		named = append(named, w.ProviderID)
	}
	require.Equal(t, []string{"local-called", "running", "retried", "aai"}, named)
}

// A job whose workflow never started (its start still in the outbox) has
// no trail.
func TestReadJobTrailOfAJobThatNeverStarted(t *testing.T) {
	t.Parallel()
	tc := mocks.NewClient(t)
	tc.On("ListWorkflow", mock.Anything, mock.Anything).Return(&workflowservice.ListWorkflowExecutionsResponse{}, nil).Once()
	tc.On("DescribeWorkflowExecution", mock.Anything, erasedJob, "").Return(nil, serviceerror.NewNotFound("workflow not found")).Once()
	e := &activities.Erasure{Temporal: tc}
	value, err := erasureEnv(e).ExecuteActivity(e.ReadJobTrail, erasedJob)
	require.NoError(t, err)
	var trail activities.JobTrail
	require.NoError(t, value.Get(&trail))
	require.Equal(t, activities.JobTrail{}, trail)
}

// workflowService records DeleteWorkflowExecution requests; the runs in
// gone are NotFound.
type workflowService struct {
	workflowservice.WorkflowServiceClient
	mu      sync.Mutex
	deleted []*commonpb.WorkflowExecution
	gone    map[string]bool
	fail    error
}

func (s *workflowService) DeleteWorkflowExecution(_ context.Context, req *workflowservice.DeleteWorkflowExecutionRequest, _ ...grpc.CallOption) (*workflowservice.DeleteWorkflowExecutionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleted = append(s.deleted, req.GetWorkflowExecution())
	if req.GetNamespace() != "gateway" {
		return nil, errors.New("wrong namespace " + req.GetNamespace())
	}
	if s.fail != nil {
		return nil, s.fail
	}
	if s.gone[req.GetWorkflowExecution().GetRunId()] {
		return nil, serviceerror.NewNotFound("workflow execution not found")
	}
	return &workflowservice.DeleteWorkflowExecutionResponse{}, nil
}

func TestDeleteJobRuns(t *testing.T) {
	t.Parallel()
	svc := &workflowService{gone: map[string]bool{"run-1": true}}
	tc := mocks.NewClient(t)
	tc.On("WorkflowService").Return(svc)
	notFound := serviceerror.NewNotFound("workflow not found")
	// Temporal deletes in the background: run-2 is there for one more
	// look, then gone.
	tc.On("DescribeWorkflowExecution", mock.Anything, erasedJob, "run-2").Return(described("run-2", enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED), nil).Once()
	tc.On("DescribeWorkflowExecution", mock.Anything, erasedJob, mock.Anything).Return(nil, notFound)
	e := &activities.Erasure{Temporal: tc, Namespace: "gateway"}
	env := erasureEnv(e)

	_, err := env.ExecuteActivity(e.DeleteJobRuns, erasedJob, []string{"run-2", "run-1"})
	require.NoError(t, err, "a run deleted already is no failure")
	require.Len(t, svc.deleted, 2)
	tc.AssertNumberOfCalls(t, "DescribeWorkflowExecution", 4)
	require.Equal(t, "run-2", svc.deleted[0].GetRunId())
	require.Equal(t, "run-1", svc.deleted[1].GetRunId())
	require.Equal(t, erasedJob, svc.deleted[0].GetWorkflowId())

	// No run known: the latest, whatever it is.
	svc.deleted = nil
	_, err = env.ExecuteActivity(e.DeleteJobRuns, erasedJob, []string(nil))
	require.NoError(t, err)
	require.Len(t, svc.deleted, 1)
	require.Empty(t, svc.deleted[0].GetRunId())

	// Temporal away: the activity fails, to be retried.
	svc.fail = serviceerror.NewUnavailable("frontend unavailable")
	_, err = env.ExecuteActivity(e.DeleteJobRuns, erasedJob, []string{"run-2"})
	require.Error(t, err)
}
