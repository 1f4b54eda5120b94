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
	handOffs := make(chan struct{}, 16)
	var worker *bundle
	api := setupConfigured(t, func(cfg *jobops.DispatcherConfig) {
		cfg.HandOffGrace = 300 * time.Millisecond
		cfg.HandOff = func(context.Context) error {
			handOffs <- struct{}{}
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
	<-handOffs // the workers are woken
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
