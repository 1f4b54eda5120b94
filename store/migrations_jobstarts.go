package store

import (
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// jobStartV1 is a job's workflow start that has not happened yet.
type jobStartV1 struct {
	JobID         string    `gorm:"primaryKey;size:36"`
	Input         string    `gorm:"type:text;not null"`
	Priority      int       `gorm:"not null"`
	Attempts      int       `gorm:"not null;default:0"`
	NextAttemptAt time.Time `gorm:"not null"`
	CreatedAt     time.Time `gorm:"not null"`
}

func (jobStartV1) TableName() string { return "job_starts" }

// migrationJobStarts adds the outbox of workflow starts. It holds only the
// jobs accepted and not yet started, so it stays small; dispatchers read it
// by priority, then age.
var migrationJobStarts = tableMigration("202611210006_job_starts", []any{&jobStartV1{}},
	"CREATE INDEX idx_job_starts_order ON job_starts (priority, created_at)")

// migrationJobStartTenant gives each start its job's tenant, so that
// claims take tenants in turns (ClaimJobStarts). Starts recorded before
// share the tenant "".
var migrationJobStartTenant = columnMigration("202612010401_job_start_tenant", "job_starts", "tenant", "VARCHAR(128) NOT NULL DEFAULT ''")

// migrationJobStartTurns indexes the outbox in the order claims rank it,
// each tenant's starts by priority and age (ClaimJobStarts).
var migrationJobStartTurns = &gormigrate.Migration{
	ID: "202612010901_job_start_turns",
	Migrate: func(tx *gorm.DB) error {
		return tx.Exec("CREATE INDEX idx_job_starts_turns ON job_starts (tenant, priority, created_at, job_id)").Error
	},
	Rollback: func(tx *gorm.DB) error {
		return tx.Exec("DROP INDEX idx_job_starts_turns").Error
	},
}
