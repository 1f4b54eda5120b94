package activities_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// breakerFleet: "cheap" has a tight breaker: three calls, half failed,
// open it for a second; one probe closes it.
const breakerFleet = `providers:
  - id: cheap
    name: Cheap
    adapter: flaky
    circuit_breaker: {minimum_calls: 3, failure_rate_percent: 50, open_seconds: 1, half_open_probes: 1, close_after_successes: 1}
    services:
      llm-tasks:
        models: [m1]
        pricing: {unit: per_token, amount: 0.000001, currency: USD}
  - id: good
    name: Good
    adapter: steady
    services:
      llm-tasks:
        models: [m1]
        pricing: {unit: per_token, amount: 0.00001, currency: USD}
`

// breakerFixture is an activity environment over breakerFleet: flaky
// answers the calls to "cheap", callCheap calls it, state reads its
// breaker from the store.
func breakerFixture(t *testing.T, cache *store.Cache, breakers activities.BreakerStore) (env *testsuite.TestActivityEnvironment, flaky *scriptedAdapter, callCheap func(), state func() breaker.Breaker) {
	t.Helper()
	flaky = &scriptedAdapter{}
	registry := registryOf(t, breakerFleet, map[string]providers.Factory{
		"flaky": answeredBy(flaky), "steady": answeredBy(&scriptedAdapter{}),
	})
	set := activities.New(activities.Deps{Store: &recordingStore{}, Routing: cache, Breakers: breakers, Providers: registry, WorkerID: "w"})
	var suite testsuite.WorkflowTestSuite
	env = suite.NewTestActivityEnvironment()
	set.Register(env)
	callCheap = func() {
		in := call()
		in.ProviderID = "cheap"
		_, _ = env.ExecuteActivity(acts.Calls.CallProvider, in)
	}
	state = func() breaker.Breaker {
		all, err := cache.Store.Breakers.Breakers(t.Context())
		require.NoError(t, err)
		return all[store.BreakerKey{ProviderID: "cheap", Service: jobs.LLMTasks}]
	}
	return env, flaky, callCheap, state
}

func TestCallsFeedTheBreakerAndRoutingHonoursIt(t *testing.T) {
	t.Parallel()
	cache := store.NewCache(storetest.SQLite(t), store.CacheTTL)
	env, flaky, callCheap, state := breakerFixture(t, cache, cache)

	// Refusals and the job's input errors are not the provider's failures.
	flaky.err = providers.Permanent(jobs.CodeProviderRejected, "401", nil)
	callCheap()
	flaky.err = providers.InputError(jobs.CodeInvalidInput, "bad", nil)
	callCheap()
	calls, _ := state().Counts(breaker.Defaults(), time.Now())
	require.Zero(t, calls)

	flaky.err = providers.Retryable(jobs.CodeProviderUnavailable, "503", nil)
	callCheap()
	flaky.err = nil
	callCheap()
	flaky.err = providers.Retryable(jobs.CodeProviderUnavailable, "429", nil)
	callCheap()
	require.Equal(t, breaker.Open, state().Effective(time.Now()), "two failures of three calls")

	out := route(t, env, llmJob())
	require.Equal(t, "good", out.Routing.ProviderID)
	require.Equal(t, "circuit_open", reasonOf(out, "cheap"))

	// Its interval over, one job probes it, the next does not.
	time.Sleep(time.Until(state().OpenUntil) + 10*time.Millisecond)
	out = route(t, env, llmJob())
	require.Equal(t, "cheap", out.Routing.ProviderID, "the probe")
	out = route(t, env, llmJob())
	require.Equal(t, "good", out.Routing.ProviderID)
	require.Equal(t, "circuit_open", reasonOf(out, "cheap"), "its one probe is taken")

	flaky.err = nil
	callCheap() // the probe succeeds
	require.Equal(t, breaker.Closed, state().Effective(time.Now()))
	out = route(t, env, llmJob())
	require.Equal(t, "cheap", out.Routing.ProviderID)
}

func TestRoutingWaitsOutAnOutageUpToTheMaximum(t *testing.T) {
	t.Parallel()
	flaky := &scriptedAdapter{}
	registry := registryOf(t, breakerFleet, map[string]providers.Factory{
		"flaky": answeredBy(flaky), "steady": answeredBy(flaky),
	})
	cache := store.NewCache(storetest.SQLite(t), store.CacheTTL)
	set := activities.New(activities.Deps{Store: &recordingStore{}, Routing: cache, Breakers: cache, Providers: registry, WorkerID: "w",
		MaxOutageWait: map[jobs.ServiceID]time.Duration{jobs.LLMTasks: time.Minute}})
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	set.Register(env)
	// cheap's breaker opens; good is out for the jobs below: an earlier
	// attempt failed on it (its breaker is closed).
	flaky.err = providers.Retryable(jobs.CodeProviderUnavailable, "503", nil)
	for range 3 {
		in := call()
		in.ProviderID = "cheap"
		_, _ = env.ExecuteActivity(acts.Calls.CallProvider, in)
	}

	job := llmJob()
	job.Failed = []string{"good"}
	out := route(t, env, job)
	require.Nil(t, out.Wait, "without asking, the guard keeps cheap in play")
	require.Equal(t, "cheap", out.Routing.ProviderID)

	job = llmJob()
	job.Failed, job.WaitOutOutages = []string{"good"}, true
	out = route(t, env, job)
	require.NotNil(t, out.Wait, "%+v", out)
	require.Nil(t, out.Error)
	require.Equal(t, []string{"cheap"}, out.Wait.Providers)
	require.WithinDuration(t, time.Now().Add(time.Second), out.Wait.Until, time.Second, "until the breaker probes")
	require.Contains(t, out.Wait.Message, "circuit breakers of cheap are open")
	require.Equal(t, "circuit_open", reasonOf(out, "cheap"))

	// Waiting since longer than the service's maximum: exhausted.
	since := time.Now().Add(-time.Minute)
	job.WaitingSince = &since
	out = route(t, env, job)
	require.Nil(t, out.Wait)
	require.Equal(t, jobs.CodeProvidersExhausted, out.Error.Code)
	require.Contains(t, out.Error.Message, "maximum wait of 1m0s")
}

// countingBreakers counts the transactions that record outcomes.
type countingBreakers struct {
	*store.Cache
	mu     sync.Mutex
	writes []int // calls recorded by each
}

func (c *countingBreakers) RecordBreakerOutcomes(ctx context.Context, key store.BreakerKey, cfg breaker.Config, calls []breaker.Call) (breaker.Breaker, []breaker.Transition, error) {
	c.mu.Lock()
	c.writes = append(c.writes, len(calls))
	c.mu.Unlock()
	return c.Cache.RecordBreakerOutcomes(ctx, key, cfg, calls)
}

func (c *countingBreakers) recorded() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.writes...)
}

func TestSuccessesOfAClosedBreakerAreRecordedTogether(t *testing.T) {
	t.Parallel()
	counting := &countingBreakers{Cache: store.NewCache(storetest.SQLite(t), store.CacheTTL)}
	_, flaky, callCheap, state := breakerFixture(t, counting.Cache, counting)

	callCheap() // the first, at once: this process has not seen the breaker yet
	require.Equal(t, []int{1}, counting.recorded())
	for range 5 {
		callCheap()
	}
	require.Equal(t, []int{1}, counting.recorded(), "the successes of a closed breaker wait")
	require.Eventually(t, func() bool { return slices.Equal(counting.recorded(), []int{1, 5}) }, 5*time.Second, 10*time.Millisecond,
		"recorded together, in one transaction")
	calls, failures := state().Counts(breaker.Defaults(), time.Now())
	require.Equal(t, 6, calls)
	require.Zero(t, failures)

	callCheap()
	callCheap()
	flaky.err = providers.Retryable(jobs.CodeProviderUnavailable, "503", nil)
	callCheap()
	require.Equal(t, []int{1, 5, 3}, counting.recorded(), "a failure goes at once, after the successes before it")
	b := state()
	require.Equal(t, 1, b.ConsecutiveFailures)
	calls, failures = b.Counts(breaker.Defaults(), time.Now())
	require.Equal(t, 9, calls)
	require.Equal(t, 1, failures)
}
