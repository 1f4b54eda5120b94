package store

import (
	"strings"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// migrationJobCountShards spreads each count of job_counts over 16 rows on
// PostgreSQL, a job's always in the same one (a hash of its id): every
// create and every transition of one tenant's jobs updated the same row,
// so concurrent writers waited for each other's commits on its lock
// (docs/operations.md, Listing at scale). Readers sum the rows as before.
// SQLite has one writer at a time: its counts stay one row each.
var migrationJobCountShards = &gormigrate.Migration{
	ID: "202612011001_job_count_shards",
	Migrate: func(tx *gorm.DB) error {
		if tx.Dialector.Name() != "postgres" {
			return nil
		}
		return execAll(tx,
			// No job changes while the counts are redone.
			"LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE",
			"ALTER TABLE job_counts ADD COLUMN shard smallint NOT NULL DEFAULT 0",
			"ALTER TABLE job_counts DROP CONSTRAINT job_counts_pkey",
			"ALTER TABLE job_counts ADD PRIMARY KEY (tenant, service, provider, status, shard)",
			jobCountsShardedPostgres,
			"DELETE FROM job_counts",
			`INSERT INTO job_counts (tenant, service, provider, status, shard, n)
	SELECT tenant, service, provider, status, hashtext(id) & 15, COUNT(*) FROM jobs GROUP BY 1, 2, 3, 4, 5`)
	},
	Rollback: func(tx *gorm.DB) error {
		if tx.Dialector.Name() != "postgres" {
			return nil
		}
		return execAll(tx,
			"LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE",
			strings.Replace(jobCountsPostgres[0], "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1),
			"DELETE FROM job_counts",
			"ALTER TABLE job_counts DROP CONSTRAINT job_counts_pkey",
			"ALTER TABLE job_counts DROP COLUMN shard",
			"ALTER TABLE job_counts ADD PRIMARY KEY (tenant, service, provider, status)",
			jobCountsBackfill)
	},
}

// jobCountsShardedPostgres is job_counts_track counting each job in its
// shard; the triggers stay.
const jobCountsShardedPostgres = `CREATE OR REPLACE FUNCTION job_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		INSERT INTO job_counts AS c (tenant, service, provider, status, shard, n)
		VALUES (NEW.tenant, NEW.service, NEW.provider, NEW.status, hashtext(NEW.id) & 15, 1)
		ON CONFLICT (tenant, service, provider, status, shard) DO UPDATE SET n = c.n + 1;
		RETURN NULL;
	ELSIF TG_OP = 'UPDATE' THEN
		INSERT INTO job_counts AS c (tenant, service, provider, status, shard, n)
		SELECT * FROM (VALUES (OLD.tenant, OLD.service, OLD.provider, OLD.status, hashtext(OLD.id) & 15, -1::bigint),
			(NEW.tenant, NEW.service, NEW.provider, NEW.status, hashtext(NEW.id) & 15, 1::bigint)) AS d (tenant, service, provider, status, shard, n)
		ORDER BY tenant, service, provider, status, shard
		ON CONFLICT (tenant, service, provider, status, shard) DO UPDATE SET n = c.n + excluded.n;
	ELSE
		UPDATE job_counts SET n = n - 1
		WHERE tenant = OLD.tenant AND service = OLD.service AND provider = OLD.provider AND status = OLD.status
			AND shard = hashtext(OLD.id) & 15;
	END IF;
	DELETE FROM job_counts
	WHERE tenant = OLD.tenant AND service = OLD.service AND provider = OLD.provider AND status = OLD.status
		AND shard = hashtext(OLD.id) & 15 AND n = 0;
	RETURN NULL;
END $$`
