package activities_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/providers"
)

// blockingAdapter reports progress 25 and answers when released.
type blockingAdapter struct{ release chan struct{} }

func (b blockingAdapter) Run(ctx context.Context, call providers.Call) (json.RawMessage, error) {
	call.Progress(25)
	select {
	case <-b.release:
		return json.RawMessage(`{}`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestRunningCallsHeartbeatFromOneTicker(t *testing.T) {
	t.Parallel()
	catalog, err := providers.ParseCatalog([]byte(`providers:
  - {id: slow, name: Slow, adapter: blocking, services: {llm-tasks: {models: [m1], pricing: {unit: per_token, amount: 0, currency: USD}}}}
`))
	require.NoError(t, err)
	release := make(chan struct{})
	registry, err := providers.NewRegistry(catalog, map[string]providers.Factory{
		"blocking": func(*providers.Provider) (providers.Adapter, error) { return blockingAdapter{release: release}, nil },
	})
	require.NoError(t, err)
	acts := &activities.Activities{Store: &recordingStore{}, Providers: registry, HeartbeatInterval: 5 * time.Millisecond}

	// Two calls at once on the same Activities, each recording the
	// heartbeats that reach the server (the SDK batches later ones).
	const calls = 2
	var mu sync.Mutex
	beats := map[int][]int{}
	var wg sync.WaitGroup
	for i := range calls {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(acts)
		env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
			var p int
			require.NoError(t, details.Get(&p))
			mu.Lock()
			beats[i] = append(beats[i], p)
			mu.Unlock()
		})
		wg.Go(func() {
			in := call()
			in.ProviderID = "slow"
			_, err := env.ExecuteActivity(acts.CallProvider, in)
			require.NoError(t, err)
		})
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(beats[0]) >= 1 && len(beats[1]) >= 1
	}, 10*time.Second, time.Millisecond, "both calls heartbeat")
	require.True(t, activities.HeartbeatTickerRunning(acts))
	close(release)
	wg.Wait()

	mu.Lock()
	for i := range calls {
		require.Contains(t, beats[i], 25, "heartbeats carry the call's progress")
	}
	mu.Unlock()
	require.Eventually(t, func() bool { return !activities.HeartbeatTickerRunning(acts) }, 10*time.Second, time.Millisecond,
		"the ticker stops when no call is left")
}
