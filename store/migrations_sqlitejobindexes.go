package store

import (
	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// migrationSQLiteJobIndexes drops, on SQLite only, the list indexes of
// migrationJobListIndexes that serve one status, service or provider
// filter. Every job write updates every index of jobs: on SQLite, where
// the store has one connection shared by the API and every running job,
// these six made accepting a job and each of its projection writes about
// twice as expensive (BenchmarkSQLiteJobWrites: 835 µs against 402 µs to
// accept a job, 900 against 472 µs to project one). The SQLite store is
// for development and single-machine use; there a filtered listing walks
// the tenant's (or everyone's) jobs newest first, and its total still
// comes from job_counts. PostgreSQL keeps them all: that is where a
// million jobs are listed (docs/benchmarks.md).
var migrationSQLiteJobIndexes = &gormigrate.Migration{
	ID: "202611220001_sqlite_job_indexes",
	Migrate: func(tx *gorm.DB) error {
		if tx.Dialector.Name() != "sqlite" {
			return nil
		}
		for _, index := range sqliteDroppedJobIndexes() {
			if err := tx.Exec("DROP INDEX " + index[0]).Error; err != nil {
				return err
			}
		}
		return nil
	},
	Rollback: func(tx *gorm.DB) error {
		if tx.Dialector.Name() != "sqlite" {
			return nil
		}
		for _, index := range sqliteDroppedJobIndexes() {
			if err := tx.Exec("CREATE INDEX " + index[0] + " ON jobs " + index[1]).Error; err != nil {
				return err
			}
		}
		return nil
	},
}

// sqliteDroppedJobIndexes are the list indexes SQLite does without: all
// but the user's, which also counts a user's jobs.
func sqliteDroppedJobIndexes() [][2]string {
	var dropped [][2]string
	for _, index := range jobListIndexes {
		if index[0] != "idx_jobs_user_tenant_created" {
			dropped = append(dropped, index)
		}
	}
	return dropped
}
