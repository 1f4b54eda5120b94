// Package jobwatch wakes those waiting on jobs when the jobs' stored
// state changes (docs/api.md, Waiting for a job). A process has one
// Watcher; while anyone watches, it reads the state of every watched job
// in one query a tick, so waiters hold no database connection. It is of
// the application layer (app/), above store.
package jobwatch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ai-job-gateway/gateway/store"
)

// Source reads the state of many jobs at once (store.Store.JobStates);
// jobs it does not hold are absent from the map.
type Source interface {
	JobStates(ctx context.Context, ids []string) (map[string]store.JobState, error)
}

// DefaultInterval is how often a Watcher polls while anyone watches.
const DefaultInterval = 200 * time.Millisecond

// queryTimeout bounds one poll.
const queryTimeout = 5 * time.Second

// Watcher polls a Source for the jobs its subscriptions watch.
type Watcher struct {
	source   Source
	interval time.Duration
	logger   *slog.Logger

	mu      sync.Mutex
	subs    map[string]map[*Subscription]struct{}
	round   uint64 // polls begun
	polling bool
	closed  bool
	stop    chan struct{}
}

// New returns a Watcher of source polling every interval
// (DefaultInterval when not positive). It polls only while it has
// subscriptions; Close ends them.
func New(source Source, interval time.Duration, logger *slog.Logger) *Watcher {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Watcher{source: source, interval: interval, logger: logger,
		subs: map[string]map[*Subscription]struct{}{}, stop: make(chan struct{})}
}

// Subscription is one watch of a job, until Close.
type Subscription struct {
	w    *Watcher
	id   string
	c    chan store.JobState
	from uint64 // the last poll begun before it
	last store.JobState
	seen bool
}

// Subscribe watches job id. The subscription's channel receives the
// job's state as the first poll after Subscribe reads it, then each time
// its status, progress or updated_at changes; a job the store no longer
// holds comes as a state with an empty Status. A slow receiver gets the
// latest state only. The channel is closed when the Watcher closes.
func (w *Watcher) Subscribe(id string) *Subscription {
	s := &Subscription{w: w, id: id, c: make(chan store.JobState, 1)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		close(s.c)
		return s
	}
	s.from = w.round
	if w.subs[id] == nil {
		w.subs[id] = map[*Subscription]struct{}{}
	}
	w.subs[id][s] = struct{}{}
	if !w.polling {
		w.polling = true
		go w.poll()
	}
	return s
}

// C is the channel of the job's states.
func (s *Subscription) C() <-chan store.JobState { return s.c }

// Close ends the subscription; the Watcher stops polling once it has
// none.
func (s *Subscription) Close() {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if subs, ok := w.subs[s.id]; ok {
		delete(subs, s)
		if len(subs) == 0 {
			delete(w.subs, s.id)
		}
	}
}

// WaitTerminal waits until job id is completed or failed, or no longer
// stored, and reports whether it is; false when ctx ended or the Watcher
// closed first.
func (w *Watcher) WaitTerminal(ctx context.Context, id string) bool {
	s := w.Subscribe(id)
	defer s.Close()
	for {
		select {
		case st, ok := <-s.c:
			if !ok {
				return false
			}
			if st.Status == "" || st.Status.Terminal() {
				return true
			}
		case <-ctx.Done():
			return false
		}
	}
}

// Close stops polling and closes every subscription's channel, ending
// their waits.
func (w *Watcher) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	close(w.stop)
	for _, subs := range w.subs {
		for s := range subs {
			close(s.c)
		}
	}
	clear(w.subs)
}

// poll reads the watched jobs' states every interval until none is
// watched or the Watcher closes.
func (w *Watcher) poll() {
	ticker := time.NewTicker(w.interval)
	defer ticker.Stop()
	failing := false
	for {
		select {
		case <-ticker.C:
		case <-w.stop:
			return
		}
		ids, round := w.watched()
		if ids == nil {
			return
		}
		// Waiters are clients' requests: on SQLite they go first.
		ctx, cancel := context.WithTimeout(store.Interactive(context.Background()), queryTimeout)
		states, err := w.source.JobStates(ctx, ids)
		cancel()
		if err != nil {
			if !failing {
				w.logger.Warn("job watcher: reading the watched jobs failed; retrying each tick", "jobs", len(ids), "error", err)
			}
			failing = true
			continue
		}
		failing = false
		w.deliver(ids, states, round)
	}
}

// watched lists the watched jobs for a new poll, and numbers it; nil,
// with polling stopped, when none is watched.
func (w *Watcher) watched() ([]string, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.subs) == 0 || w.closed {
		w.polling = false
		return nil, 0
	}
	w.round++
	ids := make([]string, 0, len(w.subs))
	for id := range w.subs {
		ids = append(ids, id)
	}
	return ids, w.round
}

// deliver hands the states a poll read to the subscriptions made before
// it began whose job's state they have not seen.
func (w *Watcher) deliver(ids []string, states map[string]store.JobState, round uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		st, ok := states[id]
		if !ok {
			st = store.JobState{ID: id}
		}
		for s := range w.subs[id] {
			if s.from >= round || (s.seen && !changed(s.last, st)) {
				continue
			}
			s.seen, s.last = true, st
			select {
			case <-s.c: // replaced by the latest
			default:
			}
			s.c <- st
		}
	}
}

// changed reports whether b differs from a in what subscribers see.
func changed(a, b store.JobState) bool {
	return a.Status != b.Status || a.Progress != b.Progress || !a.UpdatedAt.Equal(b.UpdatedAt)
}
