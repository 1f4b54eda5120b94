package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"
	"time"

	"gorm.io/gorm"
)

// Work one process of the deployment does at a time, and once per round
// (docs/operations.md, Housekeeping).

// advisoryKey is the 64-bit key of an advisory lock named $1. PostgreSQL's
// advisory locks are per database, so the key includes the schema: two
// deployments (or tests) on one database in schemas of their own do not
// lock each other out.
const advisoryKey = "('x' || substr(md5(coalesce(current_schema(), '') || ':' || $1), 1, 16))::bit(64)::bigint"

// TryExclusive runs fn unless a caller of this database (in this process
// or another) is running fn under the same name: then it returns false at
// once without running it. fn's error is returned as is.
//
// On PostgreSQL the lock is a session-level advisory lock, held on a
// connection of its own while fn runs and released when it returns or
// panics; should the process die, PostgreSQL releases it with the session.
// It needs a session per connection: a pooler in transaction mode
// (PgBouncer's pool_mode=transaction) breaks it. On SQLite, which one
// process uses, the lock is the Store's own.
func (s *HousekeepingStore) TryExclusive(ctx context.Context, name string, fn func(ctx context.Context) error) (bool, error) {
	if s.dialect != "postgres" {
		mu := s.localLock(name)
		if !mu.TryLock() {
			return false, nil
		}
		defer mu.Unlock()
		return true, fn(ctx)
	}
	conn, err := s.tryAdvisoryLock(ctx, name)
	if conn == nil || err != nil {
		return false, err
	}
	defer advisoryUnlock(conn, name)
	return true, fn(ctx)
}

// tryAdvisoryLock takes name's advisory lock on a connection of the pool,
// which it returns; nil when another session holds the lock.
func (s *HousekeepingStore) tryAdvisoryLock(ctx context.Context, name string) (*sql.Conn, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	ctx, cancel := statementContext(ctx)
	defer cancel()
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var locked bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock("+advisoryKey+")", name).Scan(&locked); err != nil {
		discard(conn) // it may have taken the lock before failing
		return nil, err
	}
	if !locked {
		_ = conn.Close()
		return nil, nil
	}
	return conn, nil
}

// advisoryUnlock releases name's advisory lock and hands conn back to the
// pool; a connection that may still hold the lock is closed instead.
func advisoryUnlock(conn *sql.Conn, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), BackgroundStatementTimeout)
	defer cancel()
	var unlocked bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_advisory_unlock("+advisoryKey+")", name).Scan(&unlocked); err != nil || !unlocked {
		discard(conn)
		return
	}
	_ = conn.Close()
}

// discard closes conn rather than handing it back to the pool, ending its
// session.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

// localLock is the lock TryExclusive takes on SQLite.
func (s *HousekeepingStore) localLock(name string) *sync.Mutex {
	mu, _ := s.exclusive.LoadOrStore(name, &sync.Mutex{})
	return mu.(*sync.Mutex)
}

// ClaimRound takes the round of the periodic work name that starts at now,
// unless a round was taken less than every before: then claimed is false
// and last is when that round started. One caller wins a round however
// many processes ask at once, and a process that dies in its round costs
// that round only. Rounds are timed by the callers' clocks.
func (s *HousekeepingStore) ClaimRound(ctx context.Context, name string, every time.Duration, now time.Time) (claimed bool, last time.Time, err error) {
	now = now.UTC().Truncate(time.Microsecond)
	err = s.writeStatement(ctx, func(tx *gorm.DB) error {
		var taken []string
		if err := tx.Raw("INSERT INTO housekeeping_rounds (name, started_at) VALUES (?, ?)"+
			" ON CONFLICT (name) DO UPDATE SET started_at = excluded.started_at"+
			" WHERE housekeeping_rounds.started_at <= ? RETURNING name",
			name, now, now.Add(-every)).Scan(&taken).Error; err != nil {
			return err
		}
		claimed = len(taken) == 1
		return nil
	})
	if err != nil {
		return false, time.Time{}, err
	}
	if claimed {
		return true, now, nil
	}
	var round housekeepingRound
	err = s.db.WithContext(ctx).Where("name = ?", name).Take(&round).Error
	return false, round.StartedAt.UTC(), err
}

// housekeepingRound is the live model of housekeeping_rounds.
type housekeepingRound struct {
	Name      string `gorm:"primaryKey"`
	StartedAt time.Time
}

func (housekeepingRound) TableName() string { return "housekeeping_rounds" }
