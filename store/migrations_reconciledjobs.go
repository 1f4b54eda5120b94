package store

import (
	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// migrationReconciledJobs indexes the jobs the reconciliation sweep failed
// WORKFLOW_CLOSED by when, so that each round finds the *.failed messages
// it recorded whose send never began (UnsentReconciledWebhooks) without
// reading all jobs. Few jobs are such: the index is small.
var migrationReconciledJobs = &gormigrate.Migration{
	ID: "202612061001_reconciled_jobs",
	Migrate: func(tx *gorm.DB) error {
		return tx.Exec("CREATE INDEX idx_jobs_workflow_closed ON jobs (completed_at) WHERE error_code = 'WORKFLOW_CLOSED'").Error
	},
	Rollback: func(tx *gorm.DB) error {
		return tx.Exec("DROP INDEX idx_jobs_workflow_closed").Error
	},
}
