package store

import (
	"context"
	"fmt"
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// Migrate applies every schema migration not applied yet. Migrations are
// append-only: never edit one that has shipped, add a new one.
func (s *Store) Migrate(ctx context.Context) error {
	m := gormigrate.New(s.db.WithContext(ctx), &gormigrate.Options{
		TableName:                 "schema_migrations",
		IDColumnName:              "id",
		IDColumnSize:              255,
		UseTransaction:            true,
		ValidateUnknownMigrations: true,
	}, migrations)
	if err := m.Migrate(); err != nil {
		return fmt.Errorf("migrate database: %w", err)
	}
	return nil
}

// The models below freeze each table as its migration created it, so later
// changes to the live models cannot change what an old migration does.
type jobV1 struct {
	ID             string `gorm:"primaryKey;size:36"`
	Service        string `gorm:"size:32;not null"`
	Tenant         string `gorm:"size:128;not null"`
	UserID         string `gorm:"size:255;not null"`
	Provider       string `gorm:"size:128;not null;default:''"`
	Status         string `gorm:"size:16;not null"`
	Progress       int    `gorm:"not null;default:0"`
	PolicyID       string `gorm:"size:36;not null;default:''"`
	Application    string `gorm:"size:63;not null;default:''"`
	Input          string `gorm:"type:text;not null"`
	Options        string `gorm:"type:text;not null"`
	Routing        string `gorm:"type:text;not null;default:''"`
	RoutingHistory string `gorm:"type:text;not null;default:''"`
	Result         string `gorm:"type:text;not null;default:''"`
	ErrorCode      string `gorm:"size:64;not null;default:''"`
	ErrorMessage   string `gorm:"type:text;not null;default:''"`
	ClientMeta     string `gorm:"type:text;not null;default:''"`
	WorkerID       string `gorm:"size:255;not null;default:''"`
	Revision       int    `gorm:"not null;default:0"`
	CreatedAt      time.Time
	ProcessedAt    *time.Time
	CompletedAt    *time.Time
	UpdatedAt      time.Time
}

func (jobV1) TableName() string { return "jobs" }

type idempotencyKeyV1 struct {
	Tenant    string `gorm:"primaryKey;size:128"`
	Key       string `gorm:"primaryKey;size:255"`
	JobID     string `gorm:"size:36;not null"`
	CreatedAt time.Time
}

func (idempotencyKeyV1) TableName() string { return "idempotency_keys" }

var migrations = []*gormigrate.Migration{
	{
		ID: "202611210001_jobs",
		Migrate: func(tx *gorm.DB) error {
			if err := tx.Migrator().CreateTable(&jobV1{}); err != nil {
				return err
			}
			for _, stmt := range []string{
				// Newest-first listings, per tenant and overall.
				"CREATE INDEX idx_jobs_tenant_created ON jobs (tenant, created_at DESC, id DESC)",
				"CREATE INDEX idx_jobs_created ON jobs (created_at DESC, id DESC)",
			} {
				if err := tx.Exec(stmt).Error; err != nil {
					return err
				}
			}
			return tx.Migrator().CreateTable(&idempotencyKeyV1{})
		},
		Rollback: func(tx *gorm.DB) error {
			return tx.Migrator().DropTable(&idempotencyKeyV1{}, &jobV1{})
		},
	},
}
