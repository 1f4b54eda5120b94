package store

import (
	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// jobCountV1 is the number of jobs in one (tenant, service, provider,
// status) bucket.
type jobCountV1 struct {
	Tenant   string `gorm:"primaryKey;size:128"`
	Service  string `gorm:"primaryKey;size:32"`
	Provider string `gorm:"primaryKey;size:128"`
	Status   string `gorm:"primaryKey;size:16"`
	N        int64  `gorm:"not null"`
}

func (jobCountV1) TableName() string { return "job_counts" }

// migrationJobCounts adds job_counts, the exact number of jobs per (tenant,
// service, provider, status), so that the total of a listing without
// filter[user_id] is a sum over a few rows of it instead of a COUNT(*) of
// every matching job (see docs/benchmarks-results.md, job listing at one
// million jobs). user_id is not a key: a tenant can have many users, and
// one user's jobs are a narrow range of idx_jobs_user_tenant_created,
// cheap to count.
//
// Triggers on jobs keep it exact in the writing transaction, whatever the
// statement: a job inserted adds one to its bucket, an update that changes
// a counted column moves it between buckets, a job deleted takes one away.
// Upserts fire the triggers of what they did on both databases: InsertJob's
// ON CONFLICT DO NOTHING fires nothing when the job exists, and SaveJob's
// ON CONFLICT DO UPDATE … WHERE revision < excluded.revision fires the
// update trigger when it updates and nothing when the guard skips it
// (store/jobcounts_test.go checks both). UpdateProgress sets no counted
// column, so it fires nothing.
//
// A bucket that falls to zero is deleted in the same trigger, so the table
// holds only buckets with jobs. On PostgreSQL, a move decrements and
// increments its two buckets in one statement in key order, so concurrent
// moves between the same two buckets queue rather than deadlock (a
// transaction moving many jobs, a batch's, takes their buckets in row
// order). Every job write of one bucket (e.g. a tenant's new llm-tasks
// jobs, all pending) also queued on that bucket's row until its
// transaction committed, one commit at a time: migrationJobCountShards
// spreads each bucket over the writers' connections.
//
// The migration creates the triggers before it counts the existing jobs:
// on PostgreSQL CREATE TRIGGER locks jobs against writes until the
// migration commits (on SQLite the migration is the only writer), so no
// write is counted twice or missed.
var migrationJobCounts = &gormigrate.Migration{
	ID: "202611210005_job_counts",
	Migrate: func(tx *gorm.DB) error {
		if err := tx.Migrator().CreateTable(&jobCountV1{}); err != nil {
			return err
		}
		ddl := jobCountsSQLite
		if tx.Dialector.Name() == "postgres" {
			ddl = jobCountsPostgres
		}
		if err := execAll(tx, ddl...); err != nil {
			return err
		}
		return tx.Exec(jobCountsBackfill).Error
	},
	Rollback: func(tx *gorm.DB) error {
		stmts := []string{"DROP TRIGGER job_counts_insert", "DROP TRIGGER job_counts_update", "DROP TRIGGER job_counts_delete"}
		if tx.Dialector.Name() == "postgres" {
			for i := range stmts {
				stmts[i] += " ON jobs"
			}
			stmts = append(stmts, "DROP FUNCTION job_counts_track()")
		}
		if err := execAll(tx, stmts...); err != nil {
			return err
		}
		return tx.Migrator().DropTable(&jobCountV1{})
	},
}

// jobCountsBackfill counts the jobs that exist when the migration runs.
const jobCountsBackfill = `INSERT INTO job_counts (tenant, service, provider, status, n)
	SELECT tenant, service, provider, status, COUNT(*) FROM jobs GROUP BY tenant, service, provider, status`

// jobCountsChanged is the condition of the update trigger: a counted
// column changed, not merely set (SaveJob sets provider and status on
// every write).
const jobCountsChanged = `OLD.tenant IS DISTINCT FROM NEW.tenant OR OLD.service IS DISTINCT FROM NEW.service
	OR OLD.provider IS DISTINCT FROM NEW.provider OR OLD.status IS DISTINCT FROM NEW.status`

// jobCountsPostgres is one trigger function for the three triggers. A move
// is one upsert of both buckets in key order, the lock order of every
// transaction; the old bucket is then dropped if it is empty.
var jobCountsPostgres = []string{
	`CREATE FUNCTION job_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		INSERT INTO job_counts AS c (tenant, service, provider, status, n)
		VALUES (NEW.tenant, NEW.service, NEW.provider, NEW.status, 1)
		ON CONFLICT (tenant, service, provider, status) DO UPDATE SET n = c.n + 1;
		RETURN NULL;
	ELSIF TG_OP = 'UPDATE' THEN
		INSERT INTO job_counts AS c (tenant, service, provider, status, n)
		SELECT * FROM (VALUES (OLD.tenant, OLD.service, OLD.provider, OLD.status, -1::bigint),
			(NEW.tenant, NEW.service, NEW.provider, NEW.status, 1::bigint)) AS d (tenant, service, provider, status, n)
		ORDER BY tenant, service, provider, status
		ON CONFLICT (tenant, service, provider, status) DO UPDATE SET n = c.n + excluded.n;
	ELSE
		UPDATE job_counts SET n = n - 1
		WHERE tenant = OLD.tenant AND service = OLD.service AND provider = OLD.provider AND status = OLD.status;
	END IF;
	DELETE FROM job_counts
	WHERE tenant = OLD.tenant AND service = OLD.service AND provider = OLD.provider AND status = OLD.status AND n = 0;
	RETURN NULL;
END $$`,
	`CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs
	FOR EACH ROW EXECUTE FUNCTION job_counts_track()`,
	`CREATE TRIGGER job_counts_update AFTER UPDATE OF tenant, service, provider, status ON jobs
	FOR EACH ROW WHEN (` + jobCountsChanged + `) EXECUTE FUNCTION job_counts_track()`,
	`CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs
	FOR EACH ROW EXECUTE FUNCTION job_counts_track()`,
}

// jobCountsSQLite are the same triggers in SQLite's dialect; SQLite has one
// writer at a time, so the order of the two buckets does not matter.
var jobCountsSQLite = []string{
	`CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs BEGIN
	INSERT INTO job_counts (tenant, service, provider, status, n)
	VALUES (NEW.tenant, NEW.service, NEW.provider, NEW.status, 1)
	ON CONFLICT (tenant, service, provider, status) DO UPDATE SET n = n + 1;
END`,
	`CREATE TRIGGER job_counts_update AFTER UPDATE OF tenant, service, provider, status ON jobs
	FOR EACH ROW WHEN ` + jobCountsChanged + ` BEGIN
	INSERT INTO job_counts (tenant, service, provider, status, n)
	VALUES (OLD.tenant, OLD.service, OLD.provider, OLD.status, -1)
	ON CONFLICT (tenant, service, provider, status) DO UPDATE SET n = n - 1;
	DELETE FROM job_counts
	WHERE tenant = OLD.tenant AND service = OLD.service AND provider = OLD.provider AND status = OLD.status AND n = 0;
	INSERT INTO job_counts (tenant, service, provider, status, n)
	VALUES (NEW.tenant, NEW.service, NEW.provider, NEW.status, 1)
	ON CONFLICT (tenant, service, provider, status) DO UPDATE SET n = n + 1;
END`,
	`CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs BEGIN
	UPDATE job_counts SET n = n - 1
	WHERE tenant = OLD.tenant AND service = OLD.service AND provider = OLD.provider AND status = OLD.status;
	DELETE FROM job_counts
	WHERE tenant = OLD.tenant AND service = OLD.service AND provider = OLD.provider AND status = OLD.status AND n = 0;
END`,
}
