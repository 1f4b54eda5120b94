package jobops_test

import (
	"context"
	"sync/atomic"
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
		cfg.Store = api.store
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
	require.Equal(t, jobops.PaceReport{Accepted: 1}, <-handOffs, "the create is reported")
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

// TestHandOffReportsShedCreatesSparingly: the API reports every create to
// the workers' dispatchers, which pace their starts by them; creates shed
// alone are reported at most every 100 ms, a new start at once.
func TestHandOffReportsShedCreatesSparingly(t *testing.T) {
	t.Parallel()
	type heard struct {
		report jobops.PaceReport
		at     time.Time
	}
	handOffs := make(chan heard, 16)
	api := setupConfigured(t, func(cfg *jobops.DispatcherConfig) {
		cfg.AcceptTarget = 5 * time.Millisecond
		cfg.HandOff = func(_ context.Context, report jobops.PaceReport) error {
			handOffs <- heard{report, time.Now()}
			return nil
		}
	})
	api.run(t)
	start := api.record(t, 1, api.d.Lease("acme")) // offered last

	api.d.Shed(time.Millisecond)
	first := <-handOffs
	require.Equal(t, jobops.PaceReport{Shed: 1}, first.report)
	api.d.Shed(time.Millisecond)
	api.d.Shed(10 * time.Millisecond)
	api.d.Shed(time.Millisecond)
	second := <-handOffs
	require.Equal(t, jobops.PaceReport{Shed: 3, Slow: 1}, second.report, "coalesced, slow ones counted against the target")
	// 100 ms after the first report was sent, which its HandOff saw a
	// little later: 50 ms leaves room for a loaded machine.
	require.GreaterOrEqual(t, second.at.Sub(first.at), 50*time.Millisecond, "not before 100 ms after the last report")

	api.d.Shed(time.Millisecond)
	api.d.Offer(start, 20*time.Millisecond)
	third := <-handOffs
	require.Equal(t, jobops.PaceReport{Accepted: 1, Shed: 1, Slow: 1}, third.report,
		"a new start is announced without waiting, with the shed create that waited")
}

// TestHandOffWithoutTargetReportsNoSheds: an API that does not pace
// reports new starts only, not the creates it shed.
func TestHandOffWithoutTargetReportsNoSheds(t *testing.T) {
	t.Parallel()
	handOffs := make(chan jobops.PaceReport, 16)
	api := setupConfigured(t, func(cfg *jobops.DispatcherConfig) {
		cfg.HandOff = func(_ context.Context, report jobops.PaceReport) error {
			handOffs <- report
			return nil
		}
	})
	api.run(t)
	start := api.record(t, 1, api.d.Lease("acme"))

	api.d.Shed(time.Millisecond)
	api.d.Offer(start, 20*time.Millisecond)
	require.Equal(t, jobops.PaceReport{Accepted: 1}, <-handOffs, "no shed creates, none slow without a target")
}

// TestHandOffReportsHowFastStartsLeaveTheOutbox: serve reads the outbox
// and, once its reads span a second, every report carries how fast starts
// left it, whichever process made them.
func TestHandOffReportsHowFastStartsLeaveTheOutbox(t *testing.T) {
	t.Parallel()
	handOffs := make(chan jobops.PaceReport, 128)
	var outbox *clearCounting
	api := setupConfigured(t, func(cfg *jobops.DispatcherConfig) {
		cfg.AcceptTarget = 5 * time.Millisecond
		cfg.HandOff = func(_ context.Context, report jobops.PaceReport) error {
			handOffs <- report
			return nil
		}
		outbox = &clearCounting{Outbox: cfg.Store}
		cfg.Store = outbox
	})
	api.run(t)
	var measured *float64
	deadline := time.Now().Add(10 * time.Second)
	for measured == nil && time.Now().Before(deadline) {
		// A job accepted, and its start made at once by a worker.
		start := api.record(t, 1, api.d.Lease("acme"))
		api.d.Offer(start, time.Millisecond)
		require.NoError(t, outbox.DeleteJobStarts(t.Context(), []string{start.JobID}))
		measured = (<-handOffs).StartsPerSecond
		time.Sleep(20 * time.Millisecond)
	}
	require.NotNil(t, measured, "a rate within 10 s")
	require.Greater(t, *measured, 0.0)
	require.LessOrEqual(t, *measured, 1000/20.0, "no more than one start every 20 ms")
}

// clearCounting counts the starts deleted from the outbox, as the store
// does on PostgreSQL (SQLite keeps no count).
type clearCounting struct {
	jobops.Outbox
	cleared atomic.Int64
}

func (o *clearCounting) DeleteJobStarts(ctx context.Context, jobIDs []string) error {
	o.cleared.Add(int64(len(jobIDs)))
	return o.Outbox.DeleteJobStarts(ctx, jobIDs)
}

func (o *clearCounting) JobStartsCleared(context.Context) (int64, error) {
	return o.cleared.Load(), nil
}
