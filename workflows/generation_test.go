package workflows_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/workflows"
)

// versionCalls runs a job with webhooks and search attributes (which ask
// for most changes) at generation and returns the changes it asked
// GetVersion about.
func versionCalls(t *testing.T, generation int) []string {
	t.Helper()
	b := setup(t)
	var mu sync.Mutex
	var asked []string
	for id, newest := range workflows.GenerationOneChanges {
		b.env.OnGetVersion(id, workflow.DefaultVersion, newest).Run(func(mock.Arguments) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, id)
		}).Return(newest).Maybe()
	}
	b.env.OnActivity(acts.Routing.DecideRoute, mock.Anything, mock.Anything).Return(routeTo("sandbox-fast", 1), nil).Once()
	b.env.OnActivity(acts.Calls.CallProvider, mock.Anything, mock.Anything).Return(
		activities.CallOutput{Result: json.RawMessage(`{"format":"json","text":"hello"}`)}, nil)
	r := &receiver{}
	b.env.OnActivity(acts.Webhooks.DeliverWebhookEvent, mock.Anything, mock.Anything).Return(b.fromStore(t, r.deliver))
	in := withWebhook(jobs.Transcriptions)
	in.SearchAttributes = true
	in.Generation = generation
	b.env.ExecuteWorkflow(workflows.JobWorkflowName, in)
	require.Equal(t, jobs.StatusCompleted, result(t, b.env).Status)
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(asked)
	return asked
}

func TestGenerationOneJobsRecordNoVersionMarkers(t *testing.T) {
	t.Parallel()
	require.Empty(t, versionCalls(t, workflows.Generation), "a job of this generation takes its changes without GetVersion")
	// Jobs started before generations ask as they always did, but for the
	// removed "webhooks" marker.
	asked := versionCalls(t, 0)
	require.Subset(t, asked, []string{"media-stage", "search-attributes", "webhook-stored-documents"})
	require.NotContains(t, asked, "webhooks")
}

// The "webhooks" change id was a version marker no branch read, and its
// GetVersion call is gone: the SDK skips a marker no call asks for, so the
// recorded histories that hold it still replay (TestReplayRecordedHistories,
// docs/workflow-versions.md). This checks that some do, so the replay
// test covers the removal.
func TestRecordedHistoriesHoldTheRemovedWebhooksMarker(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "job-*.json"))
	require.NoError(t, err)
	var holding []string
	for _, file := range files {
		f, err := os.Open(file)
		require.NoError(t, err)
		history, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
		require.NoError(t, f.Close())
		require.NoError(t, err, file)
		if slices.Contains(changes(t, history.GetEvents()), "webhooks") {
			holding = append(holding, filepath.Base(file))
		}
	}
	require.Contains(t, holding, "job-v2-webhooks-retried.json")
	require.Contains(t, holding, "job-v14-webhook-given-up.json")
}
