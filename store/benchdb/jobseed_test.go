package benchdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/benchdb"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// TestSeedJobs seeds a few thousand jobs on top of one already there:
// job_counts counts them all, the indexes are back and the counting
// trigger is on again.
func TestSeedJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.FreshPostgresURL(t)
	s, db := storetest.Open(t, url), storetest.PostgresDB(t, url)
	var indexes int
	indexCount := `SELECT count(*) FROM pg_index WHERE indrelid = 'jobs'::regclass`
	require.NoError(t, db.QueryRow(indexCount).Scan(&indexes))

	first := &jobs.Record{ID: "00000000-0000-7000-8000-000000000001", Service: "llm-tasks", Tenant: "tenant-000",
		UserID: "u", Status: jobs.StatusPending, Input: "{}", Options: "{}", CreatedAt: time.Now().UTC()}
	require.NoError(t, s.Jobs.SaveJob(ctx, first))
	require.NoError(t, benchdb.SeedJobs(ctx, url, 5000))
	later := *first
	later.ID = "00000000-0000-7000-8000-000000000002"
	require.NoError(t, s.Jobs.SaveJob(ctx, &later))

	var rows, counted, buckets, mismatched, after int64
	require.NoError(t, db.QueryRow("SELECT count(*) FROM jobs").Scan(&rows))
	require.NoError(t, db.QueryRow("SELECT sum(n), count(*) FROM job_counts").Scan(&counted, &buckets))
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM (
		SELECT tenant, service, provider, status, sum(n) AS n FROM job_counts GROUP BY tenant, service, provider, status) c FULL JOIN (
		SELECT tenant, service, provider, status, count(*) AS n FROM jobs GROUP BY tenant, service, provider, status) j
		USING (tenant, service, provider, status) WHERE c.n IS DISTINCT FROM j.n`).Scan(&mismatched))
	require.Equal(t, int64(5002), rows)
	require.Equal(t, int64(5002), counted)
	require.Greater(t, buckets, int64(500))
	require.Zero(t, mismatched)
	require.NoError(t, db.QueryRow(indexCount).Scan(&after))
	require.Equal(t, int64(indexes), after)
	_, total, err := s.Jobs.ListJobs(ctx, store.JobFilter{Tenant: "tenant-000", Service: "llm-tasks", Status: jobs.StatusPending}, 0, 1)
	require.NoError(t, err)
	var want int64
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM jobs WHERE tenant = 'tenant-000' AND service = 'llm-tasks'
		AND status = 'pending'`).Scan(&want))
	require.GreaterOrEqual(t, want, int64(2))
	require.Equal(t, want, total)
}
