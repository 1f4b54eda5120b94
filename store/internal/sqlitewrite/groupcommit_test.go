package sqlitewrite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// writeRecorder is a SQLite database and its writer, whose writes a test
// can hold back: while held, the writer waits at the connection gate with
// its first write, and the writes that follow queue behind it.
type writeRecorder struct {
	t     *testing.T
	db    *gorm.DB
	gate  *Gate
	w     *Writer
	wg    sync.WaitGroup
	mu    sync.Mutex
	txs   map[string]gorm.ConnPool // the transaction each write ran in
	errs  map[string]error
	order []string
}

func newWriteRecorder(t *testing.T) *writeRecorder {
	db, pool, _ := openDB(t)
	w := StartWriter(db)
	t.Cleanup(w.Stop)
	require.NoError(t, db.Exec("CREATE TABLE writes (name TEXT NOT NULL)").Error)
	return &writeRecorder{t: t, db: db, gate: pool.Gate(), w: w, txs: map[string]gorm.ConnPool{}, errs: map[string]error{}}
}

// hold takes the gate, so that the writer's next batch waits for release.
func (r *writeRecorder) hold() (release func()) {
	require.NoError(r.t, r.gate.Acquire(r.t.Context()))
	return r.gate.Release
}

// write queues a write that records name, then fails with fail if set.
func (r *writeRecorder) write(ctx context.Context, name string, fail error) {
	r.wg.Go(func() {
		err := r.w.Do(ctx, func(tx *gorm.DB) error {
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
	r.gate.queued(r.t, 1, 0)
	require.Eventually(r.t, func() bool { return r.w.Queued() == n }, 5*time.Second, time.Millisecond)
}

// rows are the names the committed writes recorded.
func (r *writeRecorder) rows() []string {
	r.wg.Wait()
	var names []string
	require.NoError(r.t, r.db.Raw("SELECT name FROM writes ORDER BY rowid").Scan(&names).Error)
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
			r.gate.queued(r.t, 1, 0)
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
	require.NotSame(t, r.db.ConnPool, r.txs["first"], "the writes ran in a transaction")
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

// A batch's first write runs without a savepoint: when it fails, its
// transaction is rolled back and the writes queued behind it commit in the
// next.
func TestAFailedFirstWriteEndsItsBatch(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	ctx := t.Context()
	failure := errors.New("the write's own failure")
	r.queue(planned{ctx: ctx, name: "failing", fail: failure}, planned{ctx: ctx, name: "second"}, planned{ctx: ctx, name: "third"})()

	require.Equal(t, []string{"second", "third"}, r.rows(), "the failing write's insert was rolled back, the others committed")
	require.ErrorIs(t, r.errs["failing"], failure)
	require.NoError(t, r.errs["second"])
	require.NoError(t, r.errs["third"])
	require.NotSame(t, r.txs["failing"], r.txs["second"], "the batch ended with the failed write")
	require.Same(t, r.txs["second"], r.txs["third"])
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

func TestWritesFailOnceTheWriterStopped(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	r.w.Stop()
	err := r.w.Do(t.Context(), func(tx *gorm.DB) error { return nil })
	require.ErrorIs(t, err, ErrClosed)
}

func TestWritesQueuedWhenTheWriterStopsFail(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	var writes []planned
	for i := range maxBatch + 1 {
		writes = append(writes, planned{ctx: t.Context(), name: fmt.Sprintf("w%02d", i)})
	}
	release := r.queue(writes...)
	stopped := make(chan struct{})
	go func() { r.w.Stop(); close(stopped) }()
	require.Eventually(t, func() bool {
		select {
		case <-r.w.quit:
			return true
		default:
			return false
		}
	}, 5*time.Second, time.Millisecond)
	release()
	<-stopped
	r.wg.Wait()

	for _, w := range writes[:maxBatch] {
		require.NoError(t, r.errs[w.name], "%s was in the batch running when the writer stopped", w.name)
	}
	require.ErrorIs(t, r.errs[writes[maxBatch].name], ErrClosed)
}

func TestABatchOfBackgroundWritesWaitsInTheRequestsLine(t *testing.T) {
	t.Parallel()
	r := newWriteRecorder(t)
	release := r.hold()
	r.write(t.Context(), "background", nil)
	// A request's write may join the batch while it waits for the
	// connection, so the batch waits where requests do.
	r.gate.queued(t, 1, 0)
	release()
	require.Equal(t, []string{"background"}, r.rows())
}
