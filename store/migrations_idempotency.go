package store

import (
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// idempotencyKeyV2 scopes a key to its service and records the
// fingerprint of the request that claimed it.
type idempotencyKeyV2 struct {
	Tenant      string `gorm:"primaryKey;size:128"`
	Service     string `gorm:"primaryKey;size:32;default:''"`
	Key         string `gorm:"primaryKey;size:255"`
	Fingerprint string `gorm:"size:64;not null;default:''"`
	JobID       string `gorm:"size:36;not null"`
	CreatedAt   time.Time
}

func (idempotencyKeyV2) TableName() string { return "idempotency_keys" }

// migrationIdempotencyKeyScope makes idempotency keys per (tenant, service,
// key) instead of per (tenant, key), so that a key reused on another
// resource never answers with the first resource's job, and adds the
// request fingerprint (see docs/api.md, "Cancel and idempotency"). An
// existing key takes the service of the job it names; one whose job was
// never recorded gets an empty service and so matches no request any more
// (nothing was accepted under it). Existing keys have an empty
// fingerprint, which matches any request, so retries in flight during the
// upgrade still find their job.
//
// PostgreSQL changes the table in place; SQLite cannot change a primary
// key, so it copies the table.
var migrationIdempotencyKeyScope = &gormigrate.Migration{
	ID: "202611230001_idempotency_key_scope",
	Migrate: func(tx *gorm.DB) error {
		if tx.Dialector.Name() == "postgres" {
			return execAll(tx,
				"ALTER TABLE idempotency_keys ADD COLUMN service varchar(32) NOT NULL DEFAULT '', ADD COLUMN fingerprint varchar(64) NOT NULL DEFAULT ''",
				"UPDATE idempotency_keys SET service = jobs.service FROM jobs WHERE jobs.id = idempotency_keys.job_id",
				// service keeps its default '', so the previous release, still
				// running during a rolling deploy, can insert keys without it.
				"ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey, ADD PRIMARY KEY (tenant, service, key)",
			)
		}
		if err := tx.Table("idempotency_keys_new").Migrator().CreateTable(&idempotencyKeyV2{}); err != nil {
			return err
		}
		return execAll(tx,
			`INSERT INTO idempotency_keys_new (tenant, service, key, fingerprint, job_id, created_at)
				SELECT k.tenant, COALESCE(j.service, ''), k.key, '', k.job_id, k.created_at
				FROM idempotency_keys k LEFT JOIN jobs j ON j.id = k.job_id`,
			"DROP TABLE idempotency_keys",
			"ALTER TABLE idempotency_keys_new RENAME TO idempotency_keys",
		)
	},
	// Rollback keeps the newest key of each (tenant, key).
	Rollback: func(tx *gorm.DB) error {
		err := tx.Exec(`DELETE FROM idempotency_keys WHERE EXISTS (SELECT 1 FROM idempotency_keys newer
			WHERE newer.tenant = idempotency_keys.tenant AND newer.key = idempotency_keys.key
			AND (newer.created_at > idempotency_keys.created_at
				OR newer.created_at = idempotency_keys.created_at AND newer.service > idempotency_keys.service))`).Error
		if err != nil {
			return err
		}
		if tx.Dialector.Name() == "postgres" {
			return execAll(tx,
				"ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey, DROP COLUMN service, DROP COLUMN fingerprint, ADD PRIMARY KEY (tenant, key)")
		}
		if err := tx.Table("idempotency_keys_old").Migrator().CreateTable(&idempotencyKeyV1{}); err != nil {
			return err
		}
		return execAll(tx,
			"INSERT INTO idempotency_keys_old (tenant, key, job_id, created_at) SELECT tenant, key, job_id, created_at FROM idempotency_keys",
			"DROP TABLE idempotency_keys",
			"ALTER TABLE idempotency_keys_old RENAME TO idempotency_keys",
		)
	},
}

// migrationIdempotencyKeyExpiry indexes keys by age, for the sweep that
// deletes them once they no longer stand for their job
// (DeleteIdempotencyKeysBefore).
var migrationIdempotencyKeyExpiry = &gormigrate.Migration{
	ID: "202611280001_idempotency_key_expiry",
	Migrate: func(tx *gorm.DB) error {
		return tx.Exec("CREATE INDEX idx_idempotency_keys_created ON idempotency_keys (created_at)").Error
	},
	Rollback: func(tx *gorm.DB) error {
		return tx.Exec("DROP INDEX idx_idempotency_keys_created").Error
	},
}
