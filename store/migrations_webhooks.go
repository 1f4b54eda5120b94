package store

import (
	"time"
)

// webhookDeliveryV1 is one attempt to deliver a webhook event.
type webhookDeliveryV1 struct {
	ID          int64     `gorm:"primaryKey;autoIncrement"`
	JobID       string    `gorm:"size:36;not null"`
	Event       string    `gorm:"size:64;not null"`
	MessageID   string    `gorm:"size:128;not null"`
	Attempt     int       `gorm:"not null"`
	AttemptedAt time.Time `gorm:"not null"`
	StatusCode  int       `gorm:"not null;default:0"` // 0: no answer
	Error       string    `gorm:"type:text;not null;default:''"`
	DurationMS  int64     `gorm:"not null;default:0"`
}

func (webhookDeliveryV1) TableName() string { return "webhook_deliveries" }

// signingKeyV1 is a key the gateway signs with; id names its use.
type signingKeyV1 struct {
	ID        string `gorm:"primaryKey;size:64"`
	Seed      string `gorm:"type:text;not null"` // base64 of the Ed25519 seed
	CreatedAt time.Time
}

func (signingKeyV1) TableName() string { return "signing_keys" }

// migrationWebhooks adds the record of webhook delivery attempts, read per
// job oldest first, and the webhook signing key shared by every process.
var migrationWebhooks = tableMigration("202611210004_webhooks", []any{&webhookDeliveryV1{}, &signingKeyV1{}},
	"CREATE INDEX idx_webhook_deliveries_job ON webhook_deliveries (job_id, attempted_at, id)")
