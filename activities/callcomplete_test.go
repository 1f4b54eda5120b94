package activities_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// processing is job-1 as its workflow holds it once routed to scripted,
// not projected yet.
func processing() jobs.Snapshot {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	routing := jobs.RoutingInfo{ProviderID: "scripted", Reason: jobs.ReasonDefault, Attempt: 1}
	return jobs.Snapshot{ID: "job-1", Service: jobs.LLMTasks, Tenant: "acme", UserID: "u", Status: jobs.StatusProcessing,
		Provider: "scripted", Input: call().Input, Routing: &routing, RoutingHistory: []jobs.RoutingInfo{routing},
		CreatedAt: at, ProcessedAt: &at, Revision: 1}
}

func TestCallAndCompleteProjectsTheCompletedJob(t *testing.T) {
	t.Parallel()
	env, st := setup(t, &scriptedAdapter{})
	before := time.Now().UTC()
	value, err := env.ExecuteActivity(acts.Calls.CallAndComplete, activities.CompleteInput{Call: call(), Job: processing()})
	require.NoError(t, err)
	var done activities.CompletedCall
	require.NoError(t, value.Get(&done))
	require.True(t, done.Projected)
	require.False(t, done.CompletedAt.Before(before))
	require.Equal(t, "worker-7", done.WorkerID)

	require.Len(t, st.saved, 1, "one projection: the completion")
	row := st.saved[0]
	require.Equal(t, jobs.StatusCompleted, row.Status)
	require.Equal(t, 2, row.Revision, "the revision the workflow's transition gives it")
	require.Equal(t, 100, row.Progress)
	require.Equal(t, "worker-7", row.WorkerID)
	require.JSONEq(t, string(done.Result), row.Result)
	require.Equal(t, done.CompletedAt, *row.CompletedAt)
	require.Equal(t, *processing().ProcessedAt, *row.ProcessedAt, "processing's facts are kept")
	require.Contains(t, row.RoutingHistory, `"provider_id":"scripted"`)
	require.Len(t, st.ledger, 1, "billed as SaveJob bills a completion")
}

func TestCallAndCompleteLeavesAFailedProjectionToTheWorkflow(t *testing.T) {
	t.Parallel()
	env, st := setup(t, &scriptedAdapter{})
	st.failSaves = errors.New("database is away")
	value, err := env.ExecuteActivity(acts.Calls.CallAndComplete, activities.CompleteInput{Call: call(), Job: processing()})
	require.NoError(t, err, "the call succeeded: it must not be made again")
	var done activities.CompletedCall
	require.NoError(t, value.Get(&done))
	require.False(t, done.Projected)
	require.NotEmpty(t, done.Result)
}

func TestCallAndCompleteFailsAsTheCallDoes(t *testing.T) {
	t.Parallel()
	env, st := setup(t, &scriptedAdapter{err: providers.Retryable(jobs.CodeProviderUnavailable, "503", nil)})
	_, err := env.ExecuteActivity(acts.Calls.CallAndComplete, activities.CompleteInput{Call: call(), Job: processing()})
	require.ErrorContains(t, err, "503")
	require.Empty(t, st.saved, "nothing is projected when the call fails")
}
