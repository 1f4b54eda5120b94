package store

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// ConsoleSession is a person's session in the console (docs/console.md,
// Sessions). ID is the hex SHA-256 of the token the cookie holds;
// Credential is the API key's secret the console sealed (the store never
// sees it in clear).
type ConsoleSession struct {
	ID         string `gorm:"primaryKey"`
	Tenant     string
	Credential []byte
	CSRFToken  string
	CreatedAt  time.Time
	ExpiresAt  time.Time
}

func (ConsoleSession) TableName() string { return "console_sessions" }

// CreateConsoleSession records a new session.
func (s *APIKeyStore) CreateConsoleSession(ctx context.Context, cs *ConsoleSession) error {
	cs.CreatedAt, cs.ExpiresAt = cs.CreatedAt.UTC(), cs.ExpiresAt.UTC()
	return s.writeStatement(ctx, func(tx *gorm.DB) error { return tx.Create(cs).Error })
}

// ConsoleSession reads the session whose token hashes to id unless it
// expired at now; ErrNotFound otherwise.
func (s *APIKeyStore) ConsoleSession(ctx context.Context, id string, now time.Time) (*ConsoleSession, error) {
	return take[ConsoleSession](s.db.WithContext(ctx).Where("id = ? AND expires_at > ?", id, now.UTC()))
}

// DeleteConsoleSession ends session id; ending one already gone is no
// error.
func (s *APIKeyStore) DeleteConsoleSession(ctx context.Context, id string) error {
	return s.writeStatement(ctx, func(tx *gorm.DB) error {
		return tx.Where("id = ?", id).Delete(&ConsoleSession{}).Error
	})
}

// DeleteExpiredConsoleSessions deletes the sessions expired at now (the
// housekeeping's console_sessions sweep) and returns how many.
func (s *APIKeyStore) DeleteExpiredConsoleSessions(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.writeStatement(ctx, func(tx *gorm.DB) error {
		res := tx.Where("expires_at <= ?", now.UTC()).Delete(&ConsoleSession{})
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}
