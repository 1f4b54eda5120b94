package jobwatch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/jobwatch"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// tick is the tests' poll interval.
const tick = 5 * time.Millisecond

// fakeSource is a store of job states that records its queries.
type fakeSource struct {
	mu      sync.Mutex
	states  map[string]store.JobState
	queries [][]string
	err     error
}

func newSource() *fakeSource { return &fakeSource{states: map[string]store.JobState{}} }

func (f *fakeSource) JobStates(_ context.Context, ids []string) (map[string]store.JobState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, slices.Sorted(slices.Values(ids)))
	if f.err != nil {
		return nil, f.err
	}
	out := map[string]store.JobState{}
	for _, id := range ids {
		if st, ok := f.states[id]; ok {
			out[id] = st
		}
	}
	return out, nil
}

func (f *fakeSource) set(id string, status jobs.Status, progress int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states[id] = store.JobState{ID: id, Status: status, Progress: progress, UpdatedAt: time.Now()}
}

func (f *fakeSource) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.states, id)
}

func (f *fakeSource) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeSource) queryCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queries)
}

func (f *fakeSource) lastQuery() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queries) == 0 {
		return nil
	}
	return f.queries[len(f.queries)-1]
}

func newWatcher(t *testing.T, src *fakeSource) *jobwatch.Watcher {
	w := jobwatch.New(src, tick, nil)
	t.Cleanup(w.Close)
	return w
}

// waitTerminal runs WaitTerminal in the background; its result comes on
// the channel.
func waitTerminal(ctx context.Context, w *jobwatch.Watcher, id string) <-chan bool {
	done := make(chan bool, 1)
	go func() { done <- w.WaitTerminal(ctx, id) }()
	return done
}

func TestWaitersShareOneQueryATick(t *testing.T) {
	src := newSource()
	w := newWatcher(t, src)
	const n = 200
	ids := make([]string, n)
	waits := make([]<-chan bool, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("job-%03d", i)
		src.set(ids[i], jobs.StatusProcessing, 0)
		waits[i] = waitTerminal(context.Background(), w, ids[i])
	}
	require.Eventually(t, func() bool { return len(src.lastQuery()) == n }, time.Second, time.Millisecond,
		"one query names every watched job")
	require.Equal(t, ids, src.lastQuery())

	for i, id := range ids {
		status := jobs.StatusCompleted
		if i%2 == 1 {
			status = jobs.StatusFailed
		}
		src.set(id, status, 100)
	}
	for i, done := range waits {
		select {
		case ok := <-done:
			require.True(t, ok, ids[i])
		case <-time.After(time.Second):
			t.Fatalf("%s: still waiting after it finished", ids[i])
		}
	}
}

func TestSubscriptionSeesEachChange(t *testing.T) {
	src := newSource()
	w := newWatcher(t, src)
	src.set("a", jobs.StatusPending, 0)
	sub := w.Subscribe("a")
	defer sub.Close()
	next := func() store.JobState {
		t.Helper()
		select {
		case st := <-sub.C():
			return st
		case <-time.After(time.Second):
			t.Fatal("no state")
			return store.JobState{}
		}
	}
	require.Equal(t, jobs.StatusPending, next().Status, "the first poll's state")
	polls := src.queryCount()
	require.Eventually(t, func() bool { return src.queryCount() > polls+2 }, time.Second, time.Millisecond)
	select {
	case st := <-sub.C():
		t.Fatalf("an unchanged job was sent again: %+v", st)
	default:
	}
	src.set("a", jobs.StatusProcessing, 0)
	require.Equal(t, jobs.StatusProcessing, next().Status)
	src.set("a", jobs.StatusProcessing, 40)
	require.Equal(t, 40, next().Progress)
	src.remove("a")
	require.Equal(t, store.JobState{ID: "a"}, next(), "a job no longer stored")
}

func TestPollsOnlyWhileWatched(t *testing.T) {
	src := newSource()
	w := newWatcher(t, src)
	time.Sleep(5 * tick)
	require.Zero(t, src.queryCount(), "nothing watched")

	sub := w.Subscribe("a")
	require.Eventually(t, func() bool { return src.queryCount() > 0 }, time.Second, time.Millisecond)
	sub.Close()
	time.Sleep(20 * tick) // a poll begun before Close may still end
	stopped := src.queryCount()
	time.Sleep(5 * tick)
	require.Equal(t, stopped, src.queryCount(), "polling stops with the last subscription")

	src.set("b", jobs.StatusCompleted, 100)
	require.True(t, w.WaitTerminal(context.Background(), "b"), "polling starts again")
}

func TestWaitEnds(t *testing.T) {
	src := newSource()
	w := jobwatch.New(src, tick, nil)
	src.set("a", jobs.StatusProcessing, 0)

	ctx, cancel := context.WithTimeout(context.Background(), 10*tick)
	defer cancel()
	require.False(t, w.WaitTerminal(ctx, "a"), "when ctx ends")

	done := waitTerminal(context.Background(), w, "a")
	time.Sleep(2 * tick)
	w.Close()
	select {
	case ok := <-done:
		require.False(t, ok, "when the watcher closes")
	case <-time.After(time.Second):
		t.Fatal("a wait outlived Close")
	}
	require.False(t, w.WaitTerminal(context.Background(), "a"), "after Close at once")
}

func TestPollFailuresAreRetried(t *testing.T) {
	src := newSource()
	w := newWatcher(t, src)
	src.setErr(errors.New("database unavailable"))
	src.set("a", jobs.StatusCompleted, 100)
	done := waitTerminal(context.Background(), w, "a")
	require.Eventually(t, func() bool { return src.queryCount() >= 3 }, time.Second, time.Millisecond)
	select {
	case <-done:
		t.Fatal("woken by a failed poll")
	default:
	}
	src.setErr(nil)
	select {
	case ok := <-done:
		require.True(t, ok)
	case <-time.After(time.Second):
		t.Fatal("still waiting once the store answered")
	}
}
