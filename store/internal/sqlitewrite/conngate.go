package sqlitewrite

import (
	"context"
	"database/sql"
	"sync"

	"gorm.io/gorm"
)

// SQLite has one connection (one writer at a time is all it allows), and
// database/sql hands a freed connection to a random waiter. Under load a
// client's request would then queue behind the projection writes of
// every running job. The gate below orders the waiters instead: the
// statements of requests a client waits on (Interactive) first, in
// arrival order, then the background work's, in arrival order; a
// background waiter is passed by at most maxInteractiveRun requests, so
// that a steady stream of requests cannot starve the jobs' own writes.

type interactiveKey struct{}

// Interactive marks ctx as a client's request waiting on the store: its
// statements take the connection, and its writes join a batch, before
// background work's (workflow activities, the dispatcher).
func Interactive(ctx context.Context) context.Context {
	return context.WithValue(ctx, interactiveKey{}, true)
}

// IsInteractive says whether ctx was marked Interactive.
func IsInteractive(ctx context.Context) bool {
	v, _ := ctx.Value(interactiveKey{}).(bool)
	return v
}

// maxInteractiveRun is how many interactive holders in a row may pass a
// waiting background one.
const maxInteractiveRun = 8

// Gate lets one holder at a time through, interactive waiters first. The
// zero Gate is free.
type Gate struct {
	mu          sync.Mutex
	held        bool
	interactive []chan struct{}
	background  []chan struct{}
	run         int // interactive holders since the last background one
}

// Acquire waits for the gate; the caller must Release it.
func (g *Gate) Acquire(ctx context.Context) error {
	g.mu.Lock()
	if !g.held {
		g.held = true
		g.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	queue := &g.background
	if IsInteractive(ctx) {
		queue = &g.interactive
	}
	*queue = append(*queue, ready)
	g.mu.Unlock()

	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		select {
		case <-ready: // handed over just now: pass it on
			g.handOver()
		default:
			*queue = remove(*queue, ready)
		}
		return ctx.Err()
	}
}

// Release hands the gate to the next waiter.
func (g *Gate) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.handOver()
}

// Waiting says how many interactive and background waiters the gate has.
func (g *Gate) Waiting() (interactive, background int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.interactive), len(g.background)
}

// handOver passes the held gate on, or frees it; g.mu is held.
func (g *Gate) handOver() {
	switch {
	case len(g.interactive) > 0 && (g.run < maxInteractiveRun || len(g.background) == 0):
		g.run++
		letIn(&g.interactive)
	case len(g.background) > 0:
		g.run = 0
		letIn(&g.background)
	default:
		g.run = 0
		g.held = false
	}
}

// letIn wakes the first waiter of queue.
func letIn(queue *[]chan struct{}) {
	next := (*queue)[0]
	(*queue)[0] = nil
	*queue = (*queue)[1:]
	close(next)
}

func remove(queue []chan struct{}, c chan struct{}) []chan struct{} {
	for i, q := range queue {
		if q == c {
			return append(queue[:i], queue[i+1:]...)
		}
	}
	return queue
}

// Pool is the SQLite connection pool behind the gate, a gorm.ConnPool. A
// statement holds the gate while it runs, a transaction until it ends. A
// query's rows are read after the gate passed on: the next holder then
// waits for the connection in database/sql, alone.
type Pool struct {
	db    *sql.DB
	gate  *Gate
	stmts stmtCache
}

// NewPool puts db behind a gate of its own.
func NewPool(db *sql.DB) *Pool { return &Pool{db: db, gate: &Gate{}} }

// Gate is the pool's gate: whoever holds it holds off the pool's
// statements.
func (p *Pool) Gate() *Gate { return p.gate }

var (
	_ gorm.ConnPool         = (*Pool)(nil)
	_ gorm.ConnPoolBeginner = (*Pool)(nil)
	_ gorm.GetDBConnector   = (*Pool)(nil)
	_ gorm.TxCommitter      = (*gatedTx)(nil)
)

func (p *Pool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if err := p.gate.Acquire(ctx); err != nil {
		return nil, err
	}
	defer p.gate.Release()
	return p.db.PrepareContext(ctx, query)
}

func (p *Pool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := p.gate.Acquire(ctx); err != nil {
		return nil, err
	}
	defer p.gate.Release()
	if stmt := p.prepared(ctx, query); stmt != nil {
		return stmt.ExecContext(ctx, args...)
	}
	return p.db.ExecContext(ctx, query, args...)
}

// prepared is the statement of query prepared on the connection, which
// the caller holding the gate may take; nil if SQLite refuses it, which
// the statement run unprepared then reports.
func (p *Pool) prepared(ctx context.Context, query string) *sql.Stmt {
	if stmt := p.stmts.get(query); stmt != nil {
		return stmt
	}
	p.stmts.prepareWanted(ctx, p.db)
	return p.stmts.get(query)
}

func (p *Pool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := p.gate.Acquire(ctx); err != nil {
		return nil, err
	}
	defer p.gate.Release()
	if stmt := p.prepared(ctx, query); stmt != nil {
		return stmt.QueryContext(ctx, args...)
	}
	return p.db.QueryContext(ctx, query, args...)
}

func (p *Pool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if err := p.gate.Acquire(ctx); err != nil {
		// A *sql.Row carrying ctx's error: the query fails on a done ctx.
		return p.db.QueryRowContext(ctx, query, args...)
	}
	defer p.gate.Release()
	if stmt := p.prepared(ctx, query); stmt != nil {
		return stmt.QueryRowContext(ctx, args...)
	}
	return p.db.QueryRowContext(ctx, query, args...)
}

func (p *Pool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	if err := p.gate.Acquire(ctx); err != nil {
		return nil, err
	}
	p.stmts.prepareWanted(ctx, p.db)
	tx, err := p.db.BeginTx(ctx, opts)
	if err != nil {
		p.gate.Release()
		return nil, err
	}
	return &gatedTx{Tx: tx, db: p.db, stmts: &p.stmts, release: sync.OnceFunc(p.gate.Release)}, nil
}

func (p *Pool) GetDBConn() (*sql.DB, error) { return p.db, nil }

// gatedTx holds the gate until it commits or rolls back.
type gatedTx struct {
	*sql.Tx
	db      *sql.DB
	stmts   *stmtCache
	release func()
}

// The statements of a transaction run prepared when the pool has them
// (stmtcache.go).

func (t *gatedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if stmt := t.stmts.get(query); stmt != nil {
		return t.Tx.StmtContext(ctx, stmt).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t *gatedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if stmt := t.stmts.get(query); stmt != nil {
		return t.Tx.StmtContext(ctx, stmt).QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

func (t *gatedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if stmt := t.stmts.get(query); stmt != nil {
		return t.Tx.StmtContext(ctx, stmt).QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}

func (t *gatedTx) GetDBConn() (*sql.DB, error) { return t.db, nil }

func (t *gatedTx) Commit() error {
	defer t.release()
	return t.Tx.Commit()
}

func (t *gatedTx) Rollback() error {
	defer t.release()
	return t.Tx.Rollback()
}
