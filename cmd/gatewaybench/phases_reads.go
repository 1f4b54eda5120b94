package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"time"

	"github.com/ai-job-gateway/gateway/store/benchdb"
)

// jobList is what the benchmark reads of a GET /v1/jobs answer.
type jobList struct {
	Meta struct {
		Total int `json:"total"`
	} `json:"meta"`
}

// reads seeds a fresh schema with Jobs jobs (benchdb.SeedJobs) and times
// reads one at a time: 10 unmeasured, then ReadRequests (20 s at most).
func (b *bench) reads(ctx context.Context, shape string) error {
	dbURL, err := b.freshSchema(ctx, b.opts.PostgresURL, "reads")
	if err != nil {
		return err
	}
	migrate := exec.CommandContext(ctx, b.bin, "migrate", "--database-url", dbURL)
	migrate.Env = b.env()
	if out, err := migrate.CombinedOutput(); err != nil {
		return fmt.Errorf("gateway migrate: %w: %s", err, out)
	}
	b.logf("reads: seeding %d jobs into PostgreSQL", b.opts.Jobs)
	start := time.Now()
	if err := benchdb.SeedJobs(ctx, dbURL, b.opts.Jobs); err != nil {
		return err
	}
	b.rep.note("reads", "gateway", "jobs seeded into PostgreSQL", "%d in %s", b.opts.Jobs, time.Since(start).Round(time.Second))
	d, err := b.deploy(ctx, shape, "reads", deploySpec{storeURL: dbURL})
	if err != nil {
		return err
	}
	defer d.close()
	tenant := benchdb.SeedTenant(0)
	api, err1 := d.client(tenant, benchScopes)
	admin, err2 := d.client("", benchScopes+" admin:cross-tenant")
	ids, err3 := sampleJobIDs(ctx, dbURL, tenant, 1000)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	for _, c := range []struct {
		key, measure string
		client       *gatewayClient
		path         string
		target       float64 // p99 in ms; 0: reported only
	}{
		{"reads/get", "GET /v1/llm-tasks/{id}", api, "", 10},
		{"reads/list", "GET /v1/jobs (largest tenant), page 1", api, "/v1/jobs", 30},
		{"reads/list-status", "… filter[status]=failed, page 1", api, "/v1/jobs?filter[status]=failed", 30},
		{"reads/list-user", "… filter[user_id], page 1", api, "/v1/jobs?filter[user_id]=" + benchdb.SeedUser(0, 0), 30},
		{"reads/list-2", "… filter[service]+filter[status], page 1", api, "/v1/jobs?filter[service]=translations&filter[status]=completed", 30},
		{"reads/list-p500", "GET /v1/jobs (largest tenant), page 500", api, "/v1/jobs?page[number]=500", 0},
		{"reads/admin", "GET /v1/jobs (all tenants), page 1", admin, "/v1/jobs", 30},
		{"reads/admin-status", "… all tenants, filter[status]=processing, page 1", admin, "/v1/jobs?filter[status]=processing", 30},
		{"reads/admin-p500", "GET /v1/jobs (all tenants), page 500", admin, "/v1/jobs?page[number]=500", 0},
	} {
		b.logf("reads: %s", c.measure)
		i := 0
		samples := closedLoop(ctx, 1, 20*time.Second, b.opts.ReadRequests+10, func(ctx context.Context) (string, error) {
			path := c.path
			if path == "" {
				path = "/v1/llm-tasks/" + ids[i%len(ids)]
			}
			i++
			return "", c.client.get(ctx, path, &jobList{})
		})
		x := row{Section: "reads", Key: c.key, Measure: c.measure, System: "gateway"}
		x.Latency, x.ErrorSamples = summary(samples[min(10, len(samples)):])
		if c.target > 0 {
			x.judge(x.Latency.P99 < c.target, fmt.Sprintf("p99 < %.0f ms", c.target))
		}
		b.rep.add(x)
	}
	return nil
}

// sampleJobIDs picks up to n random llm-tasks jobs of tenant.
func sampleJobIDs(ctx context.Context, dbURL, tenant string, n int) ([]string, error) {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id FROM jobs TABLESAMPLE SYSTEM (5) REPEATABLE (42)
		WHERE tenant = $1 AND service = 'llm-tasks' LIMIT $2`, tenant, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no llm-tasks jobs of %s were seeded", tenant)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids, rows.Err()
}

// tableScans are a table's index + sequential scans (pg_stat_user_tables).
func tableScans(ctx context.Context, db *sql.DB, table string) (scans float64, err error) {
	err = db.QueryRowContext(ctx, `SELECT coalesce(idx_scan, 0) + coalesce(seq_scan, 0) FROM pg_stat_user_tables
		WHERE schemaname = current_schema() AND relname = $1`, table).Scan(&scans)
	return scans, err
}
