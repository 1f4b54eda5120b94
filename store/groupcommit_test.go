package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// writeRecorder is a SQLite store whose writes a test can hold back: while
// held, the writer waits at the connection gate with its first write, and
// the writes that follow queue behind it.
type writeRecorder struct {
	t     *testing.T
	s     *Store
	wg    sync.WaitGroup
	mu    sync.Mutex
	txs   map[string]gorm.ConnPool // the transaction each write ran in
	errs  map[string]error
	order []string
}

func newWriteRecorder(t *testing.T) *writeRecorder {
	s, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "gateway.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.db.Exec("CREATE TABLE writes (name TEXT NOT NULL)").Error)
	return &writeRecorder{t: t, s: s, txs: map[string]gorm.ConnPool{}, errs: map[string]error{}}
}

// hold takes the gate, so that the writer's next batch waits for release.
func (r *writeRecorder) hold() (release func()) {
	gate := r.s.db.ConnPool.(*gatedPool).gate
	require.NoError(r.t, gate.acquire(r.t.Context()))
	return gate.release
}

// write queues a write that records name, then fails with fail if set.
func (r *writeRecorder) write(ctx context.Context, name string, fail error) {
	r.wg.Go(func() {
		err := r.s.write(ctx, func(tx *gorm.DB) error {
			r.mu.Lock()
			r.txs[name] = tx.Statement.ConnPool
			r.order = append(r.order, name)
			r.mu.Unlock()
			if err := tx.Exec("INSERT INTO writes VALUES (?)", name).Error; err != nil {
				return err
			}
			return fail
		})
		r.mu.Lock()
		r.errs[name] = err
		r.mu.Unlock()
	})
}

// waiting waits until n writes wait for the writer (besides the one it
// holds while it waits at the gate).
func (r *writeRecorder) waiting(n int) {
	r.t.Helper()
	gate := r.s.db.ConnPool.(*gatedPool).gate
	gate.queued(r.t, 1, 0)
	require.Eventually(r.t, func() bool {
		r.s.writer.mu.Lock()
		defer r.s.writer.mu.Unlock()
		return len(r.s.writer.interactive)+len(r.s.writer.background) == n
	}, 5*time.Second, time.Millisecond)
}

// rows are the names the committed writes recorded.
func (r *writeRecorder) rows() []string {
	r.wg.Wait()
	var names []string
	require.NoError(r.t, r.s.db.Raw("SELECT name FROM writes ORDER BY rowid").Scan(&names).Error)
	return names
}

// planned is a write a test queues: name, recorded, then fail if set.
type planned struct {
	ctx  context.Context
	name string
	fail error
}

// queue holds the writer back and queues the writes in order: the first
// is the one the writer holds while it waits at the gate. release lets it
// go.
func (r *writeRecorder) queue(writes ...planned) (release func()) {
	r.t.Helper()
	release = r.hold()
	for i, w := range writes {
		r.write(w.ctx, w.name, w.fail)
		if i == 0 {
			r.s.db.ConnPool.(*gatedPool).gate.queued(r.t, 1, 0)
		} else {
			r.waiting(i)
		}
	}
	return release
}

func TestWaitingWritesCommitInOneTransaction(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	ctx := t.Context()
	r.queue(planned{ctx: ctx, name: "first"}, planned{ctx: ctx, name: "second"}, planned{ctx: ctx, name: "third"})()

	require.Equal(t, []string{"first", "second", "third"}, r.rows())
	require.Same(t, r.txs["first"], r.txs["second"])
	require.Same(t, r.txs["first"], r.txs["third"])
	require.NotSame(t, r.s.db.ConnPool, r.txs["first"], "the writes ran in a transaction")
}

func TestAFailedWriteIsRolledBackAloneInItsBatch(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	ctx := t.Context()
	failure := errors.New("the write's own failure")
	r.queue(planned{ctx: ctx, name: "before"}, planned{ctx: ctx, name: "failing", fail: failure}, planned{ctx: ctx, name: "after"})()

	require.Equal(t, []string{"before", "after"}, r.rows(), "the failing write's insert was rolled back, the others committed")
	require.Same(t, r.txs["before"], r.txs["after"])
	require.ErrorIs(t, r.errs["failing"], failure)
	require.NoError(t, r.errs["before"])
	require.NoError(t, r.errs["after"])
}

func TestRequestsWritesJoinABatchFirst(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	ctx := t.Context()
	r.queue(
		planned{ctx: ctx, name: "background-1"},
		planned{ctx: ctx, name: "background-2"},
		planned{ctx: ctx, name: "background-3"},
		planned{ctx: Interactive(ctx), name: "request"},
	)()

	require.Equal(t, []string{"background-1", "request", "background-2", "background-3"}, r.rows())
	require.Same(t, r.txs["background-1"], r.txs["request"], "the request's write joined the batch")
	require.NotSame(t, r.txs["request"], r.txs["background-2"], "a batch with a request's write takes no more background ones")
	require.Same(t, r.txs["background-2"], r.txs["background-3"])
}

func TestABatchWithARequestsWriteTakesOnlyRequestsWrites(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	ctx := t.Context()
	r.queue(
		planned{ctx: Interactive(ctx), name: "request-1"},
		planned{ctx: ctx, name: "background"},
		planned{ctx: Interactive(ctx), name: "request-2"},
	)()

	require.Equal(t, []string{"request-1", "request-2", "background"}, r.rows())
	require.Same(t, r.txs["request-1"], r.txs["request-2"])
	require.NotSame(t, r.txs["request-1"], r.txs["background"])
}

func TestABatchHoldsAtMostMaxBatchWrites(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	var names []string
	var writes []planned
	for i := range maxBatch + 3 {
		names = append(names, fmt.Sprintf("w%02d", i))
		writes = append(writes, planned{ctx: t.Context(), name: names[i]})
	}
	r.queue(writes...)()

	require.Equal(t, names, r.rows())
	first, second := r.txs[names[0]], r.txs[names[maxBatch]]
	for i, name := range names {
		if i < maxBatch {
			require.Same(t, first, r.txs[name], "write %d is in the first batch", i)
		} else {
			require.Same(t, second, r.txs[name], "write %d is in the second batch", i)
		}
	}
	require.NotSame(t, first, second)
}

func TestAQueuedWriteGivesUpWithItsContext(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	ctx, cancel := context.WithCancel(t.Context())
	release := r.queue(planned{ctx: t.Context(), name: "first"}, planned{ctx: ctx, name: "abandoned"})
	cancel()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return errors.Is(r.errs["abandoned"], context.Canceled)
	}, 5*time.Second, time.Millisecond, "the caller got its context's error while the writer was still held")
	release()

	require.Equal(t, []string{"first"}, r.rows(), "the abandoned write never ran")
	require.NoError(t, r.errs["first"])
}

func TestBackgroundWritesPassAStreamOfRequests(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	ctx := t.Context()
	writes := []planned{{ctx: ctx, name: "background-0"}, {ctx: ctx, name: "background-1"}}
	for i := range maxInteractiveRun + 1 {
		writes = append(writes, planned{ctx: Interactive(ctx), name: fmt.Sprintf("request-%d", i)})
	}
	r.queue(writes...)()

	want := []string{"background-0"}
	for i := range maxInteractiveRun {
		want = append(want, fmt.Sprintf("request-%d", i))
	}
	want = append(want, "background-1", fmt.Sprintf("request-%d", maxInteractiveRun))
	require.Equal(t, want, r.rows())
	require.Same(t, r.txs["background-0"], r.txs[fmt.Sprintf("request-%d", maxInteractiveRun-1)])
	require.NotSame(t, r.txs["background-0"], r.txs["background-1"], "the waiting background write starts the next batch")
}

func TestTheStoresHotWritesGoThroughTheWriter(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	require.NoError(t, r.s.Migrate(t.Context()))
	release := r.queue(planned{ctx: t.Context(), name: "first"})
	now := time.Now().UTC().Truncate(time.Millisecond)
	job := &jobs.Record{ID: "0190f0e0-0000-7000-8000-000000000001", Service: "transcriptions", Tenant: "acme", UserID: "alice",
		Status: jobs.StatusPending, Input: `{}`, Options: `{}`, CreatedAt: now}
	var wg sync.WaitGroup
	wg.Go(func() {
		created, err := r.s.CreateJob(Interactive(t.Context()), job, &JobStart{Input: `{}`, NextAttemptAt: now})
		assert.NoError(t, err)
		assert.True(t, created)
	})
	r.waiting(1) // queued at the writer, not at the gate
	saved := *job
	saved.Status, saved.Revision = jobs.StatusProcessing, 1
	wg.Go(func() { assert.NoError(t, r.s.SaveJob(t.Context(), &saved)) })
	r.waiting(2)
	wg.Go(func() { assert.NoError(t, r.s.DeleteJobStarts(t.Context(), []string{job.ID})) })
	r.waiting(3)
	release()
	wg.Wait()

	got, err := r.s.GetJob(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusProcessing, got.Status)
	_, err = r.s.GetJobStart(t.Context(), job.ID)
	require.ErrorIs(t, err, ErrNotFound)
}

func TestWritesFailOnceTheStoreIsClosed(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	require.NoError(t, r.s.Close())
	err := r.s.write(t.Context(), func(tx *gorm.DB) error { return nil })
	require.ErrorIs(t, err, errStoreClosed)
}

func TestWritesQueuedWhenTheStoreClosesFail(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	var writes []planned
	for i := range maxBatch + 1 {
		writes = append(writes, planned{ctx: t.Context(), name: fmt.Sprintf("w%02d", i)})
	}
	release := r.queue(writes...)
	closed := make(chan error, 1)
	go func() { closed <- r.s.Close() }()
	require.Eventually(t, func() bool {
		select {
		case <-r.s.writer.quit:
			return true
		default:
			return false
		}
	}, 5*time.Second, time.Millisecond)
	release()
	require.NoError(t, <-closed)
	r.wg.Wait()

	for _, w := range writes[:maxBatch] {
		require.NoError(t, r.errs[w.name], "%s was in the batch running when the store closed", w.name)
	}
	require.ErrorIs(t, r.errs[writes[maxBatch].name], errStoreClosed)
}

func TestABatchOfBackgroundWritesWaitsInTheRequestsLine(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	gate := r.s.db.ConnPool.(*gatedPool).gate
	release := r.hold()
	r.write(t.Context(), "background", nil)
	// A request's write may join the batch while it waits for the
	// connection, so the batch waits where requests do.
	gate.queued(t, 1, 0)
	release()
	require.Equal(t, []string{"background"}, r.rows())
}
