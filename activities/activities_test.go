package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// recordingStore remembers what the activities wrote; the store's own tests
// cover the database.
type recordingStore struct {
	mu       sync.Mutex
	saved    []*jobs.Record
	progress []int
	ledger   []*store.UsageEntry
	// failSaves fails every projection write with it.
	failSaves error
}

func (s *recordingStore) SaveJobUsage(ctx context.Context, job *jobs.Record, entry *store.UsageEntry) error {
	s.mu.Lock()
	s.ledger = append(s.ledger, entry)
	s.mu.Unlock()
	return s.SaveJob(ctx, job)
}

func (s *recordingStore) SaveJob(_ context.Context, job *jobs.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failSaves != nil {
		return s.failSaves
	}
	s.saved = append(s.saved, job)
	return nil
}

func (s *recordingStore) UpdateProgress(_ context.Context, _ string, progress int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.progress = append(s.progress, progress)
	return nil
}

// scriptedAdapter is a provider adapter whose outcome a test sets.
type scriptedAdapter struct {
	err        error
	resumeFrom int
	steps      []int
	hold       time.Duration // how long the call takes after its steps
}

// Services declares every service: the tests' catalogs decide.
func (a *scriptedAdapter) Services() []jobs.ServiceID { return jobs.ServiceIDs() }

func (a *scriptedAdapter) Run(ctx context.Context, call providers.Call) (json.RawMessage, error) {
	a.resumeFrom = call.ResumeFrom
	for _, p := range a.steps {
		call.Progress(p)
	}
	select {
	case <-time.After(a.hold):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if a.err != nil {
		return nil, a.err
	}
	return json.RawMessage(`{"content":"ok","finish_reason":"completed"}`), nil
}

func setup(t *testing.T, adapter *scriptedAdapter) (*testsuite.TestActivityEnvironment, *recordingStore) {
	t.Helper()
	acts, st := scriptedActivities(t, adapter, time.Hour)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts.Register(env)
	return env, st
}

// scriptedActivities returns the activities with one provider, "scripted",
// whose calls adapter answers.
func scriptedActivities(t *testing.T, adapter *scriptedAdapter, heartbeatInterval time.Duration) (*activities.Set, *recordingStore) {
	t.Helper()
	registry := registryOf(t, llmCatalog("scripted", "Scripted", "scripted", ""),
		map[string]providers.Factory{"scripted": answeredBy(adapter)})
	st := &recordingStore{}
	return activities.New(activities.Deps{Store: st, Providers: registry, WorkerID: "worker-7", HeartbeatInterval: heartbeatInterval}), st
}

// registryOf parses catalog and returns its registry, whose adapters
// factories make.
func registryOf(t testing.TB, catalog string, factories map[string]providers.Factory) *providers.Registry {
	t.Helper()
	parsed, err := providers.ParseCatalog([]byte(catalog))
	require.NoError(t, err)
	registry, err := providers.NewRegistry(parsed, factories)
	require.NoError(t, err)
	return registry
}

// answeredBy is a factory whose every provider's adapter is adapter.
func answeredBy(adapter providers.Adapter) providers.Factory {
	return func(*providers.Provider) (providers.Adapter, error) { return adapter, nil }
}

// llmCatalog is a catalog of one provider, id, named name, of adapter,
// offering llm-tasks with model m1; more are further lines of its entry.
func llmCatalog(id, name, adapter, more string) string {
	return `providers:
  - id: ` + id + `
    name: ` + name + `
    adapter: ` + adapter + `
` + more + `    services:
      llm-tasks:
        models: [m1]
        pricing: {unit: per_token, amount: 0.000001, currency: USD}
`
}

// onceWorkflow returns a workflow test environment whose activities set
// registers, with a minute's idle timeout, and the workflow, registered in
// it, that runs activity once with heartbeatTimeout and returns its Out.
func onceWorkflow[In, Out any](set *activities.Set, activity any, heartbeatTimeout time.Duration) (*testsuite.TestWorkflowEnvironment, func(workflow.Context, In) (Out, error)) {
	once := func(ctx workflow.Context, in In) (Out, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			HeartbeatTimeout:    heartbeatTimeout,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		var out Out
		err := workflow.ExecuteActivity(ctx, activity, in).Get(ctx, &out)
		return out, err
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(once, workflow.RegisterOptions{Name: "once"})
	set.Register(env)
	// The default idle timeout (3 s) would end the test during the call.
	env.SetTestTimeout(time.Minute)
	return env, once
}

func call() activities.CallInput {
	return activities.CallInput{JobID: "job-1", Service: jobs.LLMTasks, ProviderID: "scripted",
		Input: json.RawMessage(`{"type":"text","text":"t","prompt":"p"}`)}
}

// acts names activities by their methods, through nil receivers.
var acts activities.Set

func TestCallProviderReturnsResultAndProjectsProgress(t *testing.T) {
	t.Parallel()
	adapter := &scriptedAdapter{steps: []int{0, 30, 20, 60, 100}}
	env, st := setup(t, adapter)
	value, err := env.ExecuteActivity(acts.Calls.CallProvider, call())
	require.NoError(t, err)
	var out activities.CallOutput
	require.NoError(t, value.Get(&out))
	require.JSONEq(t, `{"content":"ok","finish_reason":"completed"}`, string(out.Result))
	require.Equal(t, "worker-7", out.WorkerID)
	require.Equal(t, []int{30, 60}, st.progress, "progress only rises; 0 and 100 are the workflow's own writes")
}

func TestCallProviderHeartbeatsKeepALongCallAlive(t *testing.T) {
	t.Parallel()
	// The call takes 2.5 heartbeat timeouts and has one try: only its
	// heartbeats (every half timeout by default) keep it from timing out.
	const heartbeatTimeout = 2 * time.Second
	adapter := &scriptedAdapter{steps: []int{0, 30}, hold: 5 * time.Second}
	set, _ := scriptedActivities(t, adapter, 0)
	env, callOnce := onceWorkflow[activities.CallInput, activities.CallOutput](set, set.Calls.CallProvider, heartbeatTimeout)
	env.ExecuteWorkflow(callOnce, call())
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError(), "the call timed out: its heartbeats did not reach the server")
}

func TestCallProviderResumesFromHeartbeat(t *testing.T) {
	t.Parallel()
	adapter := &scriptedAdapter{}
	env, _ := setup(t, adapter)
	env.SetHeartbeatDetails(40)
	_, err := env.ExecuteActivity(acts.Calls.CallProvider, call())
	require.NoError(t, err)
	require.Equal(t, 40, adapter.resumeFrom)
}

func TestCallProviderClassifiesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		err          error
		wantType     string
		nonRetryable bool
		wantCode     string
	}{
		{"retryable", providers.Retryable(jobs.CodeProviderUnavailable, "503", nil), activities.ErrTypeProviderUnavailable, false, jobs.CodeProviderUnavailable},
		{"permanent", providers.Permanent(jobs.CodeProviderRejected, "401", nil), activities.ErrTypeProviderRejected, true, jobs.CodeProviderRejected},
		{"input", providers.InputError(jobs.CodeAudioUnreadable, "404", nil), activities.ErrTypeInvalidInput, true, jobs.CodeAudioUnreadable},
		{"unclassified", errors.New("boom"), activities.ErrTypeProviderUnavailable, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, _ := setup(t, &scriptedAdapter{err: tt.err})
			_, err := env.ExecuteActivity(acts.Calls.CallProvider, call())
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "%v", err)
			require.Equal(t, tt.wantType, appErr.Type())
			require.Equal(t, tt.nonRetryable, appErr.NonRetryable())
			if tt.wantCode != "" {
				var jobErr jobs.Error
				require.NoError(t, appErr.Details(&jobErr))
				require.Equal(t, tt.wantCode, jobErr.Code)
			}
		})
	}
}

func TestCallProviderUnknownProvider(t *testing.T) {
	t.Parallel()
	env, _ := setup(t, &scriptedAdapter{})
	in := call()
	in.ProviderID = "gone"
	_, err := env.ExecuteActivity(acts.Calls.CallProvider, in)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr))
	require.Equal(t, activities.ErrTypeProviderRejected, appErr.Type())
	require.True(t, appErr.NonRetryable())
}

func TestDecideRoute(t *testing.T) {
	t.Parallel()
	env, _ := setup(t, &scriptedAdapter{})
	in := activities.RouteInput{JobID: "job-1", Service: jobs.LLMTasks, Input: json.RawMessage(`{}`), Attempt: 1}
	value, err := env.ExecuteActivity(acts.Routing.DecideRoute, in)
	require.NoError(t, err)
	var out activities.RouteOutput
	require.NoError(t, value.Get(&out))
	require.Nil(t, out.Error)
	require.Equal(t, "scripted", out.Routing.ProviderID)
	require.Equal(t, jobs.ReasonDefault, out.Routing.Reason)

	in.Failed = []string{"scripted"}
	in.Attempt = 2
	value, err = env.ExecuteActivity(acts.Routing.DecideRoute, in)
	require.NoError(t, err, "running out of providers is a decision, not an activity failure")
	require.NoError(t, value.Get(&out))
	require.Equal(t, jobs.CodeProvidersExhausted, out.Error.Code)
	require.Equal(t, jobs.EvalFailed, out.Routing.ProviderEvaluations[0].Reason)
}

func TestSaveJobProjectsSnapshot(t *testing.T) {
	t.Parallel()
	env, st := setup(t, &scriptedAdapter{})
	processed := time.Date(2026, 11, 21, 12, 0, 1, 0, time.UTC)
	routing := jobs.RoutingInfo{ProviderID: "scripted", Reason: jobs.ReasonDefault, Attempt: 1}
	_, err := env.ExecuteActivity(acts.Projections.SaveJob, jobs.Snapshot{
		ID: "job-1", Service: "llm-tasks", Tenant: "acme", UserID: "u", Status: jobs.StatusFailed,
		Input: json.RawMessage(`{"a":1}`), Routing: &routing, RoutingHistory: []jobs.RoutingInfo{routing},
		Error: &jobs.Error{Code: "PROVIDERS_EXHAUSTED", Message: "m"}, ProcessedAt: &processed, Revision: 3,
	})
	require.NoError(t, err)
	require.Len(t, st.saved, 1)
	row := st.saved[0]
	require.Equal(t, "PROVIDERS_EXHAUSTED", row.ErrorCode)
	require.Equal(t, 3, row.Revision)
	require.JSONEq(t, `{"a":1}`, row.Input)
	require.Contains(t, row.Routing, `"provider_id":"scripted"`)
	require.Contains(t, row.RoutingHistory, `"reason":"default"`)
	require.Equal(t, processed, *row.ProcessedAt)
}

// timedAdapter is a scripted adapter that knows how long its calls take.
type timedAdapter struct {
	scriptedAdapter
	d time.Duration
}

func (t *timedAdapter) ExpectedDuration() time.Duration { return t.d }

func TestDecideRouteCallsShortProvidersLocally(t *testing.T) {
	t.Parallel()
	timed := func(d time.Duration) providers.Factory {
		return func(*providers.Provider) (providers.Adapter, error) { return &timedAdapter{d: d}, nil }
	}
	registry := registryOf(t, `providers:
  - {id: quick, name: Quick, adapter: timed-1000ms, services: {llm-tasks: {models: [m1], pricing: {unit: per_token, amount: 0, currency: USD}}}}
  - {id: slow, name: Slow, adapter: timed-1001ms, services: {llm-tasks: {models: [m1], pricing: {unit: per_token, amount: 0, currency: USD}}}}
  - {id: hinted, name: Hinted, adapter: scripted, latency_ms_hint: 10, services: {llm-tasks: {models: [m1], pricing: {unit: per_token, amount: 0, currency: USD}}}}
`, map[string]providers.Factory{
		"timed-1000ms": timed(activities.ShortCall),
		"timed-1001ms": timed(activities.ShortCall + time.Millisecond),
		"scripted":     func(*providers.Provider) (providers.Adapter, error) { return &scriptedAdapter{}, nil },
	})
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&activities.Routing{Providers: registry})

	// Only an adapter's own estimate makes a call local; a catalog hint
	// is a routing input and promises nothing.
	for provider, local := range map[string]bool{"quick": true, "slow": false, "hinted": false} {
		in := activities.RouteInput{JobID: "job-1", Service: jobs.LLMTasks, Input: json.RawMessage(`{}`), Explicit: provider, Attempt: 1}
		value, err := env.ExecuteActivity(acts.Routing.DecideRoute, in)
		require.NoError(t, err)
		var out activities.RouteOutput
		require.NoError(t, value.Get(&out))
		require.Equal(t, provider, out.Routing.ProviderID)
		require.Equal(t, local, out.CallLocally, provider)
	}
}

func TestCallProviderPassesOnRetryAfter(t *testing.T) {
	t.Parallel()
	busy := providers.Retryable(jobs.CodeProviderUnavailable, "429", nil)
	busy.RetryAfter = 7 * time.Second
	env, _ := setup(t, &scriptedAdapter{err: busy})
	_, err := env.ExecuteActivity(acts.Calls.CallProvider, call())
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, activities.ErrTypeProviderUnavailable, appErr.Type())
	require.Equal(t, 7*time.Second, appErr.NextRetryDelay(), "the next try waits as the provider asked")
	require.False(t, appErr.NonRetryable())
}
