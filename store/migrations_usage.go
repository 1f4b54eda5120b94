package store

import (
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// usageEntryV1 is one billed job attempt (docs/api.md, Usage and cost).
type usageEntryV1 struct {
	JobID        string    `gorm:"primaryKey;size:36"`
	Attempt      int       `gorm:"primaryKey;autoIncrement:false"`
	Tenant       string    `gorm:"size:128;not null"`
	Application  string    `gorm:"size:63;not null;default:''"`
	Service      string    `gorm:"size:64;not null"`
	Provider     string    `gorm:"size:128;not null;default:''"`
	Unit         string    `gorm:"size:16;not null"`
	Quantity     float64   `gorm:"not null"`
	Native       string    `gorm:"type:text;not null;default:'{}'"`
	CostNanos    int64     `gorm:"not null"`
	Currency     string    `gorm:"size:3;not null"`
	PriceVersion string    `gorm:"size:128;not null;default:''"`
	Estimated    bool      `gorm:"not null;default:false"`
	BilledAt     time.Time `gorm:"not null"`
}

func (usageEntryV1) TableName() string { return "usage_ledger" }

// migrationJobUsage adds a finished job's usage to its row, and the usage
// ledger, indexed for sums per tenant (and application) over a period.
var migrationJobUsage = &gormigrate.Migration{
	ID: "202611300101_job_usage",
	Migrate: func(tx *gorm.DB) error {
		if err := tx.Exec("ALTER TABLE jobs ADD COLUMN usage TEXT NOT NULL DEFAULT ''").Error; err != nil {
			return err
		}
		if err := tx.Migrator().CreateTable(&usageEntryV1{}); err != nil {
			return err
		}
		return execAll(tx,
			"CREATE INDEX idx_usage_ledger_tenant_billed ON usage_ledger (tenant, billed_at)",
			"CREATE INDEX idx_usage_ledger_tenant_app_billed ON usage_ledger (tenant, application, billed_at)")
	},
	Rollback: func(tx *gorm.DB) error {
		if err := tx.Migrator().DropTable(&usageEntryV1{}); err != nil {
			return err
		}
		return tx.Exec("ALTER TABLE jobs DROP COLUMN usage").Error
	},
}

// migrationJobWaiting adds why a job waits out an outage (docs/providers.md,
// Waiting out an outage).
var migrationJobWaiting = columnMigration("202612010301_job_waiting", "jobs", "waiting", "TEXT NOT NULL DEFAULT ''")
