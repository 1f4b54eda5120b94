package store

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

// Interactive marks ctx as a client's request waiting on the store: on
// SQLite its statements take the connection before background work's
// (workflow activities, the dispatcher). On PostgreSQL, which has a pool
// of connections, it changes nothing.
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

// connGate lets one holder at a time through, interactive waiters first.
type connGate struct {
	mu          sync.Mutex
	held        bool
	interactive []chan struct{}
	background  []chan struct{}
	run         int // interactive holders since the last background one
}

// acquire waits for the gate; the caller must release it.
func (g *connGate) acquire(ctx context.Context) error {
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

// release hands the gate to the next waiter.
func (g *connGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.handOver()
}

// handOver passes the held gate on, or frees it; g.mu is held.
func (g *connGate) handOver() {
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

// gatedPool is the SQLite connection pool behind the gate. A statement
// holds the gate while it runs, a transaction until it ends. A query's
// rows are read after the gate passed on: the next holder then waits for
// the connection in database/sql, alone.
type gatedPool struct {
	db   *sql.DB
	gate *connGate
}

var (
	_ gorm.ConnPool         = (*gatedPool)(nil)
	_ gorm.ConnPoolBeginner = (*gatedPool)(nil)
	_ gorm.GetDBConnector   = (*gatedPool)(nil)
	_ gorm.TxCommitter      = (*gatedTx)(nil)
)

func (p *gatedPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if err := p.gate.acquire(ctx); err != nil {
		return nil, err
	}
	defer p.gate.release()
	return p.db.PrepareContext(ctx, query)
}

func (p *gatedPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := p.gate.acquire(ctx); err != nil {
		return nil, err
	}
	defer p.gate.release()
	return p.db.ExecContext(ctx, query, args...)
}

func (p *gatedPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := p.gate.acquire(ctx); err != nil {
		return nil, err
	}
	defer p.gate.release()
	return p.db.QueryContext(ctx, query, args...)
}

func (p *gatedPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if err := p.gate.acquire(ctx); err != nil {
		// A *sql.Row carrying ctx's error: the query fails on a done ctx.
		return p.db.QueryRowContext(ctx, query, args...)
	}
	defer p.gate.release()
	return p.db.QueryRowContext(ctx, query, args...)
}

func (p *gatedPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	if err := p.gate.acquire(ctx); err != nil {
		return nil, err
	}
	tx, err := p.db.BeginTx(ctx, opts)
	if err != nil {
		p.gate.release()
		return nil, err
	}
	return &gatedTx{Tx: tx, db: p.db, release: sync.OnceFunc(p.gate.release)}, nil
}

func (p *gatedPool) GetDBConn() (*sql.DB, error) { return p.db, nil }

// gatedTx holds the gate until it commits or rolls back.
type gatedTx struct {
	*sql.Tx
	db      *sql.DB
	release func()
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
