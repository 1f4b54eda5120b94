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
	// A migration may take as long as it needs: it runs once, at deploy.
	m := gormigrate.New(s.db.WithContext(withoutDeadline(ctx)), &gormigrate.Options{
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

// Tables of routing policies, tenants, operational statuses and the shared
// routing state (rate-limit counters, round-robin cursors, observed
// latencies) that every worker reads and writes.
type policyV1 struct {
	ID              string  `gorm:"primaryKey;size:36"`
	Tenant          *string `gorm:"size:128"` // NULL: gateway-wide
	Name            string  `gorm:"size:255;not null"`
	Description     string  `gorm:"type:text;not null;default:''"`
	Version         int     `gorm:"not null"`
	RoutingStrategy string  `gorm:"size:32;not null"`
	Services        string  `gorm:"type:text;not null;default:'[]'"` // JSON array; [] is every service
	Application     *string `gorm:"size:63"`
	Providers       string  `gorm:"type:text;not null;default:'[]'"` // JSON array of policy entries
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

func (policyV1) TableName() string { return "policies" }

type policyVersionV1 struct {
	PolicyID  string `gorm:"primaryKey;size:36"`
	Version   int    `gorm:"primaryKey"`
	Document  string `gorm:"type:text;not null"` // the whole policy at that version, JSON
	CreatedAt time.Time
}

func (policyVersionV1) TableName() string { return "policy_versions" }

type tenantV1 struct {
	ID              string  `gorm:"primaryKey;size:128"`
	DefaultPolicyID *string `gorm:"size:36"`
	Services        string  `gorm:"type:text;not null;default:'{}'"` // JSON {service: {enabled}}
	Providers       string  `gorm:"type:text;not null;default:'{}'"` // JSON {provider: {enabled}}
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

func (tenantV1) TableName() string { return "tenants" }

type serviceStatusV1 struct {
	ServiceID string `gorm:"primaryKey;size:32"`
	Status    string `gorm:"size:16;not null"`
	UpdatedAt time.Time
}

func (serviceStatusV1) TableName() string { return "service_statuses" }

type providerStatusV1 struct {
	ProviderID string `gorm:"primaryKey;size:128"`
	Status     string `gorm:"size:16;not null;default:''"`     // '' keeps the catalog's
	Services   string `gorm:"type:text;not null;default:'{}'"` // JSON {service: status}
	UpdatedAt  time.Time
}

func (providerStatusV1) TableName() string { return "provider_statuses" }

type rateCounterV1 struct {
	ProviderID string `gorm:"primaryKey;size:128"`
	Service    string `gorm:"primaryKey;size:32"`
	TimeWindow string `gorm:"primaryKey;size:32"` // e.g. m:202611211205 or d:20261121
	Count      int    `gorm:"not null;default:0"`
	ExpiresAt  time.Time
}

func (rateCounterV1) TableName() string { return "rate_counters" }

type routingCursorV1 struct {
	Key     string `gorm:"primaryKey;size:128"`
	Counter int64  `gorm:"not null;default:0"`
}

func (routingCursorV1) TableName() string { return "routing_cursors" }

type providerLatencyV1 struct {
	ProviderID string  `gorm:"primaryKey;size:128"`
	Service    string  `gorm:"primaryKey;size:32"`
	EWMAMillis float64 `gorm:"not null"`
	Samples    int     `gorm:"not null"`
	UpdatedAt  time.Time
}

func (providerLatencyV1) TableName() string { return "provider_latencies" }

// migrations are applied in this order. Each one after the first two is
// defined, with the frozen models it creates, in a migrations_*.go file.
var migrations = []*gormigrate.Migration{
	{
		ID: "202611210001_jobs",
		Migrate: func(tx *gorm.DB) error {
			if err := tx.Migrator().CreateTable(&jobV1{}); err != nil {
				return err
			}
			if err := execAll(tx,
				// Newest-first listings, per tenant and overall.
				"CREATE INDEX idx_jobs_tenant_created ON jobs (tenant, created_at DESC, id DESC)",
				"CREATE INDEX idx_jobs_created ON jobs (created_at DESC, id DESC)",
			); err != nil {
				return err
			}
			return tx.Migrator().CreateTable(&idempotencyKeyV1{})
		},
		Rollback: func(tx *gorm.DB) error {
			return tx.Migrator().DropTable(&idempotencyKeyV1{}, &jobV1{})
		},
	},
	{
		ID: "202611210002_routing_and_administration",
		Migrate: func(tx *gorm.DB) error {
			if err := tx.Migrator().CreateTable(&policyV1{}, &policyVersionV1{}, &tenantV1{}, &serviceStatusV1{},
				&providerStatusV1{}, &rateCounterV1{}, &routingCursorV1{}, &providerLatencyV1{}); err != nil {
				return err
			}
			return execAll(tx,
				// Routing resolves policies by scope, newest first.
				"CREATE INDEX idx_policies_scope ON policies (tenant, application, updated_at DESC)",
				"CREATE INDEX idx_rate_counters_expiry ON rate_counters (expires_at)",
			)
		},
		Rollback: func(tx *gorm.DB) error {
			return tx.Migrator().DropTable(&policyV1{}, &policyVersionV1{}, &tenantV1{}, &serviceStatusV1{},
				&providerStatusV1{}, &rateCounterV1{}, &routingCursorV1{}, &providerLatencyV1{})
		},
	},
	migrationJobListIndexes,
	migrationWebhooks,
	migrationJobCounts,
	migrationJobStarts,
	migrationSQLiteJobIndexes,
	migrationIdempotencyKeyScope,
	migrationRoutingDecisions,
	migrationResultFiles,
	migrationTraceID,
	migrationProviderCallbacks,
	migrationHousekeepingRounds,
	migrationIdempotencyKeyExpiry,
	migrationPayloadSecrets,
	migrationTenantRetention,
	migrationJobTombstones,
	migrationJobRetention,
	migrationJobUsage,
	migrationTenantFairness,
	migrationProviderBreakers,
	migrationBudgets,
	migrationBudgetNotifications,
	migrationJobWaiting,
	migrationJobStartTenant,
	migrationJobEvents,
	migrationBatches,
	migrationWebhookMessages,
	migrationWebhookDeliveryTrigger,
	migrationBatchFiles,
	migrationJobStartTurns,
	migrationJobCountShards,
	migrationJobStartsCleared,
	migrationPayloadKeyChecks,
	migrationReconciledJobs,
	migrationDropJobStartsCleared,
	migrationWebhookDeliverySubjects,
	migrationAPIKeys,
	migrationUsageAPIKey,
	migrationAPIKeyLimits,
	migrationInFlightLimits,
	migrationAuditEvents,
	migrationJobDeltas,
	migrationOpenAIObjects,
	migrationConsoleSessions,
	migrationJobFilterIndexes,
}

// tableMigration creates the tables of models, then runs stmts (their
// indexes); its rollback drops the tables.
func tableMigration(id string, models []any, stmts ...string) *gormigrate.Migration {
	return &gormigrate.Migration{
		ID: id,
		Migrate: func(tx *gorm.DB) error {
			if err := tx.Migrator().CreateTable(models...); err != nil {
				return err
			}
			return execAll(tx, stmts...)
		},
		Rollback: func(tx *gorm.DB) error {
			return tx.Migrator().DropTable(models...)
		},
	}
}

// columnMigration adds column, of the SQL type and constraints definition,
// to table; its rollback drops the column.
func columnMigration(id, table, column, definition string) *gormigrate.Migration {
	return &gormigrate.Migration{
		ID: id,
		Migrate: func(tx *gorm.DB) error {
			return tx.Exec("ALTER TABLE " + table + " ADD COLUMN " + column + " " + definition).Error
		},
		Rollback: func(tx *gorm.DB) error {
			return tx.Exec("ALTER TABLE " + table + " DROP COLUMN " + column).Error
		},
	}
}

// execAll runs statements in order, stopping at the first error.
func execAll(tx *gorm.DB, stmts ...string) error {
	for _, stmt := range stmts {
		if err := tx.Exec(stmt).Error; err != nil {
			return err
		}
	}
	return nil
}
