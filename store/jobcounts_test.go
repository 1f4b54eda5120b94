package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// buckets are job counts by "tenant/service/provider/status".
type buckets map[string]int64

func queryBuckets(t *testing.T, db *sql.DB, query string) buckets {
	t.Helper()
	rows, err := db.Query(query)
	require.NoError(t, err)
	defer rows.Close()
	out := buckets{}
	for rows.Next() {
		var tenant, service, provider, status string
		var n int64
		require.NoError(t, rows.Scan(&tenant, &service, &provider, &status, &n))
		out[tenant+"/"+service+"/"+provider+"/"+status] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// requireCounts checks job_counts holds want, with no other row (not even
// an empty bucket), and that want is what COUNT(*) over jobs gives.
func requireCounts(t *testing.T, db *sql.DB, want buckets, msg string) {
	t.Helper()
	// PostgreSQL spreads a bucket over shards, which may hold negative
	// deltas; the buckets that sum to 0 are gone.
	require.Equal(t, want, queryBuckets(t, db, `SELECT tenant, service, provider, status, SUM(n) FROM job_counts
		GROUP BY tenant, service, provider, status HAVING SUM(n) <> 0`), "job_counts: %s", msg)
	require.Equal(t, want, queryBuckets(t, db, `SELECT tenant, service, provider, status, COUNT(*) FROM jobs
		GROUP BY tenant, service, provider, status`), "jobs: %s", msg)
}

func countedJob(tenant, service string) jobs.Record {
	return jobs.Record{
		ID:        uuid.Must(uuid.NewV7()).String(),
		Service:   jobs.ServiceID(service),
		Tenant:    tenant,
		UserID:    "alice",
		Status:    jobs.StatusPending,
		Input:     `{"type":"text","text":"hello"}`,
		Options:   `{}`,
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
	}
}

// saved is job at the next state, as the workflow writes it.
func saved(job jobs.Record, revision int, status jobs.Status, provider string) *jobs.Record {
	job.Revision = revision
	job.Status = status
	job.Provider = provider
	return &job
}

// TestJobCountsFollowWrites walks jobs through every write path and checks
// job_counts after each: inserts (new and repeated), SaveJob transitions
// and failover, SaveJob skipped by the revision guard, progress, a SaveJob
// that creates the record, updates of other counted columns and deletes.
func TestJobCountsFollowWrites(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		exec := func(stmt string) {
			t.Helper()
			_, err := db.Exec(stmt)
			require.NoError(t, err, stmt)
		}
		requireCounts(t, db, buckets{}, "empty")

		a, b, c := countedJob("acme", "transcriptions"), countedJob("acme", "transcriptions"), countedJob("globex", "translations")
		for _, job := range []jobs.Record{a, b, c} {
			require.NoError(t, s.Jobs.InsertJob(ctx, &job))
		}
		want := buckets{"acme/transcriptions//pending": 2, "globex/translations//pending": 1}
		requireCounts(t, db, want, "inserted")

		// A repeated insert (ON CONFLICT DO NOTHING) counts nothing.
		dup := a
		dup.Status = jobs.StatusCompleted
		require.NoError(t, s.Jobs.InsertJob(ctx, &dup))
		requireCounts(t, db, want, "repeated insert")

		// pending → processing: the job moves from one bucket to another.
		require.NoError(t, s.Jobs.SaveJob(ctx, saved(a, 1, jobs.StatusProcessing, "alpha")))
		want = buckets{"acme/transcriptions//pending": 1, "acme/transcriptions/alpha/processing": 1, "globex/translations//pending": 1}
		requireCounts(t, db, want, "processing")

		// Progress changes no counted column.
		require.NoError(t, s.Jobs.UpdateProgress(ctx, a.ID, 50))
		got, err := s.Jobs.GetJob(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, 50, got.Progress)
		requireCounts(t, db, want, "progress")

		// Failover: same status, another provider. The emptied bucket goes.
		require.NoError(t, s.Jobs.SaveJob(ctx, saved(a, 2, jobs.StatusProcessing, "beta")))
		want = buckets{"acme/transcriptions//pending": 1, "acme/transcriptions/beta/processing": 1, "globex/translations//pending": 1}
		requireCounts(t, db, want, "failover")

		// A write the revision guard skips (same revision) counts nothing.
		require.NoError(t, s.Jobs.SaveJob(ctx, saved(a, 2, jobs.StatusCompleted, "alpha")))
		got, err = s.Jobs.GetJob(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusProcessing, got.Status)
		require.Equal(t, "beta", got.Provider)
		requireCounts(t, db, want, "stale write")

		// A newer revision that changes no counted column counts nothing.
		stillProcessing := saved(a, 3, jobs.StatusProcessing, "beta")
		stillProcessing.Progress = 80
		require.NoError(t, s.Jobs.SaveJob(ctx, stillProcessing))
		got, err = s.Jobs.GetJob(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, 80, got.Progress)
		requireCounts(t, db, want, "same bucket")

		require.NoError(t, s.Jobs.SaveJob(ctx, saved(a, 4, jobs.StatusCompleted, "beta")))
		require.NoError(t, s.Jobs.SaveJob(ctx, saved(b, 1, jobs.StatusFailed, "")))
		want = buckets{"acme/transcriptions/beta/completed": 1, "acme/transcriptions//failed": 1, "globex/translations//pending": 1}
		requireCounts(t, db, want, "completed and failed")

		// The workflow's write can come first: SaveJob inserts the record
		// and the API's InsertJob afterwards is a no-op.
		d := countedJob("acme", "llm-tasks")
		require.NoError(t, s.Jobs.SaveJob(ctx, saved(d, 1, jobs.StatusProcessing, "gamma")))
		require.NoError(t, s.Jobs.InsertJob(ctx, &d))
		want["acme/llm-tasks/gamma/processing"] = 1
		requireCounts(t, db, want, "created by SaveJob")

		// Tenant and service are counted too, whoever changes them.
		exec("UPDATE jobs SET tenant = 'initech' WHERE id = '" + c.ID + "'")
		exec("UPDATE jobs SET service = 'video-analyses' WHERE id = '" + d.ID + "'")
		delete(want, "globex/translations//pending")
		delete(want, "acme/llm-tasks/gamma/processing")
		want["initech/translations//pending"] = 1
		want["acme/video-analyses/gamma/processing"] = 1
		requireCounts(t, db, want, "tenant and service")

		// Moves between buckets in both directions in one statement.
		exec("UPDATE jobs SET status = CASE status WHEN 'completed' THEN 'failed' ELSE 'completed' END, provider = 'beta' WHERE tenant = 'acme' AND service = 'transcriptions'")
		want = buckets{"acme/transcriptions/beta/failed": 1, "acme/transcriptions/beta/completed": 1,
			"initech/translations//pending": 1, "acme/video-analyses/gamma/processing": 1}
		requireCounts(t, db, want, "swap")

		exec("DELETE FROM jobs WHERE id = '" + a.ID + "'")
		delete(want, "acme/transcriptions/beta/failed")
		requireCounts(t, db, want, "deleted")
		exec("DELETE FROM jobs")
		requireCounts(t, db, buckets{}, "all deleted")
	})
}

// TestJobCountsBackfill puts the database back as it was before the
// migration, writes jobs there, and migrates: job_counts counts them, and
// the writes after it.
func TestJobCountsBackfill(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		undo := []string{"DROP TRIGGER job_counts_insert", "DROP TRIGGER job_counts_update", "DROP TRIGGER job_counts_delete"}
		if s.Dialect() == "postgres" {
			undo = []string{"DROP FUNCTION job_counts_track() CASCADE"}
		}
		undo = append(undo, "DROP TABLE job_counts",
			"DELETE FROM schema_migrations WHERE id IN ('202611210005_job_counts', '202612011001_job_count_shards')")
		for _, stmt := range undo {
			_, err := db.Exec(stmt)
			require.NoError(t, err, stmt)
		}

		var seeded []jobs.Record
		for i := range 12 {
			job := countedJob([]string{"acme", "globex"}[i%2], []string{"transcriptions", "translations", "llm-tasks"}[i%3])
			require.NoError(t, s.Jobs.InsertJob(ctx, &job))
			seeded = append(seeded, job)
		}
		for i, job := range seeded[:5] {
			require.NoError(t, s.Jobs.SaveJob(ctx, saved(job, 1, jobs.StatusCompleted, []string{"alpha", "beta"}[i%2])))
		}
		before := buckets{"globex/llm-tasks//pending": 2}
		for _, key := range []string{
			"acme/transcriptions/alpha/completed", "globex/translations/beta/completed",
			"acme/llm-tasks/alpha/completed", "globex/transcriptions/beta/completed",
			"acme/translations/alpha/completed", "acme/transcriptions//pending", "globex/translations//pending",
			"acme/llm-tasks//pending", "globex/transcriptions//pending", "acme/translations//pending",
		} {
			before[key] = 1
		}
		require.Equal(t, before, queryBuckets(t, db, `SELECT tenant, service, provider, status, COUNT(*) FROM jobs
			GROUP BY tenant, service, provider, status`))

		require.NoError(t, s.Migrate(ctx))
		requireCounts(t, db, before, "backfilled")

		require.NoError(t, s.Jobs.SaveJob(ctx, saved(seeded[11], 1, jobs.StatusFailed, "")))
		before["globex/llm-tasks//pending"] = 1
		before["globex/llm-tasks//failed"] = 1
		requireCounts(t, db, before, "after the backfill")
		_, total, err := s.Jobs.ListJobs(ctx, store.JobFilter{Tenant: "globex"}, 0, 1)
		require.NoError(t, err)
		require.Equal(t, int64(6), total)
	})
}

// TestJobCountsConcurrentMoves moves jobs between the same two buckets in
// opposite directions at once on PostgreSQL. A statement holding one bucket
// while it waits for the other would deadlock (detected after a second,
// one statement failing); in key order the second waits holding nothing.
func TestJobCountsConcurrentMoves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := freshPostgres(t)

	x, y := countedJob("acme", "transcriptions"), countedJob("acme", "transcriptions")
	require.NoError(t, s.Jobs.InsertJob(ctx, &x))
	require.NoError(t, s.Jobs.SaveJob(ctx, saved(y, 1, jobs.StatusProcessing, "")))

	// Every shard of both buckets has a row, so that each move meets the
	// lock whatever its connection's shard.
	_, err := db.Exec(`INSERT INTO job_counts (tenant, service, provider, status, shard, n)
		SELECT 'acme', 'transcriptions', '', status, shard, 0
		FROM (VALUES ('pending'), ('processing')) AS st (status), generate_series(0, 15) AS shard
		ON CONFLICT DO NOTHING`)
	require.NoError(t, err)
	// Hold the pending bucket, the first in key order, then move x out of
	// it and y into it: both must wait for the lock, not for each other.
	lock, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback() }()
	_, err = lock.Exec(`SELECT n FROM job_counts WHERE tenant = 'acme' AND service = 'transcriptions'
		AND provider = '' AND status = 'pending' FOR UPDATE`)
	require.NoError(t, err)
	marker := "move-" + uuid.NewString()
	waiting := func(n int) {
		require.Eventually(t, func() bool {
			var got int
			err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%' AND query NOT LIKE '%pg_stat_activity%'`, marker).Scan(&got)
			return err == nil && got == n
		}, 10*time.Second, 10*time.Millisecond)
	}
	errs := make(chan error, 2)
	move := func(id string, status jobs.Status) {
		_, err := db.Exec(fmt.Sprintf("UPDATE jobs SET status = '%s' WHERE id = '%s' /* %s */", status, id, marker))
		errs <- err
	}
	go move(x.ID, jobs.StatusProcessing)
	waiting(1)
	go move(y.ID, jobs.StatusPending)
	waiting(2)
	require.NoError(t, lock.Commit())
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	requireCounts(t, db, buckets{"acme/transcriptions//pending": 1, "acme/transcriptions//processing": 1}, "swapped")
}

// TestJobCountsConcurrentWrites runs concurrent writers on PostgreSQL that
// create jobs and move them between buckets; the counts stay exact.
func TestJobCountsConcurrentWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := freshPostgres(t)

	providers := []string{"alpha", "beta", "gamma"}
	statuses := []jobs.Status{jobs.StatusProcessing, jobs.StatusCompleted, jobs.StatusFailed}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range 15 {
				job := countedJob("acme", "transcriptions")
				if err := s.Jobs.InsertJob(ctx, &job); err != nil {
					errs <- err
					return
				}
				for rev := 1; rev <= 4; rev++ {
					next := saved(job, rev, statuses[r.IntN(3)], providers[r.IntN(3)])
					if err := s.Jobs.SaveJob(ctx, next); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	counted := queryBuckets(t, db, "SELECT tenant, service, provider, status, COUNT(*) FROM jobs GROUP BY tenant, service, provider, status")
	var n int64
	for _, v := range counted {
		n += v
	}
	require.Equal(t, int64(120), n)
	requireCounts(t, db, counted, "concurrent writes")
	var spread int
	require.NoError(t, db.QueryRow(`SELECT COUNT(DISTINCT shard) FROM job_counts`).Scan(&spread))
	require.Greater(t, spread, 1, "one tenant's jobs are counted in several shards, not all on one row's lock")
}

// freshPostgres is a migrated store on a database of its own, and a plain
// connection to that database.
func freshPostgres(t *testing.T) (*store.Store, *sql.DB) {
	t.Helper()
	url := storetest.FreshPostgresURL(t)
	return storetest.Open(t, url), storetest.PostgresDB(t, url)
}

// TestJobCountsConcurrentBatches creates batches of one tenant at once on
// PostgreSQL: each transaction moves many jobs, and none may deadlock
// another on the counts.
func TestJobCountsConcurrentBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := freshPostgres(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 2 {
		wg.Go(func() {
			for range 10 {
				b, records, starts := newBatch(100, time.Now().UTC().Truncate(time.Millisecond), "")
				if _, err := s.Batches.CreateBatch(ctx, b, records, starts); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	requireCounts(t, db, buckets{"acme/transcriptions//pending": 2000}, "two batch creators")
}
