package store

import (
	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// migrationWebhookDeliverySubjects lets the delivery log hold the attempts
// of batch.completed and budget.threshold events beside those of jobs'
// events (docs/webhooks.md, Delivery log). subject_kind says what an
// attempt's event is of: empty for a job (every row before, and every
// row an older worker writes), else batch or budget. job_id holds that
// subject's id, a tenant's budget as <tenant>/<budget>: on PostgreSQL it
// widens from the 36 characters of a job id to hold one (a widened
// VARCHAR rewrites neither the table nor its index); SQLite does not
// bound it. Both steps are additive: an older worker goes on recording
// jobs' attempts during a rolling upgrade.
var migrationWebhookDeliverySubjects = &gormigrate.Migration{
	ID: "202612071001_webhook_delivery_subjects",
	Migrate: func(tx *gorm.DB) error {
		if err := tx.Exec("ALTER TABLE webhook_deliveries ADD COLUMN subject_kind VARCHAR(16) NOT NULL DEFAULT ''").Error; err != nil {
			return err
		}
		if tx.Dialector.Name() != "postgres" {
			return nil
		}
		return tx.Exec("ALTER TABLE webhook_deliveries ALTER COLUMN job_id TYPE VARCHAR(200)").Error
	},
	Rollback: func(tx *gorm.DB) error {
		if err := tx.Exec("DELETE FROM webhook_deliveries WHERE subject_kind <> ''").Error; err != nil {
			return err
		}
		if tx.Dialector.Name() == "postgres" {
			if err := tx.Exec("ALTER TABLE webhook_deliveries ALTER COLUMN job_id TYPE VARCHAR(36)").Error; err != nil {
				return err
			}
		}
		return tx.Exec("ALTER TABLE webhook_deliveries DROP COLUMN subject_kind").Error
	},
}
