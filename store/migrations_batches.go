package store

import (
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// batchV1 is a batch of jobs created by one request (docs/api.md,
// Batches).
type batchV1 struct {
	ID                   string    `gorm:"primaryKey;size:36"`
	Tenant               string    `gorm:"size:128;not null"`
	UserID               string    `gorm:"type:text;not null;default:''"`
	Application          string    `gorm:"size:63;not null;default:''"`
	Fingerprint          string    `gorm:"size:64;not null"`
	Services             string    `gorm:"type:text;not null;default:''"`
	Total                int       `gorm:"not null"`
	Refused              string    `gorm:"type:text;not null;default:''"`
	Webhook              string    `gorm:"type:text;not null;default:''"`
	CreatedAt            time.Time `gorm:"not null"`
	CancelRequestedAt    *time.Time
	CompletedAt          *time.Time
	WebhookState         string `gorm:"size:16;not null;default:''"`
	WebhookAttempts      int    `gorm:"not null;default:0"`
	WebhookNextAttemptAt *time.Time
	WebhookError         string    `gorm:"type:text;not null;default:''"`
	UpdatedAt            time.Time `gorm:"not null"`
}

func (batchV1) TableName() string { return "batches" }

// migrationBatches adds batches and gives jobs their batch and custom_id.
// One index on jobs serves a batch's counts by status, the sweep that
// finds finished batches, its results and its listing.
var migrationBatches = &gormigrate.Migration{
	ID: "202612010701_batches",
	Migrate: func(tx *gorm.DB) error {
		if err := tx.Migrator().CreateTable(&batchV1{}); err != nil {
			return err
		}
		return execAll(tx,
			"CREATE INDEX idx_batches_open ON batches (created_at) WHERE completed_at IS NULL",
			"CREATE INDEX idx_batches_webhook ON batches (webhook_next_attempt_at) WHERE webhook_state = 'pending'",
			"ALTER TABLE jobs ADD COLUMN batch_id VARCHAR(36) NOT NULL DEFAULT ''",
			"ALTER TABLE jobs ADD COLUMN custom_id VARCHAR(64) NOT NULL DEFAULT ''",
			"CREATE INDEX idx_jobs_batch ON jobs (batch_id, status, id) WHERE batch_id <> ''",
		)
	},
	Rollback: func(tx *gorm.DB) error {
		if err := execAll(tx, "DROP INDEX idx_jobs_batch",
			"ALTER TABLE jobs DROP COLUMN custom_id", "ALTER TABLE jobs DROP COLUMN batch_id"); err != nil {
			return err
		}
		return tx.Migrator().DropTable(&batchV1{})
	},
}
