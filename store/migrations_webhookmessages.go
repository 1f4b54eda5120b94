package store

import "time"

// webhookMessageV1 is what one webhook message of a job carried, and
// whether its delivery was given up (docs/webhooks.md, Resending and
// recovering events).
type webhookMessageV1 struct {
	MessageID   string    `gorm:"primaryKey;size:128"`
	JobID       string    `gorm:"size:36;not null"`
	Seq         int       `gorm:"not null"`
	Event       string    `gorm:"size:64;not null"`
	Snapshot    string    `gorm:"type:text;not null;default:''"`
	CreatedAt   time.Time `gorm:"not null"`
	GivenUpAt   *time.Time
	RecoveredAt *time.Time
}

func (webhookMessageV1) TableName() string { return "webhook_messages" }

// migrationWebhookMessages adds the record of jobs' webhook messages, read
// per job in order and, for recovery, by when their delivery was given up.
var migrationWebhookMessages = tableMigration("202612010801_webhook_messages", []any{&webhookMessageV1{}},
	"CREATE INDEX idx_webhook_messages_job ON webhook_messages (job_id, seq)",
	"CREATE INDEX idx_webhook_messages_given_up ON webhook_messages (given_up_at) WHERE given_up_at IS NOT NULL")

// migrationWebhookDeliveryTrigger says, per delivery attempt, what sent
// it: empty for the job's own delivery, else a resend or a recovery.
var migrationWebhookDeliveryTrigger = columnMigration("202612010802_webhook_delivery_trigger",
	"webhook_deliveries", "trigger_kind", "VARCHAR(16) NOT NULL DEFAULT ''")
