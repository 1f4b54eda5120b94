package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// jobStartsChannel is the PostgreSQL notification channel of new job
// starts (docs/operations.md, Where jobs are started).
const jobStartsChannel = "ai_job_gateway_job_starts"

// ErrNoNotifications: the store's database cannot notify (SQLite);
// dispatchers then find new starts by sweeping the outbox.
var ErrNoNotifications = errors.New("store: the database has no notifications")

// NotifyJobStarts wakes the dispatchers listening with ListenJobStarts:
// starts recorded due may be waiting in the outbox.
func (s *JobStore) NotifyJobStarts(ctx context.Context) error {
	if s.dialect != "postgres" {
		return ErrNoNotifications
	}
	return s.db.WithContext(ctx).Exec("SELECT pg_notify(?, '')", jobStartsChannel).Error
}

// ListenJobStarts calls wake at each NotifyJobStarts of any process, and
// after a lost connection, until ctx ends; it holds one connection of the pool meanwhile, and takes a new
// one when it loses it. wake must not block. On SQLite it returns
// ErrNoNotifications at once.
func (s *JobStore) ListenJobStarts(ctx context.Context, wake func()) error {
	if s.dialect != "postgres" {
		return ErrNoNotifications
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	for {
		_ = listen(ctx, sqlDB, wake) // returns when the connection is lost
		if ctx.Err() != nil {
			return nil
		}
		// Notifications may have been missed: the waker sweeps, then
		// listening resumes after a pause.
		wake()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

func listen(ctx context.Context, sqlDB *sql.DB, wake func()) error {
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("store: listen needs a pgx connection, not %T", driverConn)
		}
		pg := c.Conn()
		if _, err := pg.Exec(ctx, "LISTEN "+jobStartsChannel); err != nil {
			return err
		}
		// Unlisten before the connection goes back to the pool.
		defer func() { _, _ = pg.Exec(context.WithoutCancel(ctx), "UNLISTEN "+jobStartsChannel) }()
		for {
			if _, err := pg.WaitForNotification(ctx); err != nil {
				return err
			}
			wake()
		}
	})
}
