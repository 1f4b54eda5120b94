package store

import (
	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// migrationTraceID adds the trace id of the request that created a job,
// shown as meta.system.trace_id (docs/operations.md, Traces).
var migrationTraceID = &gormigrate.Migration{
	ID: "202611250002_job_trace_id",
	Migrate: func(tx *gorm.DB) error {
		return tx.Exec("ALTER TABLE jobs ADD COLUMN trace_id TEXT NOT NULL DEFAULT ''").Error
	},
	Rollback: func(tx *gorm.DB) error {
		return tx.Exec("ALTER TABLE jobs DROP COLUMN trace_id").Error
	},
}
