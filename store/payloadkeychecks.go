package store

import (
	"context"
	"time"

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
func (s *Store) RecordKeyCheck(ctx context.Context, id string, check []byte) ([]byte, error) {
	db := s.db.WithContext(ctx)
	err := db.Clauses(clause.OnConflict{DoNothing: true}).
		Create(&payloadKeyCheck{KeyID: id, CheckValue: check, CreatedAt: time.Now().UTC()}).Error
	if err != nil {
		return nil, err
	}
	var row payloadKeyCheck
	if err := db.Where("key_id = ?", id).Take(&row).Error; err != nil {
		return nil, err
	}
	return row.CheckValue, nil
}
