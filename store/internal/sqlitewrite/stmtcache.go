package sqlitewrite

import (
	"container/list"
	"context"
	"database/sql"
	"sync"
)

// SQLite compiles every statement it runs, triggers included: for the
// store's job writes that is about a quarter of their CPU
// (docs/benchmarks-results.md, 2026-11-28, morning). The pool keeps its most used
// statements prepared on its one connection instead. A statement is
// prepared on the connection while it is free: a transaction runs a
// statement not prepared yet as it is, and the next BeginTx, which
// holds the gate before the connection is taken, prepares it.

// stmtCacheSize bounds the statements kept prepared. The store's writes
// and reads are a few dozen statements; the bound is for statements
// whose text varies (IN lists, batches of rows), least recently used
// first out.
const stmtCacheSize = 128

// stmtCache holds prepared statements by their text.
type stmtCache struct {
	mu     sync.Mutex
	byText map[string]*list.Element // of *cachedStmt
	order  list.List                // most recently used first
	wanted map[string]struct{}      // run in a transaction, to prepare
	hits   int64                    // statements run prepared
}

type cachedStmt struct {
	text string
	stmt *sql.Stmt
}

// get is the statement prepared for text, or nil; a miss marks text
// wanted.
func (c *stmtCache) get(text string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byText[text]; ok {
		c.order.MoveToFront(e)
		c.hits++
		return e.Value.(*cachedStmt).stmt
	}
	if c.wanted == nil {
		c.wanted = map[string]struct{}{}
	}
	if len(c.wanted) < stmtCacheSize {
		c.wanted[text] = struct{}{}
	}
	return nil
}

// prepareWanted prepares the statements wanted since the last call on
// db, whose connection must be free of transactions (the caller holds
// the gate). A statement SQLite refuses is left to run unprepared.
func (c *stmtCache) prepareWanted(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	wanted := c.wanted
	c.wanted = nil
	c.mu.Unlock()
	for text := range wanted {
		stmt, err := db.PrepareContext(ctx, text)
		if err != nil {
			continue
		}
		c.put(text, stmt)
	}
}

func (c *stmtCache) put(text string, stmt *sql.Stmt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byText == nil {
		c.byText = map[string]*list.Element{}
	}
	if _, ok := c.byText[text]; ok {
		_ = stmt.Close()
		return
	}
	c.byText[text] = c.order.PushFront(&cachedStmt{text: text, stmt: stmt})
	for c.order.Len() > stmtCacheSize {
		last := c.order.Back()
		c.order.Remove(last)
		old := last.Value.(*cachedStmt)
		delete(c.byText, old.text)
		// A transaction using it still may: database/sql closes it
		// once that ends.
		_ = old.stmt.Close()
	}
}
