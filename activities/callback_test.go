package activities_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// postingAdapter is an asynchronous adapter whose vendor posts back: it
// records the callback address it was given and answers a check from the
// posted body.
type postingAdapter struct {
	scriptedAdapter
	mu          sync.Mutex
	callbackURL string
}

func (a *postingAdapter) Submit(_ context.Context, call providers.Call) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.callbackURL = call.CallbackURL
	return "request-1", nil
}

func (a *postingAdapter) Check(_ context.Context, call providers.Call, _ string) (providers.Check, error) {
	if call.Callback == nil {
		return providers.Check{}, nil
	}
	return providers.Check{Done: true, Result: call.Callback}, nil
}

// callbackStore holds posted bodies in memory.
type callbackStore struct {
	mu     sync.Mutex
	bodies map[string][]byte // job id + attempt
	before time.Time
}

func (s *callbackStore) ProviderCallback(_ context.Context, jobID string, attempt int) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, ok := s.bodies[jobID+"/"+strconv.Itoa(attempt)]
	return body, ok, nil
}

func (s *callbackStore) DeleteProviderCallbacksBefore(_ context.Context, t time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before = t
	n := len(s.bodies) // all are older than t in these tests
	clear(s.bodies)
	return int64(n), nil
}

type addresses struct{}

func (addresses) URL(jobID string, attempt int) string {
	return "https://gw.test/v1/provider-callbacks/" + jobID + "/" + strconv.Itoa(attempt) + "?token=t"
}

func TestSubmitGivesTheCallbackAddressAndCheckReadsThePost(t *testing.T) {
	t.Parallel()
	adapter := &postingAdapter{}
	registry := registryOf(t, llmCatalog("posting", "Posting", "posting", ""),
		map[string]providers.Factory{"posting": answeredBy(adapter)})
	posts := &callbackStore{bodies: map[string][]byte{}}
	acts := activities.New(activities.Deps{Store: &recordingStore{}, Providers: registry, WorkerID: "worker-7",
		CallbackURLs: addresses{}, Callbacks: posts})
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts.Register(env)

	in := activities.CallInput{JobID: "job-1", Service: jobs.LLMTasks, ProviderID: "posting", Attempt: 2,
		Input: json.RawMessage(`{"type":"text","text":"t","prompt":"p"}`)}
	_, err := env.ExecuteActivity(acts.AsyncCalls.SubmitToProvider, in)
	require.NoError(t, err)
	require.Equal(t, "https://gw.test/v1/provider-callbacks/job-1/2?token=t", adapter.callbackURL)

	check := func() activities.CheckOutput {
		t.Helper()
		value, err := env.ExecuteActivity(acts.AsyncCalls.CheckProvider, activities.CheckInput{Call: in, Handle: "request-1", Since: time.Now()})
		require.NoError(t, err)
		var out activities.CheckOutput
		require.NoError(t, value.Get(&out))
		return out
	}
	require.False(t, check().Done, "nothing posted yet")

	posts.bodies["job-1/1"] = []byte(`{"content":"from attempt 1","finish_reason":"completed"}`)
	require.False(t, check().Done, "a post about another attempt is not this one's")

	posts.bodies["job-1/2"] = []byte(`{"content":"posted","finish_reason":"completed"}`)
	out := check()
	require.True(t, out.Done)
	require.JSONEq(t, `{"content":"posted","finish_reason":"completed"}`, string(out.Output.Result))
	require.NotEmpty(t, posts.bodies, "kept for a retry of the check; the sweep removes it")

	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	removed, err := acts.Sweeps.SweepProviderCallbacks(context.Background(), now)
	require.NoError(t, err)
	require.Equal(t, now.Add(-24*time.Hour), posts.before)
	require.Equal(t, 2, removed, "the store's count")
}
