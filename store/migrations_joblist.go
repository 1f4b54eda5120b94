package store

import (
	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// migrationJobListIndexes adds the indexes GET /v1/jobs needs to stay fast
// with millions of jobs.
//
// Every listing is "WHERE <equality filters> ORDER BY created_at DESC, id
// DESC LIMIT n OFFSET m" plus an exact COUNT(*) of the same filters. An
// index whose key is (<the filtered columns>, created_at DESC, id DESC)
// answers both from the index alone: the page is the first n+m entries of
// one range (no sort, and a deep offset skips index entries, not rows), and
// the count is an index-only scan of that range. A filter column the index
// lacks makes the count visit every candidate row in the table instead,
// which at a million jobs is the difference between milliseconds and most
// of a second (see docs/benchmarks-results.md, job listing at one
// million jobs).
//
// Already served by 202611210001: tenant alone (idx_jobs_tenant_created)
// and the unfiltered cross-tenant listing (idx_jobs_created).
//
// Tenant-confined listings, the common case (every regular caller), get
// tenant + each single filter. user_id leads its index rather than tenant:
// a user belongs to one tenant, so (user_id, tenant, …) serves tenant+user
// exactly as well and also serves an administrator's cross-tenant user
// filter, for which a separate (user_id, …) index would otherwise be needed.
//
// Cross-tenant listings (admin:cross-tenant without filter[tenant]) get
// status, service and provider. These columns have a handful of values, so
// the first page without an index is cheap (idx_jobs_created, skipping the
// rows that do not match), but the exact total is a scan of the whole table
// and a deep page reads every skipped row.
//
// Combinations of two or more filters use the index of one of them (the
// planner picks the most selective) and check the others on the rows of
// that range; the range is already small. Covering every combination would
// take dozens of indexes, each one more write on every job state change.
var migrationJobListIndexes = &gormigrate.Migration{
	ID: "202611210003_job_list_indexes",
	Migrate: func(tx *gorm.DB) error {
		for _, stmt := range jobListIndexes {
			if err := tx.Exec("CREATE INDEX " + stmt[0] + " ON jobs " + stmt[1]).Error; err != nil {
				return err
			}
		}
		return nil
	},
	Rollback: func(tx *gorm.DB) error {
		for _, stmt := range jobListIndexes {
			if err := tx.Exec("DROP INDEX " + stmt[0]).Error; err != nil {
				return err
			}
		}
		return nil
	},
}

// jobListIndexes are the index names and key columns of
// migrationJobListIndexes; the same DDL works on PostgreSQL and SQLite.
var jobListIndexes = [][2]string{
	{"idx_jobs_tenant_status_created", "(tenant, status, created_at DESC, id DESC)"},
	{"idx_jobs_tenant_service_created", "(tenant, service, created_at DESC, id DESC)"},
	{"idx_jobs_tenant_provider_created", "(tenant, provider, created_at DESC, id DESC)"},
	{"idx_jobs_user_tenant_created", "(user_id, tenant, created_at DESC, id DESC)"},
	{"idx_jobs_status_created", "(status, created_at DESC, id DESC)"},
	{"idx_jobs_service_created", "(service, created_at DESC, id DESC)"},
	{"idx_jobs_provider_created", "(provider, created_at DESC, id DESC)"},
}
