package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// payloadKeyCheck is a key id's row in payload_key_checks.
type payloadKeyCheck struct {
	KeyID      string `gorm:"primaryKey"`
	CheckValue []byte
	CreatedAt  time.Time
}

func (payloadKeyCheck) TableName() string { return "payload_key_checks" }

// RecordKeyCheck records check as the check value of payload key id
// unless id has one, and returns the one recorded: of two processes
// racing on a new id, both read the first one's (payloadcodec.KeyChecks).
func (s *KeyStore) RecordKeyCheck(ctx context.Context, id string, check []byte) ([]byte, error) {
	db := s.db.WithContext(ctx)
	err := db.Clauses(clause.OnConflict{DoNothing: true}).
		Create(&payloadKeyCheck{KeyID: id, CheckValue: check, CreatedAt: time.Now().UTC()}).Error
	if err != nil {
		return nil, keyChecksError(err)
	}
	var row payloadKeyCheck
	if err := db.Where("key_id = ?", id).Take(&row).Error; err != nil {
		return nil, keyChecksError(err)
	}
	return row.CheckValue, nil
}

// RecordedKeyCheck is the check value recorded under payload key id, nil
// when none is (payloadcodec.RecordedKeyChecks).
func (s *KeyStore) RecordedKeyCheck(ctx context.Context, id string) ([]byte, error) {
	var row payloadKeyCheck
	err := s.db.WithContext(ctx).Where("key_id = ?", id).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, nil
	case err != nil:
		return nil, keyChecksError(err)
	}
	return row.CheckValue, nil
}

// ErrNotMigrated: the database lacks a table this binary needs; it was
// last migrated by an older version.
var ErrNotMigrated = errors.New("the database schema is older than this binary")

// undefinedTable is PostgreSQL's error code of a relation that does not
// exist.
const undefinedTable = "42P01"

// keyChecksError classifies err: a database without payload_key_checks
// is ErrNotMigrated.
func keyChecksError(err error) error {
	var pgErr *pgconn.PgError
	if (errors.As(err, &pgErr) && pgErr.Code == undefinedTable) || strings.Contains(err.Error(), "no such table: payload_key_checks") {
		return fmt.Errorf("%w: it has no payload_key_checks table: %w", ErrNotMigrated, err)
	}
	return err
}
