package store

import (
	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// batchRefusalV1 is an item of a file batch that was refused (docs/api.md,
// Batches).
type batchRefusalV1 struct {
	BatchID  string `gorm:"primaryKey;size:36"`
	Item     int    `gorm:"primaryKey;autoIncrement:false"`
	Line     int    `gorm:"not null"`
	CustomID string `gorm:"type:text;not null;default:''"`
	Status   int    `gorm:"not null"`
	Code     string `gorm:"size:64;not null"`
	Message  string `gorm:"type:text;not null"`
}

func (batchRefusalV1) TableName() string { return "batch_refusals" }

// migrationBatchFiles lets a batch read its items from a JSONL file by
// URL: the file, the state of its reading and the refused items.
var migrationBatchFiles = &gormigrate.Migration{
	ID: "202612010803_batch_files",
	Migrate: func(tx *gorm.DB) error {
		if err := tx.Migrator().CreateTable(&batchRefusalV1{}); err != nil {
			return err
		}
		return execAll(tx,
			"ALTER TABLE batches ADD COLUMN state VARCHAR(16) NOT NULL DEFAULT ''",
			"ALTER TABLE batches ADD COLUMN idempotency_key TEXT NOT NULL DEFAULT ''",
			"ALTER TABLE batches ADD COLUMN input_file_url TEXT NOT NULL DEFAULT ''",
			"ALTER TABLE batches ADD COLUMN atomic BOOLEAN NOT NULL DEFAULT FALSE",
			"ALTER TABLE batches ADD COLUMN writable TEXT NOT NULL DEFAULT ''",
			"ALTER TABLE batches ADD COLUMN items_read INTEGER NOT NULL DEFAULT 0",
			"ALTER TABLE batches ADD COLUMN refused_count INTEGER NOT NULL DEFAULT 0",
			"ALTER TABLE batches ADD COLUMN error_code VARCHAR(64) NOT NULL DEFAULT ''",
			"ALTER TABLE batches ADD COLUMN error_message TEXT NOT NULL DEFAULT ''",
		)
	},
	Rollback: func(tx *gorm.DB) error {
		for _, col := range []string{"error_message", "error_code", "refused_count", "items_read", "writable", "atomic", "input_file_url", "idempotency_key", "state"} {
			if err := tx.Exec("ALTER TABLE batches DROP COLUMN " + col).Error; err != nil {
				return err
			}
		}
		return tx.Migrator().DropTable(&batchRefusalV1{})
	},
}
