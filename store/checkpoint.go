package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/glebarez/sqlite"
)

// How a SQLite store's write-ahead log is copied into the database file:
// a passive checkpoint every checkpointInterval; and when the WAL has
// grown to restartFrames, a second one with the store's writers held off,
// so that the next commit starts the WAL over.
const (
	checkpointInterval = time.Second
	restartFrames      = 16384 // 64 MiB of 4 KiB pages
)

// checkpointer copies a SQLite store's write-ahead log into the database
// file from a connection of its own. Left to SQLite, the commit that grows
// the WAL past 1,000 pages does it, fsyncs included, while every other
// statement waits for the store's one connection. A PASSIVE checkpoint
// waits for no one: the store goes on committing meanwhile. But SQLite
// starts the WAL over only when a commit finds all of it copied, which
// under a steady stream of commits it never does; so once the WAL is
// long, the checkpointer copies what the last commits added while it
// holds the store's gate (a few pages and one fsync, as the passive
// checkpoints just before copied the rest).
type checkpointer struct {
	db            *sql.DB
	gate          *connGate
	restartFrames int
	cancel        context.CancelFunc
	done          chan struct{}
	stopOnce      sync.Once
}

func startCheckpointer(path string, gate *connGate, every time.Duration, restartFrames int) (*checkpointer, error) {
	db, err := sql.Open(sqlite.DriverName, path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("open database for checkpoints: %w", err)
	}
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{db: db, gate: gate, restartFrames: restartFrames, cancel: cancel, done: make(chan struct{})}
	go c.run(ctx, every)
	return c, nil
}

func (c *checkpointer) run(ctx context.Context, every time.Duration) {
	defer close(c.done)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			// A failed checkpoint leaves the WAL longer; the next one
			// copies what this one did not.
			_ = c.checkpointOnce(ctx)
		}
	}
}

// checkpointOnce runs a passive checkpoint. When the WAL has grown to
// restartFrames it runs a second one at once, to copy what was committed
// during the first, and then a last one with the store's statements held
// off, which has only the last moment's pages left to copy.
func (c *checkpointer) checkpointOnce(ctx context.Context) error {
	frames, _, err := c.checkpoint(ctx)
	if err != nil || frames < c.restartFrames {
		return err
	}
	if _, _, err := c.checkpoint(ctx); err != nil {
		return err
	}
	if err := c.gate.acquire(ctx); err != nil {
		return err
	}
	defer c.gate.release()
	_, _, err = c.checkpoint(ctx)
	return err
}

// checkpoint runs one PASSIVE checkpoint and says how many frames the WAL
// holds and how many of them are in the database file now.
func (c *checkpointer) checkpoint(ctx context.Context) (walFrames, copied int, err error) {
	var busy int
	err = c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &walFrames, &copied)
	return walFrames, copied, err
}

func (c *checkpointer) stop() {
	c.stopOnce.Do(func() {
		c.cancel()
		<-c.done
		_ = c.db.Close()
	})
}
