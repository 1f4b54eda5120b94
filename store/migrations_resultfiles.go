package store

import (
	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// migrationResultFiles adds the blob key of a job's result file, which the
// API links as the result's download_url (docs/media.md).
var migrationResultFiles = &gormigrate.Migration{
	ID: "202611250001_job_result_files",
	Migrate: func(tx *gorm.DB) error {
		return tx.Exec("ALTER TABLE jobs ADD COLUMN result_file TEXT NOT NULL DEFAULT ''").Error
	},
	Rollback: func(tx *gorm.DB) error {
		return tx.Exec("ALTER TABLE jobs DROP COLUMN result_file").Error
	},
}
