package sqlitewrite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"
)

// On SQLite every write takes the store's one connection, and under load
// most of a write's wait was not the writes before it but the hand-overs
// between them: each waiter, woken in turn, first waits for a CPU while
// the connection idles (a lock convoy). The store's hot writes (jobs
// accepted, job projections, outbox and rate counters) therefore go
// through one writer goroutine instead, which runs whatever writes are
// waiting in one transaction and commits them together (group commit): a
// hand-over and a commit per batch, not per write. Requests' writes
// (Interactive) join a batch before background ones, and a batch is kept
// short so that a request never waits long behind one. Every batch takes
// the connection as a request would: a batch that began with background
// writes may be joined by a request's write while it waits at the gate,
// and must not make that request wait in the background's line.
//
// Each write after a batch's first runs under its own savepoint: one that
// fails is rolled back alone and its caller gets its error; the others
// commit. The first needs none: when it fails, the transaction, which holds
// nothing else yet, is rolled back and the batch ends with it. A caller
// returns once its batch committed, so a write reported done is as durable
// as a transaction of its own.

// maxBatch bounds the writes of one transaction; a request's write waits
// for at most the batch running when it arrives (unless that batch is
// full) and the requests' statements ahead of it at the gate.
const maxBatch = 16

// ErrClosed is the error of writes left when the writer stops.
var ErrClosed = errors.New("store: closed")

// Writer is the SQLite store's writer.
type Writer struct {
	db *gorm.DB

	mu          sync.Mutex
	interactive []*pendingWrite
	background  []*pendingWrite
	inRow       int // requests' writes taken since the last background one
	closed      bool

	wake     chan struct{}
	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// pendingWrite is one caller's write, waiting for its batch.
type pendingWrite struct {
	ctx    context.Context
	fn     func(tx *gorm.DB) error
	result chan error
	state  atomic.Int32 // writeQueued, then writeTaken or writeAbandoned
}

// The states of a pendingWrite: the writer takes a queued write, or its
// caller, whose ctx ended first, abandons it; never both.
const (
	writeQueued int32 = iota
	writeTaken
	writeAbandoned
)

// StartWriter starts a writer that commits on db; Stop ends it.
func StartWriter(db *gorm.DB) *Writer {
	g := &Writer{
		db:   db,
		wake: make(chan struct{}, 1),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	go g.run()
	return g
}

// Do runs fn in a transaction, the batch's, under a savepoint, and
// returns its error once that transaction ended. fn may run on another
// goroutine; the caller may read what it set once Do returned. fn must use
// only tx: a call from fn to the store would wait for the writer that runs
// it. A write whose ctx ends while it is queued is abandoned, never run;
// once the writer took it, Do waits for its batch's end.
func (g *Writer) Do(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &pendingWrite{ctx: ctx, fn: fn, result: make(chan error, 1)}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	if IsInteractive(ctx) {
		g.interactive = append(g.interactive, w)
	} else {
		g.background = append(g.background, w)
	}
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
	select {
	case err := <-w.result:
		return err
	case <-ctx.Done():
		if w.state.CompareAndSwap(writeQueued, writeAbandoned) {
			return ctx.Err()
		}
		return <-w.result
	}
}

func (g *Writer) run() {
	defer close(g.done)
	for {
		select {
		case <-g.wake:
		case <-g.quit:
		}
		select {
		case <-g.quit: // both were ready: closing wins
			g.fail()
			return
		default:
		}
		for g.commit() {
			select {
			case <-g.quit:
				g.fail()
				return
			default:
			}
		}
	}
}

// fail closes the writer: the writes still queued fail with
// ErrClosed, and so will any later one.
func (g *Writer) fail() {
	g.mu.Lock()
	g.closed = true
	left := append(g.interactive, g.background...)
	g.interactive, g.background = nil, nil
	g.mu.Unlock()
	for _, w := range left {
		w.result <- ErrClosed
	}
}

// next takes the next write of a batch: a request's first, in arrival
// order, then the background's, except that a waiting background write
// lets at most maxInteractiveRun requests' writes pass it (as at the
// gate); nil when none waits, or when requestsOnly and the next is a
// background write. interactive says whether it is a request's.
// Abandoned writes are dropped.
func (g *Writer) next(requestsOnly bool) (w *pendingWrite, interactive bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		interactive = len(g.interactive) > 0 && (g.inRow < maxInteractiveRun || len(g.background) == 0)
		queue := &g.background
		if interactive {
			queue = &g.interactive
		}
		if len(*queue) == 0 || (requestsOnly && !interactive) {
			return nil, false
		}
		w = (*queue)[0]
		(*queue)[0] = nil
		*queue = (*queue)[1:]
		if !w.state.CompareAndSwap(writeQueued, writeTaken) {
			continue
		}
		if interactive {
			g.inRow++
		} else {
			g.inRow = 0
		}
		return w, interactive
	}
}

// commit runs one batch in one transaction: the writes waiting when it
// starts and those that arrive while it runs, up to maxBatch. A request's
// write that arrives mid-batch runs next, in the same transaction, so it
// waits for one write and a commit, not for a batch; and once a batch
// holds a request's write it takes no more background ones, which would
// only hold that request's answer back. Each caller gets its result once
// the transaction ended. commit reports whether it ran any.
func (g *Writer) commit() bool {
	first, requests := g.next(false)
	if first == nil {
		return false
	}
	ctx := Interactive(context.Background())
	batch := []*pendingWrite{first}
	results := []error{nil}
	err := g.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for i := 0; ; i++ {
			w := batch[i]
			switch err := w.ctx.Err(); {
			case err != nil:
				results[i] = err
			case i == 0:
				// Alone in the transaction so far: if it fails, rolling
				// the transaction back rolls back just it, so it needs no
				// savepoint of its own.
				if results[i] = runWrite(tx, w); results[i] != nil {
					return results[i]
				}
			default:
				if err := runSavepointed(tx, w, &results[i]); err != nil {
					return err
				}
			}
			if len(batch) == maxBatch {
				return nil
			}
			next, interactive := g.next(requests)
			if next == nil {
				return nil
			}
			requests = requests || interactive
			batch = append(batch, next)
			results = append(results, nil)
		}
	})
	for i, w := range batch {
		if results[i] == nil && err != nil {
			results[i] = err
		}
		w.result <- results[i]
	}
	return true
}

// runSavepointed runs w under a savepoint, rolled back if w fails, and
// sets its result; the error returned is the savepoint's own, which ends
// the batch.
func runSavepointed(tx *gorm.DB, w *pendingWrite, result *error) error {
	if err := tx.Exec("SAVEPOINT batched_write").Error; err != nil {
		return err
	}
	*result = runWrite(tx, w)
	if *result != nil {
		if err := tx.Exec("ROLLBACK TO SAVEPOINT batched_write").Error; err != nil {
			return err
		}
	}
	return tx.Exec("RELEASE SAVEPOINT batched_write").Error
}

// runWrite runs one write's fn; a panic fails that write alone.
func runWrite(tx *gorm.DB, w *pendingWrite) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("store: write panicked: %v", r)
		}
	}()
	return w.fn(tx)
}

// Queued says how many writes wait for a batch.
func (g *Writer) Queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.interactive) + len(g.background)
}

// Stop ends the writer; writes still queued fail with ErrClosed, and so
// will any later one.
func (g *Writer) Stop() {
	g.stopOnce.Do(func() { close(g.quit) })
	<-g.done
}
