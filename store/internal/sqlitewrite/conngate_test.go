package sqlitewrite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ai-job-gateway/gateway/store/internal/sqlitedialect"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// openDB opens a SQLite file as the store does: one connection, behind a
// Pool's gate.
func openDB(t *testing.T) (db *gorm.DB, pool *Pool, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "gateway.db")
	pool = NewPool(openSQL(t, path))
	db, err := gorm.Open(sqlitedialect.Dialector{Conn: pool}, &gorm.Config{
		Logger:                 logger.Default.LogMode(logger.Silent),
		SkipDefaultTransaction: true,
	})
	require.NoError(t, err)
	return db, pool, path
}

// openSQL opens the SQLite file at path on one connection, closed when
// the test ends.
func openSQL(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open(sqlitedialect.DriverName, DSN(path))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	return db
}

// heldGate is a gate the test holds.
func heldGate(t *testing.T) *Gate {
	t.Helper()
	g := &Gate{}
	require.NoError(t, g.Acquire(t.Context()))
	return g
}

// queued waits until the gate has n interactive and m background waiters.
func (g *Gate) queued(t *testing.T, interactive, background int) {
	t.Helper()
	require.Eventually(t, func() bool {
		i, b := g.Waiting()
		return i == interactive && b == background
	}, 5*time.Second, time.Millisecond)
}

// recordOrder returns a gate the test holds; wait, which queues a named
// waiter at it that holds the gate just long enough to note its turn; and
// order, which waits for them all and says in which order they got
// through.
func recordOrder(t *testing.T) (g *Gate, wait func(name string, ctx context.Context), order func() []string) {
	g = heldGate(t)
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	wait = func(name string, ctx context.Context) {
		wg.Go(func() {
			require.NoError(t, g.Acquire(ctx))
			mu.Lock()
			got = append(got, name)
			mu.Unlock()
			g.Release()
		})
	}
	return g, wait, func() []string {
		wg.Wait()
		return got
	}
}

func TestGateLetsInteractiveWaitersFirst(t *testing.T) {
	t.Parallel()
	g, wait, order := recordOrder(t)
	wait("background-1", t.Context())
	g.queued(t, 0, 1)
	wait("background-2", t.Context())
	g.queued(t, 0, 2)
	wait("interactive-1", Interactive(t.Context()))
	g.queued(t, 1, 2)
	wait("interactive-2", Interactive(t.Context()))
	g.queued(t, 2, 2)

	g.Release()
	require.Equal(t, []string{"interactive-1", "interactive-2", "background-1", "background-2"}, order(),
		"interactive waiters first, each kind in arrival order")
	require.NoError(t, g.Acquire(t.Context()), "and the gate is free again")
}

func TestGateLetsBackgroundWaitersThroughAStreamOfRequests(t *testing.T) {
	t.Parallel()
	g, wait, order := recordOrder(t)
	wait("background", t.Context())
	g.queued(t, 0, 1)
	for i := range 20 {
		wait("interactive", Interactive(t.Context()))
		g.queued(t, i+1, 1)
	}
	g.Release()
	got := order()
	require.Len(t, got, 21)
	require.Equal(t, "background", got[maxInteractiveRun],
		"a background waiter is passed by at most %d requests", maxInteractiveRun)
}

func TestGateWaiterGivesUpWithItsContext(t *testing.T) {
	t.Parallel()
	g := heldGate(t)
	ctx, cancel := context.WithTimeout(Interactive(t.Context()), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, g.Acquire(ctx), context.DeadlineExceeded)
	g.queued(t, 0, 0)
	g.Release()

	ctx, cancel = context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	require.NoError(t, g.Acquire(ctx), "nobody holds the gate after its holder released it")
}

func TestGateHoldersNeverOverlap(t *testing.T) {
	t.Parallel()
	g := &Gate{}
	var holders, most, served atomic.Int32
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			ctx := t.Context()
			if i%2 == 0 {
				ctx = Interactive(ctx)
			}
			if i%3 == 0 { // some give up while waiting, some just as they are let in
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(i%5)*100*time.Microsecond)
				defer cancel()
			}
			for range 50 {
				if g.Acquire(ctx) != nil {
					return
				}
				n := holders.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				served.Add(1)
				time.Sleep(10 * time.Microsecond)
				holders.Add(-1)
				g.Release()
			}
		})
	}
	wg.Wait()
	require.Equal(t, int32(1), most.Load(), "one holder at a time")
	require.Positive(t, served.Load())
	g.queued(t, 0, 0)
	g.mu.Lock()
	require.False(t, g.held, "the gate ends free")
	g.mu.Unlock()
}

func TestCommitsLeaveCheckpointsToTheCheckpointer(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gateway.db")
	db := openSQL(t, path)
	_, err := db.Exec("CREATE TABLE pages (body TEXT NOT NULL)")
	require.NoError(t, err)
	page := strings.Repeat("x", 4000)
	for range 1500 { // about 1,500 pages, past SQLite's default of 1,000
		_, err := db.Exec("INSERT INTO pages VALUES (?)", page)
		require.NoError(t, err)
	}
	wal, err := os.Stat(path + "-wal")
	require.NoError(t, err)
	require.Greater(t, wal.Size(), int64(1500*4096), "no commit checkpointed the WAL")

	c, err := startCheckpointer(path, &Gate{}, time.Hour, restartFrames)
	require.NoError(t, err)
	defer c.Stop()
	frames, copied, err := c.checkpoint(t.Context())
	require.NoError(t, err)
	require.GreaterOrEqual(t, frames, 1500)
	require.Equal(t, frames, copied, "the checkpointer copied the whole WAL into the database")

	_, err = db.Exec("INSERT INTO pages VALUES (?)", page)
	require.NoError(t, err)
	frames, _, err = c.checkpoint(t.Context())
	require.NoError(t, err)
	require.Less(t, frames, 10, "the next commit starts the WAL over")
}

func TestWALStaysShortUnderSteadyCommits(t *testing.T) {
	t.Parallel()
	_, pool, path := openDB(t)
	store, err := StartCheckpointer(path, pool.Gate()) // the store's own, as it runs
	require.NoError(t, err)
	defer store.Stop()
	c, err := startCheckpointer(path, pool.Gate(), time.Hour, 256) // driven by hand below
	require.NoError(t, err)
	defer c.Stop()
	_, err = pool.ExecContext(t.Context(), "CREATE TABLE pages (body TEXT NOT NULL)")
	require.NoError(t, err)

	// About 40 MiB of commits back to back, with checkpoints meanwhile. The
	// writer never gets more than 1 MiB ahead of the checkpoints' starts,
	// so a slow machine cannot starve them (the checkpoints still run
	// while commits go on).
	var checkpoints atomic.Int64
	written := make(chan error, 1)
	go func() {
		page := strings.Repeat("x", 4000)
		seen := checkpoints.Load()
		for i := range 10000 {
			if i%256 == 255 {
				for checkpoints.Load() == seen {
					time.Sleep(time.Millisecond)
				}
				seen = checkpoints.Load()
			}
			if _, err := pool.ExecContext(t.Context(), "INSERT INTO pages VALUES (?)", page); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	var most int64
	for {
		select {
		case err := <-written:
			require.NoError(t, err)
			// Without the held checkpoint the WAL took every commit (over
			// 100 MiB); with it, it is started over and cut back to 16 MiB.
			require.Less(t, most, int64(32<<20), "the WAL is started over, not left to grow with the commits")
			return
		default:
		}
		checkpoints.Add(1)
		require.NoError(t, c.checkpointOnce(t.Context()))
		if wal, err := os.Stat(path + "-wal"); err == nil {
			most = max(most, wal.Size())
		}
	}
}
