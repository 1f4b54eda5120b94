package jobs_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// TestRecordSnapshotIsTheSnapshotBack: an event's snapshot, made from the
// record a projection write stores, is the snapshot the workflow wrote.
func TestRecordSnapshotIsTheSnapshotBack(t *testing.T) {
	t.Parallel()
	snap := finished(jobs.StatusFailed)
	snap.Progress, snap.Revision = 40, 3
	since := time.Date(2026, 11, 24, 10, 0, 2, 0, time.UTC)
	snap.Waiting = &jobs.Waiting{Reason: "outage", Message: "every provider is down", Since: since, Until: since.Add(time.Hour), Providers: []string{"sandbox-fast"}}
	snap.Error = &jobs.Error{Code: jobs.CodeProvidersExhausted, Message: "every provider failed"}
	snap.Usage = json.RawMessage(`{"quantity":5}`)

	rec, err := snap.Record()
	require.NoError(t, err)
	back, err := rec.Snapshot()
	require.NoError(t, err)
	require.Equal(t, snap, back)
	require.Equal(t, jobs.EventFailed, jobs.EventOf(rec))
}

// finished is the submitted job routed to sandbox-fast, processed, and
// ended with status a second later.
func finished(status jobs.Status) jobs.Snapshot {
	snap := submitted().Snapshot()
	processed := time.Date(2026, 11, 24, 10, 0, 1, 0, time.UTC)
	completed := processed.Add(time.Second)
	routing := jobs.RoutingInfo{ProviderID: "sandbox-fast", Reason: jobs.ReasonDefault, Attempt: 1, DecidedAt: processed}
	snap.Status, snap.Provider = status, "sandbox-fast"
	snap.Routing, snap.RoutingHistory = &routing, []jobs.RoutingInfo{routing}
	snap.ProcessedAt, snap.CompletedAt = &processed, &completed
	return snap
}

func TestEventOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		service jobs.ServiceID
		status  jobs.Status
		want    jobs.EventKind
	}{
		{"transcriptions", jobs.StatusPending, ""},
		{"transcriptions", jobs.StatusProcessing, jobs.EventProgress},
		{"llm-tasks", jobs.StatusProcessing, ""},
		{"llm-tasks", jobs.StatusCompleted, jobs.EventCompleted},
		{"translations", jobs.StatusFailed, jobs.EventFailed},
	} {
		require.Equal(t, tc.want, jobs.EventOf(&jobs.Record{Service: tc.service, Status: tc.status}), "%s %s", tc.service, tc.status)
	}
}
