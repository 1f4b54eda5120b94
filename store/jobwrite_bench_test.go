package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// BenchmarkSQLiteJobWrites measures the writes every job makes on the
// SQLite store (`gateway dev`'s): accepting it (the job and its outbox
// start) and projecting it into processing, one caller at a time and with
// callers in parallel (which the store's writer commits in groups).
func BenchmarkSQLiteJobWrites(b *testing.B) {
	ctx := context.Background()
	s, err := store.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "gateway.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	accept := func() error {
		job := newJob()
		_, err := s.Jobs.CreateJob(ctx, job, &store.JobStart{Input: `{}`, NextAttemptAt: job.CreatedAt})
		return err
	}
	project := func() error {
		job := newJob()
		job.Status, job.Provider, job.Revision = jobs.StatusProcessing, "sandbox", 1
		return s.Jobs.SaveJob(ctx, job)
	}
	complete := func() error {
		job := newJob()
		if _, err := s.Jobs.CreateJob(ctx, job, &store.JobStart{Input: `{}`, NextAttemptAt: job.CreatedAt}); err != nil {
			return err
		}
		now := time.Now().UTC()
		job.Status, job.Provider, job.Revision, job.Progress = jobs.StatusCompleted, "sandbox", 2, 100
		job.Routing = `{"provider_id":"sandbox","reason":"explicit","attempt":1}`
		job.RoutingHistory = "[" + job.Routing + "]"
		job.Result = `{"text":"Gateway routes jobs to providers."}`
		job.ProcessedAt, job.CompletedAt = &now, &now
		return s.Jobs.SaveJobUsage(ctx, job, &store.UsageEntry{JobID: job.ID, Attempt: 1, Tenant: job.Tenant, Service: job.Service,
			Provider: "sandbox", Unit: "tokens", Quantity: 12, Native: `{}`, Currency: "USD", CostNanos: 1200, BilledAt: now})
	}
	for _, c := range []struct {
		name  string
		write func() error
	}{{"accept", accept}, {"project", project}, {"accept+complete", complete}} {
		b.Run(c.name+"/serial", func(b *testing.B) {
			for b.Loop() {
				if err := c.write(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.write(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkPostgresJobPath measures, one caller at a time, the statements
// on the path of every job on PostgreSQL (production's store): a worker's
// claim of its start (with no backlog), accepting it, its completion (an
// unbudgeted one) and its routing decision's rate reservation. On an idle
// server a round trip is cheap; on a loaded one each costs far more
// (docs/benchmarks.md).
func BenchmarkPostgresJobPath(b *testing.B) {
	ctx := context.Background()
	s := storetest.Open(b, storetest.FreshPostgresURL(b))
	accept := func() (*jobs.Record, error) {
		job := newJob()
		_, err := s.Jobs.CreateJob(ctx, job, &store.JobStart{Input: `{}`, NextAttemptAt: job.CreatedAt})
		return job, err
	}
	b.Run("claim", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if _, err := accept(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			claimed, err := s.Jobs.ClaimJobStarts(ctx, time.Now(), time.Minute, 1)
			if err != nil || len(claimed) != 1 {
				b.Fatal(err, len(claimed))
			}
			b.StopTimer()
			if err := s.Jobs.DeleteJobStarts(ctx, []string{claimed[0].JobID}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	b.Run("accept", func(b *testing.B) {
		for b.Loop() {
			if _, err := accept(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("complete", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			job, err := accept()
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now().UTC()
			job.Status, job.Provider, job.Revision, job.Progress = jobs.StatusCompleted, "sandbox", 2, 100
			job.Result, job.ProcessedAt, job.CompletedAt = `{"text":"Gateway routes jobs to providers."}`, &now, &now
			entry := &store.UsageEntry{JobID: job.ID, Attempt: 1, Tenant: job.Tenant, Service: job.Service,
				Provider: "sandbox", Unit: "tokens", Quantity: 12, Native: `{}`, Currency: "USD", CostNanos: 1200, BilledAt: now, Unbudgeted: true}
			b.StartTimer()
			if err := s.Jobs.SaveJobUsage(ctx, job, entry); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reserve", func(b *testing.B) {
		for b.Loop() {
			key := store.DecisionKey{JobID: newJob().ID, Attempt: 1}
			if _, err := s.Routing.ReserveRateOnce(ctx, key, "sandbox", jobs.LLMTasks, 1_000_000, 0, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
