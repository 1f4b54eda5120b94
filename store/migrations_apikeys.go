package store

import (
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// apiKeyV1 is a key the gateway issued (docs/api.md, API keys): never its
// secret, only the secret's SHA-256.
type apiKeyV1 struct {
	ID                 string  `gorm:"primaryKey;size:16"`
	Tenant             string  `gorm:"size:63;not null"`
	Name               string  `gorm:"size:200;not null"`
	Scopes             string  `gorm:"not null"` // a JSON array
	Application        *string `gorm:"size:63"`
	SecretHash         []byte  `gorm:"not null"`
	PreviousSecretHash []byte
	PreviousExpiresAt  *time.Time
	CreatedBy          string    `gorm:"size:300;not null"`
	CreatedAt          time.Time `gorm:"not null"`
	ExpiresAt          *time.Time
	RevokedAt          *time.Time
	LastUsedAt         *time.Time
}

func (apiKeyV1) TableName() string { return "api_keys" }

// migrationAPIKeys adds the keys the gateway issues, listed per tenant
// newest first.
var migrationAPIKeys = tableMigration("202612071002_api_keys", []any{&apiKeyV1{}},
	"CREATE INDEX idx_api_keys_tenant_created ON api_keys (tenant, created_at DESC, id DESC)")

// migrationUsageAPIKey records, with each ledger entry, the API key that
// created its job ("" for a token's), for usage grouped by key.
var migrationUsageAPIKey = columnMigration("202612071003_usage_api_key", "usage_ledger", "api_key", "VARCHAR(16) NOT NULL DEFAULT ''")

// migrationAPIKeyLimits adds an API key's limits (store.KeyLimits, JSON).
var migrationAPIKeyLimits = columnMigration("202612071004_api_key_limits", "api_keys", "limits", "TEXT NOT NULL DEFAULT '{}'")

// migrationInFlightLimits adds a tenant's max_in_flight, and an index of
// the jobs not yet finished by caller, which an API key's max_in_flight
// counts (docs/api.md, API keys). Partial: it holds only the jobs in
// flight, so it stays small however many jobs a key has run.
var migrationInFlightLimits = &gormigrate.Migration{
	ID: "202612071005_in_flight_limits",
	Migrate: func(tx *gorm.DB) error {
		return execAll(tx, "ALTER TABLE tenants ADD COLUMN max_in_flight INTEGER",
			"CREATE INDEX idx_jobs_user_in_flight ON jobs (user_id, tenant) WHERE status IN ('pending', 'processing')")
	},
	Rollback: func(tx *gorm.DB) error {
		return execAll(tx, "DROP INDEX idx_jobs_user_in_flight", "ALTER TABLE tenants DROP COLUMN max_in_flight")
	},
}

// auditEventV1 is one administrative write (store.AuditEvent).
type auditEventV1 struct {
	ID        string    `gorm:"primaryKey;size:36"`
	At        time.Time `gorm:"not null"`
	Tenant    string    `gorm:"size:63;not null"`
	Actor     string    `gorm:"size:300;not null"`
	Action    string    `gorm:"size:64;not null"`
	Target    string    `gorm:"size:300;not null"`
	Changes   string    `gorm:"not null"` // JSON {member: {before, after}}
	RequestID string    `gorm:"size:128;not null"`
}

func (auditEventV1) TableName() string { return "audit_events" }

// migrationAuditEvents adds the audit log, read per tenant (or across
// tenants) newest first, and removed by the tenant's retention by time.
var migrationAuditEvents = tableMigration("202612071006_audit_events", []any{&auditEventV1{}},
	"CREATE INDEX idx_audit_events_tenant ON audit_events (tenant, id)",
	"CREATE INDEX idx_audit_events_at ON audit_events (at)")
