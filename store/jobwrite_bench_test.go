package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
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
		_, err := s.CreateJob(ctx, job, &store.JobStart{Input: `{}`, NextAttemptAt: job.CreatedAt})
		return err
	}
	project := func() error {
		job := newJob()
		job.Status, job.Provider, job.Revision = jobs.StatusProcessing, "sandbox", 1
		return s.SaveJob(ctx, job)
	}
	for _, c := range []struct {
		name  string
		write func() error
	}{{"accept", accept}, {"project", project}} {
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
