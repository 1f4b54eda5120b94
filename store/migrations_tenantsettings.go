package store

import (
	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// migrationTenantRetention adds a tenant's retention settings, in whole
// seconds; NULL takes the deployment default (docs/api.md, Tenants).
var migrationTenantRetention = &gormigrate.Migration{
	ID: "202611280003_tenant_retention",
	Migrate: func(tx *gorm.DB) error {
		return execAll(tx,
			"ALTER TABLE tenants ADD COLUMN retention_results_seconds BIGINT",
			"ALTER TABLE tenants ADD COLUMN retention_jobs_seconds BIGINT",
		)
	},
	Rollback: func(tx *gorm.DB) error {
		return execAll(tx,
			"ALTER TABLE tenants DROP COLUMN retention_results_seconds",
			"ALTER TABLE tenants DROP COLUMN retention_jobs_seconds",
		)
	},
}

// migrationTenantFairness adds a tenant's fairness weight; NULL is the
// default (docs/operations.md, Fairness between tenants).
var migrationTenantFairness = columnMigration("202611300201_tenant_fairness_weight", "tenants", "fairness_weight", "DOUBLE PRECISION")
