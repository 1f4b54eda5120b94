package main

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"os/exec"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ai-job-gateway/gateway/store/benchdb"
)

// freshSchema creates an empty schema in the database at base and returns
// a URL whose connections use it; it is dropped when the run ends unless
// -keep.
func (b *bench) freshSchema(ctx context.Context, base, tag string) (string, error) {
	schema := "gatewaybench_" + tag + "_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	u, drop, err := benchdb.NewSchema(ctx, base, schema)
	if err != nil {
		return "", err
	}
	if !b.opts.Keep {
		b.cleanups = append(b.cleanups, drop)
	}
	return u, nil
}

// readCase is one read request, measured one at a time.
type readCase struct {
	key, measure string
	path         func(i int) string
	admin        bool
	target       float64 // p99 target in ms; 0: reported only
}

// readsPhase seeds a fresh PostgreSQL schema with Jobs jobs (a bulk
// insert, benchdb.SeedJobs), starts a gateway on it and measures reads
// one request at a time, then what one job costs the database.
func (b *bench) readsPhase(ctx context.Context, rep *report) error {
	dbURL, err := b.freshSchema(ctx, b.opts.PostgresURL, "reads")
	if err != nil {
		return err
	}
	migrate := exec.CommandContext(ctx, b.bin, "migrate", "--database-url", dbURL)
	migrate.Env = cleanEnv()
	if out, err := migrate.CombinedOutput(); err != nil {
		return fmt.Errorf("gateway migrate: %w: %s", err, out)
	}
	b.logf("reads: seeding %d jobs into PostgreSQL", b.opts.Jobs)
	start := time.Now()
	if err := benchdb.SeedJobs(ctx, dbURL, b.opts.Jobs); err != nil {
		return err
	}
	rep.Reads = &readsResult{Jobs: b.opts.Jobs, SeedSeconds: time.Since(start).Seconds()}
	b.logf("reads: seeded in %s; starting gateway dev on it", time.Since(start).Round(time.Second))

	g, err := startGateway(ctx, b.bin, b.work, gatewaySpec{name: "reads", databaseURL: dbURL,
		catalog: catalog("bench-zero", 0), pprof: b.opts.ProfileDir != ""})
	if err != nil {
		return err
	}
	defer g.stop()
	tenant := benchdb.SeedTenant(0)
	token, err := g.token(tenant, benchScopes)
	if err != nil {
		return err
	}
	admin, err := g.token("", benchScopes+" admin:cross-tenant")
	if err != nil {
		return err
	}
	ids, err := sampleJobIDs(ctx, dbURL, tenant, 1000)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return fmt.Errorf("no llm-tasks jobs of %s were seeded", tenant)
	}
	rep.Reads.Tenant = tenant
	var first jobList
	if err := getJSON(ctx, b.hc, g.url("/v1/jobs?page[size]=1"), token, &first); err != nil {
		return err
	}
	last := max(1, (first.Meta.Total+19)/20) // pages of 20, the default size
	fixed := func(p string) func(int) string { return func(int) string { return p } }
	cases := []readCase{
		{"reads/get", "GET /v1/llm-tasks/{id}", func(i int) string { return "/v1/llm-tasks/" + ids[i%len(ids)] }, false, 10},
		{"reads/list", "GET /v1/jobs (largest tenant), page 1", fixed("/v1/jobs"), false, 30},
		{"reads/list-status", "… filter[status]=failed, page 1", fixed("/v1/jobs?filter[status]=failed"), false, 30},
		{"reads/list-user", "… filter[user_id], page 1", fixed("/v1/jobs?filter[user_id]=" + benchdb.SeedUser(0, 0)), false, 30},
		{"reads/list-2", "… filter[service]+filter[status], page 1", fixed("/v1/jobs?filter[service]=translations&filter[status]=completed"), false, 30},
		{"reads/list-p500", "GET /v1/jobs (largest tenant), page 500", fixed("/v1/jobs?page[number]=500"), false, 0},
		{"reads/list-last", fmt.Sprintf("GET /v1/jobs (largest tenant), last page (%d)", last), fixed(fmt.Sprintf("/v1/jobs?page[number]=%d", last)), false, 0},
		{"reads/admin", "GET /v1/jobs (all tenants), page 1", fixed("/v1/jobs"), true, 30},
		{"reads/admin-status", "… all tenants, filter[status]=processing, page 1", fixed("/v1/jobs?filter[status]=processing"), true, 30},
		{"reads/admin-p500", "GET /v1/jobs (all tenants), page 500", fixed("/v1/jobs?page[number]=500"), true, 0},
	}
	for _, c := range cases {
		tok := token
		if c.admin {
			tok = admin
		}
		b.logf("reads: %s", c.measure)
		b.readCase(ctx, rep, g, tok, c)
	}

	// What one job costs the database: tuples written and index scans per
	// table, from PostgreSQL's statistics for this schema. A backend
	// publishes its counts at most once a second and, when idle, up to 10 s
	// later, but always when it exits: the reads gateway is stopped and a
	// new one started for the measurement, and stopped before the reading.
	g.stop()
	jobs := min(50, b.opts.SerialJobs)
	b.logf("reads: database cost of one job (one at a time, %d jobs)", jobs)
	g, err = startGateway(ctx, b.bin, b.work, gatewaySpec{name: "reads-cost", databaseURL: dbURL, catalog: catalog("bench-zero", 0)})
	if err != nil {
		return err
	}
	defer g.stop()
	if token, err = g.token(tenant, benchScopes); err != nil {
		return err
	}
	obs, err := dial(ctx, g.temporal)
	if err != nil {
		return err
	}
	defer obs.Close()
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	before, err := stableStats(ctx, db)
	if err != nil {
		return err
	}
	// The results are checked after the last reading: decoding them reads
	// the tenant's payload secret from the database being measured.
	gw := &keptResults{system: &gatewaySystem{base: g.url(""), token: token, hc: b.hc}}
	for range jobs {
		id, err := gw.submit(ctx)
		if err != nil {
			return err
		}
		if _, err := awaitClose(ctx, obs, gw, id); err != nil {
			return err
		}
	}
	g.stop()
	after, err := stableStats(ctx, db)
	if err != nil {
		return err
	}
	rep.PerJob.Database = perJob(before, after, jobs)
	dc, st, err := openResultDecoder(ctx, dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	return checkResults(dc, gw.results)
}

// readCase runs one case: 10 unmeasured requests, then ReadRequests
// measured ones (at most 20 s).
func (b *bench) readCase(ctx context.Context, rep *report, g *process, token string, c readCase) {
	var lats []time.Duration
	var errs []string
	total := -1
	deadline := time.Now().Add(20 * time.Second)
	for i := range b.opts.ReadRequests + 10 {
		if i >= 10 && time.Now().After(deadline) {
			break
		}
		var doc jobList
		start := time.Now()
		err := getJSON(ctx, b.hc, g.url(c.path(i)), token, &doc)
		lat := time.Since(start)
		if i < 10 {
			total = doc.Meta.Total
			continue
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		lats = append(lats, lat)
	}
	r := row{Section: "reads", Key: c.key, Measure: c.measure, System: "gateway",
		Latency: summarise(lats, len(errs)), ErrorSamples: firstN(errs, 3), p99Target: c.target}
	if c.key != "reads/get" && total >= 0 {
		r.Value = fmt.Sprintf("%d match", total)
	}
	rep.add(r)
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
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids, rows.Err()
}

// tableCounters are PostgreSQL's cumulative statistics of one table.
type tableCounters struct {
	Inserted, Updated, HotUpdated, Deleted, IndexScans, SeqScans int64
}

// tableStats reads the counters of every table of the URL's schema.
func tableStats(ctx context.Context, db *sql.DB) (map[string]tableCounters, error) {
	rows, err := db.QueryContext(ctx, `SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del,
		coalesce(idx_scan, 0), coalesce(seq_scan, 0)
		FROM pg_stat_user_tables WHERE schemaname = current_schema()`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]tableCounters{}
	for rows.Next() {
		var name string
		var c tableCounters
		if err := rows.Scan(&name, &c.Inserted, &c.Updated, &c.HotUpdated, &c.Deleted, &c.IndexScans, &c.SeqScans); err != nil {
			return nil, err
		}
		out[name] = c
	}
	return out, rows.Err()
}

// stableStats reads the schema's counters until two readings a second
// apart agree (at most 15 s), so that no backend has counts still to
// publish.
func stableStats(ctx context.Context, db *sql.DB) (map[string]tableCounters, error) {
	prev, err := tableStats(ctx, db)
	if err != nil {
		return nil, err
	}
	for range 15 {
		time.Sleep(time.Second)
		cur, err := tableStats(ctx, db)
		if err != nil {
			return nil, err
		}
		if maps.Equal(prev, cur) {
			return cur, nil
		}
		prev = cur
	}
	return prev, nil
}

// perJob is the difference of two readings divided by jobs, for the tables
// that changed.
func perJob(before, after map[string]tableCounters, jobs int) map[string]dbCost {
	out := map[string]dbCost{}
	n := float64(jobs)
	for name, a := range after {
		p := before[name]
		c := dbCost{
			Inserted:   float64(a.Inserted-p.Inserted) / n,
			Updated:    float64(a.Updated-p.Updated) / n,
			HotUpdated: float64(a.HotUpdated-p.HotUpdated) / n,
			Deleted:    float64(a.Deleted-p.Deleted) / n,
			IndexScans: float64(a.IndexScans-p.IndexScans) / n,
			SeqScans:   float64(a.SeqScans-p.SeqScans) / n,
		}
		if c != (dbCost{}) {
			out[name] = c
		}
	}
	return out
}
