package workflows_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store/storetest"
	"github.com/ai-job-gateway/gateway/workflows"
)

// TestRecordDeletedBeforeCallHistories records the histories of jobs
// deleted before their provider call (job-deleted-before-*.json) for
// TestReplayRecordedHistories. A gateway cannot be made to lose that race
// on purpose (its erasure cancels the job's workflow), so this test runs
// the job workflow on a worker of its own, with the real activities over
// a SQLite store where the job was deleted, against the Temporal server
// of a running `gateway dev` (its --temporal-dev-listen address, whose
// namespace has the search attributes):
//
//	GATEWAY_RECORD_HISTORIES=$PWD/workflows/testdata GATEWAY_RECORD_TEMPORAL=127.0.0.1:7233 go test ./workflows -run TestRecordDeletedBeforeCallHistories
//
// Rename the new files job-vN-*.json, N one more than the newest.
func TestRecordDeletedBeforeCallHistories(t *testing.T) {
	dir, addr := os.Getenv("GATEWAY_RECORD_HISTORIES"), os.Getenv("GATEWAY_RECORD_TEMPORAL")
	if dir == "" || addr == "" {
		t.Skip("set GATEWAY_RECORD_HISTORIES and GATEWAY_RECORD_TEMPORAL to record workflow histories")
	}
	var calls atomic.Int32
	catalog, err := providers.ParseCatalog([]byte(`providers:
  - id: recorded-steady
    name: Recorded (a long call)
    adapter: steady
    services:
      llm-tasks:
        models: [m1]
        pricing: {unit: per_token, amount: 0.000001, currency: USD}
  - id: recorded-quick
    name: Recorded (a short call)
    adapter: quick
    services:
      llm-tasks:
        models: [m1]
        pricing: {unit: per_token, amount: 0.000001, currency: USD}
`))
	require.NoError(t, err)
	registry, err := providers.NewRegistry(catalog, map[string]providers.Factory{
		"steady": func(*providers.Provider) (providers.Adapter, error) { return &neverCalled{calls: &calls}, nil },
		"quick": func(*providers.Provider) (providers.Adapter, error) {
			return &shortNeverCalled{neverCalled{calls: &calls}}, nil
		},
	})
	require.NoError(t, err)
	st := storetest.SQLite(t)

	tc, err := client.Dial(client.Options{HostPort: addr})
	require.NoError(t, err)
	defer tc.Close()
	queue := "record-deleted-before-call-" + uuid.NewString()
	w := worker.New(tc, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(workflows.JobWorkflow, workflow.RegisterOptions{Name: workflows.JobWorkflowName})
	activities.New(activities.Deps{Store: st.Jobs, Providers: registry, WorkerID: "recorder", Jobs: st.Jobs}).Register(w)
	require.NoError(t, w.Start())
	defer w.Stop()

	for name, provider := range map[string]string{
		"deleted-before-call":       "recorded-steady", // the call is an activity
		"deleted-before-short-call": "recorded-quick",  // a local activity
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			sub := jobs.Submission{JobID: uuid.Must(uuid.NewV7()).String(), Service: jobs.LLMTasks, Tenant: "acme", UserID: "alice",
				Provider: provider, Input: json.RawMessage(`{"type":"text","text":"x","prompt":"y"}`), CreatedAt: time.Now().UTC(),
				SearchAttributes: true, Generation: workflows.StampedGeneration}
			require.NoError(t, st.Jobs.SaveJob(ctx, &jobs.Record{ID: sub.JobID, Tenant: sub.Tenant, UserID: sub.UserID, Service: sub.Service,
				Status: jobs.StatusPending, Input: string(sub.Input), CreatedAt: sub.CreatedAt}))
			// Deleted once its start was taken: its workflow runs.
			_, _, err := st.Jobs.DeleteJob(ctx, sub.JobID, "alice", time.Now())
			require.NoError(t, err)

			run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: sub.JobID, TaskQueue: queue}, workflows.JobWorkflowName, sub)
			require.NoError(t, err)
			waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			var snap jobs.Snapshot
			require.NoError(t, run.Get(waitCtx, &snap))
			require.Equal(t, jobs.StatusFailed, snap.Status)
			require.Equal(t, jobs.CodeCancelled, snap.Error.Code)
			require.Equal(t, "the job was deleted", snap.Error.Message)

			var events []*historypb.HistoryEvent
			iter := tc.GetWorkflowHistory(ctx, sub.JobID, run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for iter.HasNext() {
				event, err := iter.Next()
				require.NoError(t, err)
				events = append(events, event)
			}
			data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
			require.NoError(t, err)
			require.Contains(t, changes(t, events), "deleted-before-call", "the history holds the version marker")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "job-"+name+".json"), data, 0o644))
		})
	}
	require.Zero(t, calls.Load(), "a deleted job's provider was called")
}

// changes are the change ids of the version markers among events.
func changes(t *testing.T, events []*historypb.HistoryEvent) []string {
	t.Helper()
	var ids []string
	for _, event := range events {
		marker := event.GetMarkerRecordedEventAttributes()
		if marker.GetMarkerName() != "Version" {
			continue
		}
		var id string
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(marker.GetDetails()["change-id"], &id))
		ids = append(ids, id)
	}
	return ids
}

// neverCalled is an adapter that counts the calls that reach it.
type neverCalled struct{ calls *atomic.Int32 }

func (a *neverCalled) Services() []jobs.ServiceID { return jobs.ServiceIDs() }

func (a *neverCalled) Run(context.Context, providers.Call) (json.RawMessage, error) {
	a.calls.Add(1)
	return json.RawMessage(`{"content":"ok","finish_reason":"completed"}`), nil
}

// shortNeverCalled is neverCalled whose calls are short: they run first
// as local activities.
type shortNeverCalled struct{ neverCalled }

func (shortNeverCalled) ExpectedDuration() time.Duration { return 0 }
