package store

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// Statement deadlines (docs/operations.md, Database outages). A network
// partition that holds bytes rather than resetting connections would leave
// a PostgreSQL statement waiting for as long as TCP keeps the connection
// open: minutes. So every statement gets a deadline unless its context has
// a sooner one; when it passes, pgx closes the connection and the caller
// gets an error that Unavailable recognises (the API answers 503, a worker's
// activity fails and is retried).
const (
	// InteractiveStatementTimeout bounds a statement of a client's request
	// (ctx marked Interactive).
	InteractiveStatementTimeout = 5 * time.Second
	// BackgroundStatementTimeout bounds any other statement.
	BackgroundStatementTimeout = 30 * time.Second
)

type noDeadlineKey struct{}

// withoutDeadline marks ctx's statements as allowed to run as long as ctx
// does (schema migrations).
func withoutDeadline(ctx context.Context) context.Context {
	return context.WithValue(ctx, noDeadlineKey{}, true)
}

// statementContext is ctx with the deadline its statements get, and the
// function that releases it.
func statementContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Value(noDeadlineKey{}) != nil {
		return ctx, func() {}
	}
	timeout := BackgroundStatementTimeout
	if IsInteractive(ctx) {
		timeout = InteractiveStatementTimeout
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= timeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, timeout)
}

const (
	cancelSetting    = "gateway:statement_cancel"
	rowCancelSetting = "gateway:row_cancel"
)

// registerDeadlines gives every statement GORM runs a deadline: set before
// the statement, released once its callbacks are done. Statements that
// hand their rows to the caller (Row, Rows, Raw().Scan) keep theirs until
// it passes, since the rows are read after the callbacks return.
func registerDeadlines(db *gorm.DB) error {
	set := func(tx *gorm.DB) {
		ctx, cancel := statementContext(tx.Statement.Context)
		tx.Statement.Context = ctx
		tx.Statement.Settings.Store(cancelSetting, cancel)
	}
	release := func(tx *gorm.DB) {
		if cancel, ok := tx.Statement.Settings.LoadAndDelete(cancelSetting); ok {
			cancel.(context.CancelFunc)()
		}
	}
	setUntilExpiry := func(tx *gorm.DB) {
		ctx, cancel := statementContext(tx.Statement.Context)
		// Not called here: the rows are read after this callback returns.
		// The context's own timer releases it at its deadline (or the
		// parent's end does), within BackgroundStatementTimeout.
		tx.Statement.Settings.Store(rowCancelSetting, cancel)
		tx.Statement.Context = ctx
	}
	cb := db.Callback()
	for _, p := range []struct {
		name          string
		before, after interface {
			Register(name string, fn func(*gorm.DB)) error
		}
	}{
		{"create", cb.Create().Before("*"), cb.Create().After("*")},
		{"query", cb.Query().Before("*"), cb.Query().After("*")},
		{"update", cb.Update().Before("*"), cb.Update().After("*")},
		{"delete", cb.Delete().Before("*"), cb.Delete().After("*")},
		{"raw", cb.Raw().Before("*"), cb.Raw().After("*")},
	} {
		if err := p.before.Register("gateway:deadline_"+p.name, set); err != nil {
			return err
		}
		if err := p.after.Register("gateway:deadline_release_"+p.name, release); err != nil {
			return err
		}
	}
	return cb.Row().Before("*").Register("gateway:deadline_row", setUntilExpiry)
}
