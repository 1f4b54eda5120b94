package main

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ai-job-gateway/gateway/store"
)

// startWatch tells the benchmark's observer when a job the gateway
// accepted has its workflow started: when its start left the outbox.
// Asking Temporal for the history of a workflow not started yet, every
// 25 ms until it exists, cost Temporal's server more per job than the job
// did (docs/benchmarks.md, What limits them), and charged it to the
// gateway; one query of the outbox every startPoll for all the jobs
// waiting costs the store next to nothing.
type startWatch struct {
	outbox *store.Store

	mu      sync.Mutex
	waiting map[string][]chan struct{}
	wake    chan struct{}
}

// startPoll is how often the outbox is read while jobs wait.
const startPoll = 10 * time.Millisecond

func newStartWatch(outbox *store.Store) *startWatch {
	return &startWatch{outbox: outbox, waiting: map[string][]chan struct{}{}, wake: make(chan struct{}, 1)}
}

// await waits until job id's workflow was started.
func (w *startWatch) await(ctx context.Context, id string) error {
	started := make(chan struct{})
	w.mu.Lock()
	w.waiting[id] = append(w.waiting[id], started)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	select {
	case <-started:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run reads the outbox for the jobs waiting until ctx ends.
func (w *startWatch) run(ctx context.Context) {
	ticker := time.NewTicker(startPoll)
	defer ticker.Stop()
	for {
		w.mu.Lock()
		ids := slices.Collect(maps.Keys(w.waiting))
		w.mu.Unlock()
		if len(ids) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
				continue
			}
		}
		if unstarted, err := w.outbox.UnstartedJobs(ctx, ids); err == nil {
			w.mu.Lock()
			for _, id := range ids {
				if !unstarted[id] {
					for _, started := range w.waiting[id] {
						close(started)
					}
					delete(w.waiting, id)
				}
			}
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
