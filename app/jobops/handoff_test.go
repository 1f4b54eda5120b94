package jobops_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/jobops"
)

// TestHandOffLeavesNewStartsToTheWorkers: the API's dispatcher records
// starts due at once and wakes the workers' dispatchers, whose starts are
// eager; it makes a start itself only once the workers left it for the
// grace period.
func TestHandOffLeavesNewStartsToTheWorkers(t *testing.T) {
	t.Parallel()
	handOffs := make(chan jobops.PaceReport, 16)
	var worker *bundle
	api := setupConfigured(t, func(cfg *jobops.DispatcherConfig) {
		cfg.HandOffGrace = 300 * time.Millisecond
		cfg.HandOff = func(_ context.Context, report jobops.PaceReport) error {
			handOffs <- report
			if worker != nil {
				worker.d.Wake()
			}
			return nil
		}
	})
	// The worker's dispatcher shares the store; its sweep is slow, so only
	// a wake makes it read the outbox soon.
	worker = setupConfigured(t, func(cfg *jobops.DispatcherConfig) {
		cfg.Store = api.store.Jobs
		cfg.EagerStart = true
		cfg.SweepInterval = time.Hour
	})
	worker.store = api.store
	api.run(t)
	stopWorker := worker.run(t)

	due := api.d.Lease("acme")
	require.False(t, due.After(time.Now()), "recorded due at once, for any dispatcher")
	start := api.record(t, 1, due)
	api.d.Offer(start, time.Millisecond)
	require.Equal(t, jobops.PaceReport{Accepted: 1}, <-handOffs, "the workers are woken, told of the create")
	api.waitOutboxEmpty(t)
	require.Empty(t, api.started(), "the API made no start")
	starts := worker.started()
	require.Len(t, starts, 1)
	require.Equal(t, start.JobID, starts[0].ID)
	require.True(t, starts[0].EnableEagerStart, "the worker's start is eager")

	// No worker dispatches: the API makes the start after the grace.
	stopWorker()
	late := api.record(t, 1, api.d.Lease("acme"))
	api.d.Offer(late, time.Millisecond)
	api.waitOutboxEmpty(t)
	require.Len(t, api.started(), 1)
	require.Equal(t, late.JobID, api.started()[0].ID)
	require.False(t, api.started()[0].EnableEagerStart)
}

// TestHandOffReportsCreatesAgainstTheTarget: the API reports the creates
// it answered, coalesced while a HandOff runs, slow ones counted against
// its AcceptTarget; creates shed with 429 only when it has a target.
func TestHandOffReportsCreatesAgainstTheTarget(t *testing.T) {
	t.Parallel()
	for _, target := range []time.Duration{0, 5 * time.Millisecond} {
		handOffs := make(chan jobops.PaceReport, 16)
		release := make(chan struct{})
		api := setupConfigured(t, func(cfg *jobops.DispatcherConfig) {
			cfg.AcceptTarget = target
			cfg.HandOff = func(_ context.Context, report jobops.PaceReport) error {
				handOffs <- report
				<-release
				return nil
			}
		})
		api.run(t)
		first := api.record(t, 1, api.d.Lease("acme"))
		second := api.record(t, 1, api.d.Lease("acme"))
		api.d.Offer(first, time.Millisecond)
		require.Equal(t, jobops.PaceReport{Accepted: 1}, <-handOffs)
		// While that HandOff runs:
		api.d.Shed(time.Millisecond)
		api.d.Shed(10 * time.Millisecond)
		api.d.Offer(second, 20*time.Millisecond)
		close(release)
		want := jobops.PaceReport{Accepted: 1}
		if target > 0 {
			want = jobops.PaceReport{Accepted: 1, Shed: 2, Slow: 2}
		}
		require.Equal(t, want, <-handOffs, "target %s", target)
	}
}

func TestPaceReportTravelsAsJSON(t *testing.T) {
	t.Parallel()
	r := jobops.PaceReport{Accepted: 3, Shed: 1, Slow: 2}
	got, ok := jobops.ParsePaceReport(r.Payload())
	require.True(t, ok)
	require.Equal(t, r, got)
	for _, payload := range []string{"", "{", "[]"} {
		_, ok := jobops.ParsePaceReport(payload)
		require.False(t, ok, "%q carries no report", payload)
	}
}
