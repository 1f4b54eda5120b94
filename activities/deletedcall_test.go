package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// countingAdapter counts the calls that reach the provider; during runs
// while a call is under way.
type countingAdapter struct {
	calls  atomic.Int32
	during func(ctx context.Context)
}

func (a *countingAdapter) Services() []jobs.ServiceID { return jobs.ServiceIDs() }

func (a *countingAdapter) Run(ctx context.Context, _ providers.Call) (json.RawMessage, error) {
	a.calls.Add(1)
	if a.during != nil {
		a.during(ctx)
	}
	return json.RawMessage(`{"content":"ok","finish_reason":"completed"}`), nil
}

// pendingJob records a pending llm task in st, as the API accepts one.
func pendingJob(t *testing.T, st *store.Store) string {
	t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	require.NoError(t, st.Jobs.SaveJob(t.Context(), &jobs.Record{ID: id, Tenant: "acme", Service: jobs.LLMTasks,
		Status: jobs.StatusPending, Input: `{"type":"text","text":"t","prompt":"p"}`, CreatedAt: time.Now().UTC()}))
	return id
}

// callsEnv is an activity environment whose provider "scripted" adapter
// answers, checking deletions in st.
func callsEnv(t *testing.T, adapter providers.Adapter, st *store.Store) *testsuite.TestActivityEnvironment {
	t.Helper()
	registry := registryOf(t, llmCatalog("scripted", "Scripted", "scripted", ""),
		map[string]providers.Factory{"scripted": answeredBy(adapter)})
	set := activities.New(activities.Deps{Store: &recordingStore{}, Providers: registry, WorkerID: "w", HeartbeatInterval: time.Hour, Jobs: st.Jobs})
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	set.Register(env)
	return env
}

// The race of a job deleted while pending, after a dispatcher took its
// start: its workflow runs, and its provider call finds the tombstone and
// is not made, failing for good.
func TestCallOfAJobDeletedBeforeItIsNotMade(t *testing.T) {
	t.Parallel()
	st := storetest.SQLite(t)
	adapter := &countingAdapter{}
	env := callsEnv(t, adapter, st)

	id := pendingJob(t, st)
	_, _, err := st.Jobs.DeleteJob(t.Context(), id, "alice", time.Now())
	require.NoError(t, err)
	in := call()
	in.JobID = id
	for _, activity := range []any{acts.Calls.CallProvider, acts.Calls.CallAndComplete} {
		var arg any = in
		if _, ok := activity.(func(context.Context, activities.CompleteInput) (activities.CompletedCall, error)); ok {
			arg = activities.CompleteInput{Call: in, Job: jobs.Snapshot{ID: id, Service: jobs.LLMTasks, Status: jobs.StatusProcessing}}
		}
		_, err = env.ExecuteActivity(activity, arg)
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(err, &appErr), "%v", err)
		require.Equal(t, activities.ErrTypeJobDeleted, appErr.Type())
		require.True(t, appErr.NonRetryable())
	}
	require.Zero(t, adapter.calls.Load(), "the provider was called for a deleted job")

	// A job that was not deleted is called.
	in.JobID = pendingJob(t, st)
	_, err = env.ExecuteActivity(acts.Calls.CallProvider, in)
	require.NoError(t, err)
	require.EqualValues(t, 1, adapter.calls.Load())
}

// A job deleted while its call is under way: the call is made and ends
// as it would have, and the erasure's reading of the history that call
// leaves names its provider, whose copy vendor_copies then lists
// (docs/api.md, Deleting a job), whether the call ran as an activity or,
// a short one, as a local activity.
func TestCallUnderWayWhenItsJobIsDeletedIsNamed(t *testing.T) {
	t.Parallel()
	st := storetest.SQLite(t)
	id := pendingJob(t, st)
	adapter := &countingAdapter{during: func(ctx context.Context) {
		_, _, err := st.Jobs.DeleteJob(ctx, id, "alice", time.Now())
		require.NoError(t, err)
	}}
	in := call()
	in.JobID = id
	value, callErr := callsEnv(t, adapter, st).ExecuteActivity(acts.Calls.CallProvider, in)
	require.EqualValues(t, 1, adapter.calls.Load())
	_, err := st.Jobs.GetTombstone(t.Context(), id)
	require.NoError(t, err, "the job was deleted during its call")
	var out *activities.CallOutput
	if callErr == nil {
		out = &activities.CallOutput{}
		require.NoError(t, value.Get(out))
	}
	// The history holds the error the activity returned, not the
	// environment's wrapping of it.
	var appErr *temporal.ApplicationError
	if errors.As(callErr, &appErr) {
		callErr = appErr
	}

	// The call's outcome, as the job's history holds it.
	activityCall := append([]*historypb.HistoryEvent{started(t, nil)}, scheduledCall(t, 5, "scripted", 1, callErr)...)
	var result any // the local activity's: none when the call failed
	if out != nil {
		activityCall = append(activityCall, &historypb.HistoryEvent{EventId: 7, Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{
			ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{ScheduledEventId: 5, Result: payloads(t, out)}}})
		result = out
	}
	shortCall := []*historypb.HistoryEvent{started(t, nil),
		localActivity(t, 2, "DecideRoute", activities.RouteOutput{Routing: jobs.RoutingInfo{ProviderID: "scripted"}}, nil),
		localActivity(t, 3, "CallProvider", result, callErr),
	}
	for name, events := range map[string][]*historypb.HistoryEvent{"activity": activityCall, "short call": shortCall} {
		t.Run(name, func(t *testing.T) {
			tc := mocks.NewClient(t)
			tc.On("ListWorkflow", mock.Anything, mock.Anything).Return(&workflowservice.ListWorkflowExecutionsResponse{Executions: []*workflowpb.WorkflowExecutionInfo{
				{Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: "run-1"}},
			}}, nil).Once()
			tc.On("GetWorkflowHistory", mock.Anything, id, "run-1", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT).Return(client.HistoryEventIterator(&history{events})).Once()
			e := &activities.Erasure{Temporal: tc}
			value, err := erasureEnv(e).ExecuteActivity(e.ReadJobTrail, id)
			require.NoError(t, err)
			var trail activities.JobTrail
			require.NoError(t, value.Get(&trail))
			require.Equal(t, []activities.VendorWork{{ProviderID: "scripted", Service: jobs.Transcriptions}}, trail.Submitted)
		})
	}
}

// errorLines records the ERROR lines of the SDK's logger.
type errorLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *errorLines) Enabled(context.Context, slog.Level) bool { return true }

func (l *errorLines) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		l.mu.Lock()
		l.lines = append(l.lines, r.Message)
		l.mu.Unlock()
	}
	return nil
}

func (l *errorLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *errorLines) WithGroup(string) slog.Handler      { return l }

func (l *errorLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// A call cancelled with its job (a cancel, a batch's cancel, a deletion)
// ends cancelled, and the worker logs no error for it, whether the
// adapter returns the context's error or wraps it as providers do.
func TestCancelledCallIsNoError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		adapter providers.Adapter
	}{
		{"context error", &scriptedAdapter{hold: time.Hour}},
		{"wrapped by the adapter", wrappingAdapter{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logged := &errorLines{}
			var suite testsuite.WorkflowTestSuite
			suite.SetLogger(log.NewStructuredLogger(slog.New(logged)))
			env := suite.NewTestActivityEnvironment()
			// Temporal cancels an activity's context with a CanceledError
			// as its cause.
			ctx, cancel := context.WithCancelCause(context.Background())
			env.SetWorkerOptions(worker.Options{BackgroundActivityContext: ctx})
			registry := registryOf(t, llmCatalog("scripted", "Scripted", "scripted", ""),
				map[string]providers.Factory{"scripted": answeredBy(tc.adapter)})
			activities.New(activities.Deps{Store: &recordingStore{}, Providers: registry, WorkerID: "w", HeartbeatInterval: time.Hour}).Register(env)
			time.AfterFunc(100*time.Millisecond, func() { cancel(temporal.NewCanceledError()) })

			_, err := env.ExecuteActivity(acts.Calls.CallProvider, call())
			require.Error(t, err)
			require.True(t, temporal.IsCanceledError(err), "%v", err)
			require.Empty(t, logged.all(), "a cancelled call is not an error")
		})
	}
}

// wrappingAdapter waits for its context's end, then fails as an HTTP
// adapter does: a retryable provider error wrapping it.
type wrappingAdapter struct{}

func (wrappingAdapter) Services() []jobs.ServiceID { return jobs.ServiceIDs() }

func (wrappingAdapter) Run(ctx context.Context, _ providers.Call) (json.RawMessage, error) {
	<-ctx.Done()
	return nil, providers.Retryable(jobs.CodeProviderUnavailable, "request failed", ctx.Err())
}
