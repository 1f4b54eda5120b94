package store

import "time"

// payloadSecretV1 is one scope's (tenant's) payload secret (docs/operations.md,
// Payload encryption); a shredded scope keeps its row with no secret.
type payloadSecretV1 struct {
	Scope      string `gorm:"primaryKey;size:128"`
	Secret     []byte
	CreatedAt  time.Time `gorm:"not null"`
	ShreddedAt *time.Time
}

func (payloadSecretV1) TableName() string { return "payload_secrets" }

// migrationPayloadSecrets adds the scopes' payload secrets.
var migrationPayloadSecrets = tableMigration("202611280002_payload_secrets", []any{&payloadSecretV1{}})
