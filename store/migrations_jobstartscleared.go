package store

import (
	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// migrationJobStartsCleared adds job_starts_cleared, a sequence from which
// the deletes of starts made draw one value a start (DeleteJobStarts), so
// that serve reads at once how many starts every process has made
// (JobStartsCleared; docs/operations.md, Durability). A sequence stands
// outside transactions: every connection sees a draw as soon as it is
// made, and a delete rolled back keeps its draws. SQLite has none: a serve
// on SQLite hands no starts off.
var migrationJobStartsCleared = &gormigrate.Migration{
	ID: "202612021001_job_starts_cleared",
	Migrate: func(tx *gorm.DB) error {
		if tx.Dialector.Name() != "postgres" {
			return nil
		}
		return tx.Exec("CREATE SEQUENCE job_starts_cleared").Error
	},
	Rollback: func(tx *gorm.DB) error {
		if tx.Dialector.Name() != "postgres" {
			return nil
		}
		return tx.Exec("DROP SEQUENCE job_starts_cleared").Error
	},
}

// migrationDropJobStartsCleared drops that sequence: starts are no longer
// paced by how fast the outbox empties (docs/operations.md, Where jobs
// are started). A serve of the version before tolerates its absence (it
// clears starts uncounted and paces nothing).
var migrationDropJobStartsCleared = &gormigrate.Migration{
	ID: "202612061002_drop_job_starts_cleared",
	Migrate: func(tx *gorm.DB) error {
		if tx.Dialector.Name() != "postgres" {
			return nil
		}
		return tx.Exec("DROP SEQUENCE IF EXISTS job_starts_cleared").Error
	},
	Rollback: func(tx *gorm.DB) error {
		if tx.Dialector.Name() != "postgres" {
			return nil
		}
		return tx.Exec("CREATE SEQUENCE IF NOT EXISTS job_starts_cleared").Error
	},
}
