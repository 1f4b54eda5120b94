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
var migrationJobStarts = &gormigrate.Migration{
	ID: "202611210006_job_starts",
	Migrate: func(tx *gorm.DB) error {
		if err := tx.Migrator().CreateTable(&jobStartV1{}); err != nil {
			return err
		}
		return tx.Exec("CREATE INDEX idx_job_starts_order ON job_starts (priority, created_at)").Error
	},
	Rollback: func(tx *gorm.DB) error {
		return tx.Migrator().DropTable(&jobStartV1{})
	},
}
