package store

import (
	"time"
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
