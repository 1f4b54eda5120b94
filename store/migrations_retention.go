package store

import (
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// jobResultExpiryV1 is the column that marks a job whose result expired.
type jobResultExpiryV1 struct {
	ResultExpiredAt *time.Time
}

func (jobResultExpiryV1) TableName() string { return "jobs" }

// migrationJobRetention adds jobs.result_expired_at, when the retention
// sweep erased the job's result (docs/api.md, Retention), and the indexes
// the sweep finds a tenant's expired results and jobs by: partial, so that
// unfinished jobs, and results already erased, cost them nothing.
var migrationJobRetention = &gormigrate.Migration{
	ID: "202611300001_job_retention",
	Migrate: func(tx *gorm.DB) error {
		if err := tx.Migrator().AddColumn(&jobResultExpiryV1{}, "ResultExpiredAt"); err != nil {
			return err
		}
		return execAll(tx,
			"CREATE INDEX idx_jobs_tenant_completed ON jobs (tenant, completed_at) WHERE completed_at IS NOT NULL",
			"CREATE INDEX idx_jobs_tenant_results_kept ON jobs (tenant, completed_at) WHERE completed_at IS NOT NULL AND result_expired_at IS NULL",
		)
	},
	Rollback: func(tx *gorm.DB) error {
		if err := execAll(tx, "DROP INDEX idx_jobs_tenant_results_kept", "DROP INDEX idx_jobs_tenant_completed"); err != nil {
			return err
		}
		return tx.Migrator().DropColumn(&jobResultExpiryV1{}, "ResultExpiredAt")
	},
}
