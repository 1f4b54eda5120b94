package activities_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// streamingAdapter streams its answer in pieces, pausing between them,
// when the call asks for a stream; streamed tells whether it was asked.
type streamingAdapter struct {
	pieces   []string
	pause    time.Duration
	streamed *bool
}

func (a streamingAdapter) Services() []jobs.ServiceID { return jobs.ServiceIDs() }

func (a streamingAdapter) Run(ctx context.Context, call providers.Call) (json.RawMessage, error) {
	*a.streamed = call.Stream != nil
	for _, p := range a.pieces {
		if call.Stream != nil {
			call.Stream(p)
		}
		time.Sleep(a.pause)
	}
	return json.Marshal(jobs.LLMTaskResult{Content: strings.Join(a.pieces, ""), FinishReason: "completed"})
}

// deltaRecorder keeps the deltas written.
type deltaRecorder struct {
	mu     sync.Mutex
	deltas []store.JobDelta
}

func (r *deltaRecorder) AppendJobDelta(_ context.Context, d store.JobDelta) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deltas = append(r.deltas, d)
	return nil
}

// A job that asked for a stream has its provider's pieces recorded as
// deltas, all of them before the call returns, in several writes while
// the answer is written; a job that did not ask is not streamed.
func TestStreamedAnswersAreRecordedAsDeltas(t *testing.T) {
	t.Parallel()
	catalog := `providers:
  - id: streamer
    name: Streamer
    adapter: streamer
    services:
      llm-tasks:
        models: [m1]
        pricing: {unit: per_request, amount: 0.001, currency: USD}
`
	var streamed bool
	pieces := []string{"The ", "answer ", "comes ", "in ", "pieces."}
	registry := registryOf(t, catalog, map[string]providers.Factory{
		"streamer": answeredBy(streamingAdapter{pieces: pieces, pause: 60 * time.Millisecond, streamed: &streamed}),
	})
	deltas := &deltaRecorder{}
	set := activities.New(activities.Deps{Store: &recordingStore{}, Providers: registry, WorkerID: "w", Deltas: deltas})
	env := activityEnv(set)
	input := json.RawMessage(`{"type":"messages","messages":[{"role":"user","content":"Hi"}]}`)

	in := activities.CallInput{JobID: "job-1", Service: jobs.LLMTasks, ProviderID: "streamer", Input: input,
		Options: json.RawMessage(`{"stream":true}`)}
	_, err := env.ExecuteActivity(set.Calls.CallProvider, in)
	require.NoError(t, err)
	require.True(t, streamed, "the adapter was asked to stream")
	deltas.mu.Lock()
	got := deltas.deltas
	deltas.mu.Unlock()
	require.Greater(t, len(got), 1, "written while the answer was streamed, not once at the end")
	var text strings.Builder
	for _, d := range got {
		require.Equal(t, "job-1", d.JobID)
		require.Equal(t, "streamer", d.Provider)
		require.Equal(t, got[0].CallID, d.CallID, "one call")
		require.NotEmpty(t, d.Text)
		text.WriteString(d.Text)
	}
	require.Equal(t, strings.Join(pieces, ""), text.String(), "every piece, in order, before the call returned")

	for _, options := range []string{`{}`, `{"stream":false}`} {
		deltas.deltas, streamed = nil, true
		in.Options = json.RawMessage(options)
		_, err = env.ExecuteActivity(set.Calls.CallProvider, in)
		require.NoError(t, err)
		require.False(t, streamed, "options %s: not streamed", options)
		require.Empty(t, deltas.deltas)
	}
}
