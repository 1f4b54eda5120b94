package sqlitewrite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/ai-job-gateway/gateway/store/internal/sqlitedialect"
)

// How a SQLite store's write-ahead log is copied into the database file:
// a passive checkpoint every checkpointInterval; and when the WAL has
// grown to restartFrames, a second one with the store's writers held off,
// so that the next commit starts the WAL over.
const (
	checkpointInterval = time.Second
	restartFrames      = 16384 // 64 MiB of 4 KiB pages
)

// Checkpointer copies a SQLite store's write-ahead log into the database
// file from a connection of its own. Left to SQLite, the commit that grows
// the WAL past 1,000 pages does it, fsyncs included, while every other
// statement waits for the store's one connection. A PASSIVE checkpoint
// waits for no one: the store goes on committing meanwhile. But SQLite
// starts the WAL over only when a commit finds all of it copied, which
// under a steady stream of commits it never does; so once the WAL is
// long, the checkpointer copies what the last commits added while it
// holds the store's gate (a few pages and one fsync, as the passive
// checkpoints just before copied the rest).
type Checkpointer struct {
	db            *sql.DB
	gate          *Gate
	restartFrames int
	cancel        context.CancelFunc
	done          chan struct{}
	stopOnce      sync.Once
}

// StartCheckpointer starts checkpointing the SQLite database at path (opened
// with DSN) every checkpointInterval, holding off the statements behind gate
// (the store's Pool's) to start the WAL over. Stop ends it.
func StartCheckpointer(path string, gate *Gate) (*Checkpointer, error) {
	return startCheckpointer(path, gate, checkpointInterval, restartFrames)
}

func startCheckpointer(path string, gate *Gate, every time.Duration, restartFrames int) (*Checkpointer, error) {
	db, err := sql.Open(sqlitedialect.DriverName, path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("open database for checkpoints: %w", err)
	}
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithCancel(context.Background())
	c := &Checkpointer{db: db, gate: gate, restartFrames: restartFrames, cancel: cancel, done: make(chan struct{})}
	go c.run(ctx, every)
	return c, nil
}

func (c *Checkpointer) run(ctx context.Context, every time.Duration) {
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
func (c *Checkpointer) checkpointOnce(ctx context.Context) error {
	frames, _, err := c.checkpoint(ctx)
	if err != nil || frames < c.restartFrames {
		return err
	}
	if _, _, err := c.checkpoint(ctx); err != nil {
		return err
	}
	if err := c.gate.Acquire(ctx); err != nil {
		return err
	}
	defer c.gate.Release()
	_, _, err = c.checkpoint(ctx)
	return err
}

// checkpoint runs one PASSIVE checkpoint and says how many frames the WAL
// holds and how many of them are in the database file now.
func (c *Checkpointer) checkpoint(ctx context.Context) (walFrames, copied int, err error) {
	var busy int
	err = c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &walFrames, &copied)
	return walFrames, copied, err
}

// Stop ends the checkpoints and closes their connection.
func (c *Checkpointer) Stop() {
	c.stopOnce.Do(func() {
		c.cancel()
		<-c.done
		_ = c.db.Close()
	})
}

// DSN opens a SQLite store's file in WAL mode. Its commits never
// checkpoint the WAL (wal_autocheckpoint 0): the Checkpointer does, off
// the store's connection. A WAL started over is cut back to 16 MiB.
// Temporary data (statement journals, which a job insert with its indexes
// writes, and sorts) stays in memory instead of temp files. Deleted
// content is overwritten with zeros (secure_delete), so a deleted job's
// input does not linger in freed pages (docs/api.md, Deleting a job).
func DSN(path string) string {
	return path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_pragma=wal_autocheckpoint(0)&_pragma=journal_size_limit(16777216)&_pragma=temp_store(MEMORY)&_pragma=secure_delete(1)"
}
