package store

import (
	"context"

	"gorm.io/gorm"

	"github.com/ai-job-gateway/gateway/store/internal/sqlitewrite"
)

// Interactive marks ctx as a client's request waiting on the store: on
// SQLite its statements take the connection before background work's
// (workflow activities, the dispatcher). On PostgreSQL, which has a pool
// of connections, it changes nothing.
func Interactive(ctx context.Context) context.Context {
	return sqlitewrite.Interactive(ctx)
}

// IsInteractive says whether ctx was marked Interactive.
func IsInteractive(ctx context.Context) bool {
	return sqlitewrite.IsInteractive(ctx)
}

// write runs fn in a transaction and returns its error once that
// transaction ended. On SQLite the store's hot writes (jobs accepted, job
// projections, outbox and rate counters) go through the writer, which
// commits the waiting ones together (sqlitewrite.Writer): fn may run on
// another goroutine, and the caller may read what it set once write
// returned; fn must use only tx, as a call to the store from fn would wait
// for the writer that runs it. On PostgreSQL, which has a pool of
// connections, each write runs on its own.
func (s *conn) write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if s.writer == nil {
		return s.transaction(ctx, fn)
	}
	return s.writer.Do(ctx, fn)
}

// transaction runs fn in a transaction bounded, begin to commit, by the
// deadline of one statement (statementContext): a transaction's statements
// each have one, but its BEGIN and COMMIT go around GORM's callbacks.
func (s *conn) transaction(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if s.dialect == "postgres" {
		var cancel context.CancelFunc
		ctx, cancel = statementContext(ctx)
		defer cancel()
	}
	return s.db.WithContext(ctx).Transaction(fn)
}

// unsyncedCommit is a condition, true for every row, that lets the
// PostgreSQL statement it sits in, and the transaction around it, commit
// without waiting for the WAL to reach the disk (synchronous_commit off
// for that transaction alone, about 0.5 ms less per commit on a local
// disk; it is evaluated only when the statement writes a row). It is for
// writes that a crash of the database server may lose at no cost but work
// done again: an outbox lease, which another claim takes again, or a
// routing decision's reservation, which the decision makes again unless
// its workflow recorded it. The next synchronous commit of any session
// flushes them too, and a crash of the gateway's processes loses nothing.
// SQLite syncs no commit to the disk (synchronous=NORMAL)
// (docs/operations.md, Durability).
const unsyncedCommit = "set_config('synchronous_commit', 'off', true) IS NOT NULL"

// writeStatement is write for an fn of one statement: on PostgreSQL it
// runs on its own, without a transaction around it.
func (s *conn) writeStatement(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if s.writer == nil {
		return fn(s.db.WithContext(ctx))
	}
	return s.writer.Do(ctx, fn)
}
