package benchdb

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"time"
)

// SeedTenants is the number of tenants of the jobs SeedJobs writes,
// "tenant-000" … "tenant-099"; tenant-000 has the most jobs (about 10 %),
// tenant-099 the fewest (about 0.5 %).
const SeedTenants = 100

// SeedServices and SeedProviders are the services and providers of seeded
// jobs, most frequent first.
var (
	SeedServices  = []string{"llm-tasks", "transcriptions", "translations", "video-analyses"}
	SeedProviders = []string{"sandbox-fast", "openai-main", "sandbox-slow", "azure-eu"}
)

// SeedTenant is the slug of seeded tenant i.
func SeedTenant(i int) string { return fmt.Sprintf("tenant-%03d", i) }

// SeedUser is the id of seeded user u of tenant i, "tenant-000-user-00"
// …; SeedJobs writes 20 users a tenant, and user 00 of each tenant has the
// most jobs.
func SeedUser(i, u int) string { return fmt.Sprintf("%s-user-%02d", SeedTenant(i), u) }

// SeedAnchor is the creation time of the newest seeded job; the others go
// back 90 days from it, one every 90 days / n.
var SeedAnchor = time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)

// Jobs is the number of jobs benchmarks seed: BENCH_JOBS, default one
// million.
func Jobs() (int, error) {
	v := os.Getenv("BENCH_JOBS")
	if v == "" {
		return 1_000_000, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("BENCH_JOBS=%q: must be a positive integer", v)
	}
	return n, nil
}

// SeedJobs fills the jobs table of a migrated PostgreSQL schema with n jobs
// in one INSERT … SELECT over generate_series, with a realistic skew:
//
//   - tenants: tenant i holds a share of about sqrt((i+1)/100) - sqrt(i/100);
//   - users: 20 per tenant, skewed the same way;
//   - services: llm-tasks 40 %, transcriptions 30 %, translations 20 %,
//     video-analyses 10 %;
//   - status: the newest 0.3 % are pending or processing; of the rest
//     about 93.9 % completed, 6 % failed, 0.1 % stuck pending or processing;
//   - providers: 50 / 25 / 15 / 10 %, none while pending;
//   - documents (input, options, routing, result) of realistic size, so the
//     table is as wide as a real projection.
//
// Ids are UUIDv7 built from created_at, so they sort like it. The secondary
// indexes are dropped for the load and rebuilt from their own definitions,
// and the trigger that counts inserted jobs is disabled for it and
// job_counts recounted with one GROUP BY, all in one transaction (which
// locks jobs against other writers); then the tables are vacuumed and
// analysed, as autovacuum would leave them. The data is the same on every
// run (fixed random seed).
func SeedJobs(ctx context.Context, databaseURL string, n int) error {
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx) // setseed and SET are per session
	if err != nil {
		return err
	}
	defer conn.Close()

	var indexes []string
	rows, err := conn.QueryContext(ctx, `SELECT pg_get_indexdef(indexrelid) FROM pg_index
		WHERE indrelid = 'jobs'::regclass AND NOT indisprimary`)
	if err != nil {
		return fmt.Errorf("seed jobs: list indexes: %w", err)
	}
	for rows.Next() {
		var def string
		if err := rows.Scan(&def); err != nil {
			rows.Close()
			return err
		}
		indexes = append(indexes, def)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	steps := []string{"SET LOCAL maintenance_work_mem = '256MB'", "SELECT setseed(0.42)"}
	if len(indexes) > 0 {
		steps = append(steps, `DO $$ DECLARE r record; BEGIN
			FOR r IN SELECT c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
				WHERE x.indrelid = 'jobs'::regclass AND NOT x.indisprimary
			LOOP EXECUTE format('DROP INDEX %I', r.relname); END LOOP; END $$`)
	}
	steps = append(steps, "ALTER TABLE jobs DISABLE TRIGGER job_counts_insert",
		fmt.Sprintf(seedJobsSQL, n, SeedAnchor.Format(time.RFC3339)),
		"ALTER TABLE jobs ENABLE TRIGGER job_counts_insert",
		"DELETE FROM job_counts",
		`INSERT INTO job_counts (tenant, service, provider, status, n)
			SELECT tenant, service, provider, status, COUNT(*) FROM jobs GROUP BY tenant, service, provider, status`)
	steps = append(steps, indexes...)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for _, stmt := range steps {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("seed jobs: %.60s…: %w", stmt, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("seed jobs: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "VACUUM (ANALYZE) jobs, job_counts"); err != nil {
		return fmt.Errorf("seed jobs: vacuum: %w", err)
	}
	return nil
}

// seedJobsSQL is the load: %[1]d jobs, the newest created at %[2]s.
const seedJobsSQL = `
INSERT INTO jobs (id, service, tenant, user_id, provider, status, progress, policy_id, application,
	input, options, routing, routing_history, result, error_code, error_message, client_meta,
	worker_id, revision, created_at, processed_at, completed_at, updated_at)
SELECT
	substr(t.hex, 1, 8) || '-' || substr(t.hex, 9, 4) || '-7' || substr(t.h, 1, 3) || '-' ||
		substr('89ab', 1 + (g.i %% 4)::int, 1) || substr(t.h, 4, 3) || '-' || substr(t.h, 7, 12),
	d.service, d.tenant, d.tenant || '-user-' || lpad(floor(20 * g.ru * g.ru)::int::text, 2, '0'),
	d.provider, d.status,
	CASE d.status WHEN 'completed' THEN 100 WHEN 'processing' THEN 40 ELSE 0 END,
	'', '',
	CASE d.service
		WHEN 'llm-tasks' THEN '{"type":"text","text":"Quarterly report, section ' || g.i || ', to be condensed for the board.","prompt":"Summarise the text in three bullet points.","system_prompt":"You are concise."}'
		WHEN 'transcriptions' THEN '{"type":"audio","url":"https://media.example.com/calls/' || t.h || '.mp3","audio_track":0}'
		WHEN 'translations' THEN '{"type":"text","content":"Thank you for your order ' || g.i || '. It ships within two working days.","target_language":"de"}'
		ELSE '{"url":"https://media.example.com/clips/' || t.h || '.mp4","features":["labels","scenes","summary"]}'
	END,
	'{"priority":"standard","include_usage":true}',
	t.routing,
	CASE WHEN t.routing = '' THEN '' ELSE '[' || t.routing || ']' END,
	CASE WHEN d.status = 'completed' THEN
		'{"content":"' || repeat('The board notes steady growth and a lower churn rate. ', 6) ||
		'","finish_reason":"completed","usage":{"input_tokens":' || (200 + g.i %% 900) ||
		',"output_tokens":' || (40 + g.i %% 300) || ',"cost":0.0042}}'
	ELSE '' END,
	CASE WHEN d.status = 'failed' THEN 'PROVIDERS_EXHAUSTED' ELSE '' END,
	CASE WHEN d.status = 'failed' THEN 'every candidate provider failed' ELSE '' END,
	'{"order_id":"ord-' || g.i || '","batch":"' || substr(t.h, 20, 8) || '"}',
	CASE WHEN d.status = 'pending' THEN '' ELSE 'worker-' || (g.i %% 8) END,
	CASE d.status WHEN 'pending' THEN 0 WHEN 'processing' THEN 1 ELSE 2 END,
	t.created_at,
	CASE WHEN d.status = 'pending' THEN NULL ELSE t.created_at + interval '2 seconds' END,
	CASE WHEN d.status IN ('completed', 'failed') THEN t.created_at + (5 + g.i %% 120) * interval '1 second' END,
	t.created_at + interval '2 minutes'
FROM (
	SELECT i, random() AS rt, random() AS ru, random() AS rs, random() AS rp, random() AS rst
	FROM generate_series(1, %[1]d) AS i
) g
CROSS JOIN LATERAL (
	SELECT
		'tenant-' || lpad(floor(100 * g.rt * g.rt)::int::text, 3, '0') AS tenant,
		CASE WHEN g.rs < 0.4 THEN 'llm-tasks' WHEN g.rs < 0.7 THEN 'transcriptions'
			WHEN g.rs < 0.9 THEN 'translations' ELSE 'video-analyses' END AS service,
		s.status,
		CASE WHEN s.status = 'pending' THEN ''
			WHEN g.rp < 0.5 THEN 'sandbox-fast' WHEN g.rp < 0.75 THEN 'openai-main'
			WHEN g.rp < 0.9 THEN 'sandbox-slow' ELSE 'azure-eu' END AS provider
	FROM (SELECT CASE
		WHEN g.i > %[1]d - %[1]d * 0.003 THEN CASE WHEN g.rst < 0.5 THEN 'pending' ELSE 'processing' END
		WHEN g.rst < 0.0005 THEN 'pending'
		WHEN g.rst < 0.001 THEN 'processing'
		WHEN g.rst < 0.061 THEN 'failed'
		ELSE 'completed' END AS status) s
) d
CROSS JOIN LATERAL (
	SELECT c.created_at, md5(g.i::text) AS h,
		lpad(to_hex((extract(epoch FROM c.created_at) * 1000)::bigint), 12, '0') AS hex,
		CASE WHEN d.status = 'pending' THEN '' ELSE
			'{"provider_id":"' || d.provider || '","reason":"policy_rule","policy_id":"0193a5d2-7c4e-7b1a-9f3e-2d6c8b4a1e07","policy_version":3,"policy_source":"tenant_default","attempt":1,"decided_at":"' ||
			to_char(c.created_at + interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"}'
		END AS routing
	FROM (SELECT date_trunc('milliseconds',
		timestamptz '%[2]s' - (%[1]d - g.i) * (interval '90 days' / %[1]d)) AS created_at) c
) t`
