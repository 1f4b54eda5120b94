// Package store keeps the gateway's queryable state in PostgreSQL or SQLite
// through GORM, with versioned migrations: projections of job state
// (Temporal stays the source of truth for execution), the outbox of job
// starts, idempotency keys, tenants and routing policies, usage and
// budgets, webhook deliveries, batches, circuit breakers, retention and
// the open jobs the reconciliation sweep checks against Temporal.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/ai-job-gateway/gateway/store/internal/sqlitedialect"
	"github.com/ai-job-gateway/gateway/store/internal/sqlitewrite"
)

// ErrNotFound is returned when a record does not exist.
var ErrNotFound = errors.New("not found")

// Store is the gateway's database, split by domain: each field is a
// narrow store over the same connections, and a consumer takes (or
// declares an interface over) the one it needs (docs/architecture.md,
// The store).
type Store struct {
	*conn
	// Jobs: jobs and their starts (the outbox), events, idempotency keys,
	// deletions, reconciliation and provider callbacks.
	Jobs *JobStore
	// Routing: tenants, routing policies, services' and providers'
	// statuses, rate counters, turns and latencies.
	Routing *RoutingStore
	// Usage: the usage ledger, budgets and their notifications.
	Usage *UsageStore
	// Webhooks: delivery logs, webhook messages and the signing key.
	Webhooks *WebhookStore
	// Batches: batches, their items and completions.
	Batches *BatchStore
	// Breakers: providers' circuit breakers.
	Breakers *BreakerStore
	// Housekeeping: retention and the housekeeping rounds' locks.
	Housekeeping *HousekeepingStore
	// Keys: payload scope secrets and payload key checks.
	Keys *KeyStore
	// APIKeys: the keys the gateway issues (docs/api.md, API keys).
	APIKeys *APIKeyStore
	// Audit: the audit log of administrative writes (docs/api.md, Audit
	// log); each write records its event itself.
	Audit *AuditStore
}

// The domain stores; each method's comment says what it reads or writes.
type (
	JobStore          struct{ *conn }
	RoutingStore      struct{ *conn }
	UsageStore        struct{ *conn }
	WebhookStore      struct{ *conn }
	BatchStore        struct{ *conn }
	BreakerStore      struct{ *conn }
	HousekeepingStore struct{ *conn }
	KeyStore          struct{ *conn }
	APIKeyStore       struct{ *conn }
	AuditStore        struct{ *conn }
)

// conn is what every domain store shares: the connection pool and, on
// SQLite, the one writer.
type conn struct {
	db          *gorm.DB
	dialect     string
	checkpoints *sqlitewrite.Checkpointer // SQLite only
	writer      *sqlitewrite.Writer       // SQLite only
	exclusive   sync.Map                  // SQLite only: TryExclusive's locks by name
}

func newStore(c *conn) *Store {
	return &Store{conn: c, Jobs: &JobStore{c}, Routing: &RoutingStore{c}, Usage: &UsageStore{c}, Webhooks: &WebhookStore{c},
		Batches: &BatchStore{c}, Breakers: &BreakerStore{c}, Housekeeping: &HousekeepingStore{c}, Keys: &KeyStore{c},
		APIKeys: &APIKeyStore{c}, Audit: &AuditStore{c}}
}

// DefaultMaxConns is how many PostgreSQL connections a store keeps open at
// most unless SetMaxConns says otherwise.
const DefaultMaxConns = 20

// MinMaxConns is the fewest connections a process works with: a worker
// holds one for its notifications (ListenJobStarts) and one for a
// housekeeping round's lock (TryExclusive) while the round's statements
// and its jobs' need others.
const MinMaxConns = 4

// SetMaxConns bounds the PostgreSQL connections the store keeps open to
// n, half of them kept idle (docs/operations.md, Database connections).
// SQLite keeps its one connection.
func (s *Store) SetMaxConns(n int) {
	if s.dialect != "postgres" || n < 1 {
		return
	}
	if sqlDB, err := s.db.DB(); err == nil {
		sqlDB.SetMaxOpenConns(n)
		sqlDB.SetMaxIdleConns(max(1, n/2))
	}
}

// Open connects to databaseURL: a postgres:// or postgresql:// URL, or
// sqlite:PATH (a file, created when missing).
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	dialector, dialect, err := dialectorFor(databaseURL)
	if err != nil {
		return nil, err
	}
	db, err := gorm.Open(dialector, &gorm.Config{
		Logger:                 logger.Default.LogMode(logger.Silent),
		SkipDefaultTransaction: true,
		TranslateError:         true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	})
	if err != nil {
		if d, ok := dialector.(sqlitedialect.Dialector); ok {
			sqlDB, _ := d.Conn.(*sqlitewrite.Pool).GetDBConn()
			_ = sqlDB.Close()
		}
		return nil, fmt.Errorf("open database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	if dialect == "sqlite" {
		// One writer at a time is all SQLite allows; a single connection
		// makes callers queue (at the gate, sqlitewrite.Pool) instead of
		// failing with SQLITE_BUSY.
		sqlDB.SetMaxOpenConns(1)
	} else {
		sqlDB.SetMaxOpenConns(DefaultMaxConns)
		sqlDB.SetMaxIdleConns(DefaultMaxConns / 2)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	}
	if dialect == "postgres" {
		// A partition can hold a connection open without an answer; a local
		// SQLite file cannot, and its queue of statements may be long.
		if err := registerDeadlines(db); err != nil {
			_ = sqlDB.Close()
			return nil, fmt.Errorf("open database: %w", err)
		}
	}
	s := newStore(&conn{db: db, dialect: dialect})
	if err := s.Ping(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if pool, ok := db.ConnPool.(*sqlitewrite.Pool); ok {
		if s.checkpoints, err = sqlitewrite.StartCheckpointer(sqlitePath(databaseURL), pool.Gate()); err != nil {
			_ = s.Close()
			return nil, err
		}
		s.writer = sqlitewrite.StartWriter(db)
	}
	return s, nil
}

func dialectorFor(databaseURL string) (gorm.Dialector, string, error) {
	switch {
	case strings.HasPrefix(databaseURL, "postgres://"), strings.HasPrefix(databaseURL, "postgresql://"):
		return postgres.Open(withServerTimeouts(databaseURL)), "postgres", nil
	case strings.HasPrefix(databaseURL, "sqlite:"):
		path := sqlitePath(databaseURL)
		if path == "" {
			return nil, "", errors.New("database URL: sqlite: needs a file path, e.g. sqlite:./.data/gateway.db")
		}
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, "", fmt.Errorf("database URL: create %s: %w", dir, err)
			}
		}
		dsn := sqlitewrite.DSN(path)
		sqlDB, err := sql.Open(sqlitedialect.DriverName, dsn)
		if err != nil {
			return nil, "", fmt.Errorf("open database: %w", err)
		}
		return sqlitedialect.Dialector{Conn: sqlitewrite.NewPool(sqlDB)}, "sqlite", nil
	default:
		return nil, "", fmt.Errorf("database URL %q: use postgres://user@host:port/db or sqlite:path/to/file.db", redact(databaseURL))
	}
}

// serverTimeouts end, on the server, a session that a client gave up on
// mid-transaction: after a partition the server may not learn for hours
// that the client is gone, and the session's locks would stay held. Set
// as runtime parameters unless the URL sets them (docs/operations.md,
// Database outages).
var serverTimeouts = map[string]string{
	"idle_in_transaction_session_timeout": "60000", // ms
}

// withServerTimeouts is databaseURL with serverTimeouts added.
func withServerTimeouts(databaseURL string) string {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return databaseURL // pgx reports it
	}
	q := u.Query()
	for k, v := range serverTimeouts {
		if !q.Has(k) {
			q.Set(k, v)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// sqlitePath is the file of a sqlite:PATH database URL.
func sqlitePath(databaseURL string) string {
	return strings.TrimPrefix(strings.TrimPrefix(databaseURL, "sqlite:"), "//")
}

// redact hides a password in a URL for error messages.
func redact(u string) string {
	at := strings.Index(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return u
	}
	creds := u[scheme+3 : at]
	if user, _, ok := strings.Cut(creds, ":"); ok {
		return u[:scheme+3] + user + ":***" + u[at:]
	}
	return u
}

// Dialect names the database: "postgres" or "sqlite".
func (s *Store) Dialect() string { return s.dialect }

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	if s.dialect == "postgres" {
		var cancel context.CancelFunc
		ctx, cancel = statementContext(ctx)
		defer cancel()
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	return nil
}

// Close closes the connection pool.
func (s *Store) Close() error {
	if s.writer != nil {
		s.writer.Stop()
	}
	if s.checkpoints != nil {
		s.checkpoints.Stop()
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Unavailable reports whether err means the database could not be reached
// (refused, reset or timed-out connections), rather than a query's own
// failure: the request may succeed when the database is back, so the API
// answers 503 with Retry-After (docs/api.md, Errors).
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var connect *pgconn.ConnectError
	var netErr *net.OpError
	// A statement past its deadline (statementContext): the database did
	// not answer in time.
	return errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) ||
		errors.As(err, &connect) || errors.As(err, &netErr) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}
