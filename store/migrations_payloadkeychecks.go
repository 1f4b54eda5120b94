package store

import "time"

// payloadKeyCheckV1 is the check value of one payload key id, recorded
// when a process first used the id (docs/operations.md, Payload
// encryption); never the key itself.
type payloadKeyCheckV1 struct {
	KeyID      string    `gorm:"primaryKey;size:64"`
	CheckValue []byte    `gorm:"not null"`
	CreatedAt  time.Time `gorm:"not null"`
}

func (payloadKeyCheckV1) TableName() string { return "payload_key_checks" }

// migrationPayloadKeyChecks adds the payload keys' check values.
var migrationPayloadKeyChecks = tableMigration("202612031001_payload_key_checks", []any{&payloadKeyCheckV1{}})
