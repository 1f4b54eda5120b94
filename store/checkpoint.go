package store

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/glebarez/sqlite"
)

// checkpointInterval is how often the WAL of a SQLite store is copied into
// the database file.
const checkpointInterval = time.Second

// checkpointer copies a SQLite store's write-ahead log into the database
// file from a connection of its own. Left to SQLite, the commit that grows
// the WAL past 1,000 pages does it, fsyncs included, while every other
// statement waits for the store's one connection. A PASSIVE checkpoint
// waits for no one: writers go on appending meanwhile, and what it could
// not copy the next one does.
type checkpointer struct {
	db   *sql.DB
	quit chan struct{}
	done chan struct{}
}

func startCheckpointer(path string, every time.Duration) (*checkpointer, error) {
	db, err := sql.Open(sqlite.DriverName, path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("open database for checkpoints: %w", err)
	}
	db.SetMaxOpenConns(1)
	c := &checkpointer{db: db, quit: make(chan struct{}), done: make(chan struct{})}
	go c.run(every)
	return c, nil
}

func (c *checkpointer) run(every time.Duration) {
	defer close(c.done)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-ticker.C:
			// A failed checkpoint leaves the WAL longer; the next one
			// copies what this one did not.
			_, _, _ = c.checkpoint()
		}
	}
}

// checkpoint runs one PASSIVE checkpoint and says how many frames the WAL
// holds and how many of them are in the database file now.
func (c *checkpointer) checkpoint() (walFrames, copied int, err error) {
	var busy int
	err = c.db.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &walFrames, &copied)
	return walFrames, copied, err
}

func (c *checkpointer) stop() {
	close(c.quit)
	<-c.done
	_ = c.db.Close()
}
