package store

import (
	"strings"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// migrationJobCountShards spreads each count of job_counts over 16 rows on
// PostgreSQL: every create and every transition of one tenant's jobs
// updated the same row, so concurrent writers waited for each other's
// commits on its lock (docs/operations.md, Listing at scale). A
// transaction counts in the shard of its connection (its backend pid), so
// one that moves many jobs (a batch) still locks one row per count, in
// the order it always did; the rows of a count may hold negative deltas,
// and readers sum them as before. The counts so far stay in shard 0.
// SQLite has one writer at a time: its counts stay one row each.
var migrationJobCountShards = &gormigrate.Migration{
	ID: "202612011001_job_count_shards",
	Migrate: func(tx *gorm.DB) error {
		if tx.Dialector.Name() != "postgres" {
			return nil
		}
		return execAll(tx,
			"ALTER TABLE job_counts ADD COLUMN shard smallint NOT NULL DEFAULT 0",
			"ALTER TABLE job_counts DROP CONSTRAINT job_counts_pkey",
			"ALTER TABLE job_counts ADD PRIMARY KEY (tenant, service, provider, status, shard)",
			jobCountsShardedPostgres)
	},
	Rollback: func(tx *gorm.DB) error {
		if tx.Dialector.Name() != "postgres" {
			return nil
		}
		return execAll(tx,
			// No job changes while the counts are folded back.
			"LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE",
			strings.Replace(jobCountsPostgres[0], "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1),
			"DELETE FROM job_counts",
			"ALTER TABLE job_counts DROP CONSTRAINT job_counts_pkey",
			"ALTER TABLE job_counts DROP COLUMN shard",
			"ALTER TABLE job_counts ADD PRIMARY KEY (tenant, service, provider, status)",
			jobCountsBackfill)
	},
}

// jobCountsShardedPostgres is job_counts_track counting each change in the
// shard of the transaction's connection; the triggers stay.
const jobCountsShardedPostgres = `CREATE OR REPLACE FUNCTION job_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	s smallint := pg_backend_pid() & 15;
BEGIN
	IF TG_OP = 'INSERT' THEN
		INSERT INTO job_counts AS c (tenant, service, provider, status, shard, n)
		VALUES (NEW.tenant, NEW.service, NEW.provider, NEW.status, s, 1)
		ON CONFLICT (tenant, service, provider, status, shard) DO UPDATE SET n = c.n + 1;
		RETURN NULL;
	ELSIF TG_OP = 'UPDATE' THEN
		INSERT INTO job_counts AS c (tenant, service, provider, status, shard, n)
		SELECT * FROM (VALUES (OLD.tenant, OLD.service, OLD.provider, OLD.status, s, -1::bigint),
			(NEW.tenant, NEW.service, NEW.provider, NEW.status, s, 1::bigint)) AS d (tenant, service, provider, status, shard, n)
		ORDER BY tenant, service, provider, status
		ON CONFLICT (tenant, service, provider, status, shard) DO UPDATE SET n = c.n + excluded.n;
	ELSE
		INSERT INTO job_counts AS c (tenant, service, provider, status, shard, n)
		VALUES (OLD.tenant, OLD.service, OLD.provider, OLD.status, s, -1)
		ON CONFLICT (tenant, service, provider, status, shard) DO UPDATE SET n = c.n - 1;
	END IF;
	DELETE FROM job_counts
	WHERE tenant = OLD.tenant AND service = OLD.service AND provider = OLD.provider AND status = OLD.status
		AND shard = s AND n = 0;
	RETURN NULL;
END $$`
