package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/benchdb"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// listBenchCase is one listing measured at scale; filter picks the filter
// of iteration i, so a case can rotate over tenants, users and values.
type listBenchCase struct {
	name   string
	filter func(i int) store.JobFilter
	page   int // 1-based page number; pages have 20 jobs
}

// BenchmarkListJobs measures ListJobs on PostgreSQL with BENCH_JOBS jobs
// (default one million; see benchdb.SeedJobs for their shape), seeded
// once into a fresh schema that is dropped when the benchmark ends. Each
// case reports ns/op and the p50 and p99 latency of its iterations, and
// "matches", the mean number of jobs its filter selects (meta.total),
// which comes from job_counts unless the filter has a user.
func BenchmarkListJobs(b *testing.B) {
	ctx := context.Background()
	s, n := storetest.SeededPostgres(b)
	if _, total, err := s.Jobs.ListJobs(ctx, store.JobFilter{}, 0, 1); err != nil || total != int64(n) {
		b.Fatalf("after the seed: job_counts says %d jobs, want %d (%v)", total, n, err)
	}

	statuses := []jobs.Status{jobs.StatusPending, jobs.StatusProcessing, jobs.StatusCompleted, jobs.StatusFailed}
	tenant := func(i int) string { return benchdb.SeedTenant(i % benchdb.SeedTenants) }
	largest := benchdb.SeedTenant(0)
	cases := []listBenchCase{
		// A regular caller: confined to its tenant, over all 100 tenants.
		{"tenant", func(i int) store.JobFilter { return store.JobFilter{Tenant: tenant(i)} }, 1},
		{"tenant+user", func(i int) store.JobFilter {
			return store.JobFilter{Tenant: tenant(i), UserID: benchdb.SeedUser(i%benchdb.SeedTenants, i%5)}
		}, 1},
		{"tenant+service", func(i int) store.JobFilter {
			return store.JobFilter{Tenant: tenant(i), Service: jobs.ServiceID(benchdb.SeedServices[i%4])}
		}, 1},
		{"tenant+provider", func(i int) store.JobFilter {
			return store.JobFilter{Tenant: tenant(i), Provider: benchdb.SeedProviders[i%4]}
		}, 1},
		{"tenant+status", func(i int) store.JobFilter {
			return store.JobFilter{Tenant: tenant(i), Status: statuses[i%4]}
		}, 1},
		{"tenant+service+status", func(i int) store.JobFilter {
			return store.JobFilter{Tenant: tenant(i), Service: jobs.ServiceID(benchdb.SeedServices[i%4]), Status: statuses[(i/4)%4]}
		}, 1},
		// The largest tenant (about 10 % of all jobs): first and deep page.
		{"largest-tenant", func(int) store.JobFilter { return store.JobFilter{Tenant: largest} }, 1},
		{"largest-tenant,page-500", func(int) store.JobFilter { return store.JobFilter{Tenant: largest} }, 500},
		// An administrator with admin:cross-tenant, without filter[tenant].
		{"admin", func(int) store.JobFilter { return store.JobFilter{} }, 1},
		{"admin,page-500", func(int) store.JobFilter { return store.JobFilter{} }, 500},
		{"admin+user", func(i int) store.JobFilter {
			return store.JobFilter{UserID: benchdb.SeedUser(i%benchdb.SeedTenants, i%5)}
		}, 1},
		{"admin+service", func(i int) store.JobFilter {
			return store.JobFilter{Service: jobs.ServiceID(benchdb.SeedServices[i%4])}
		}, 1},
		{"admin+provider", func(i int) store.JobFilter { return store.JobFilter{Provider: benchdb.SeedProviders[i%4]} }, 1},
		{"admin+status", func(i int) store.JobFilter { return store.JobFilter{Status: statuses[i%4]} }, 1},
		{"admin+status,page-500", func(int) store.JobFilter { return store.JobFilter{Status: jobs.StatusFailed} }, 500},
		{"admin+provider+status", func(i int) store.JobFilter {
			return store.JobFilter{Provider: benchdb.SeedProviders[i%4], Status: statuses[2+(i/4)%2]}
		}, 1},
	}
	const size = 20
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			samples := make([]time.Duration, 0, b.N)
			var matches int64
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				jobs, total, err := s.Jobs.ListJobs(ctx, bc.filter(i), (bc.page-1)*size, size)
				samples = append(samples, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				if total > int64((bc.page-1)*size) && len(jobs) == 0 {
					b.Fatalf("%s: empty page %d of %d jobs", bc.name, bc.page, total)
				}
				matches += total
			}
			b.StopTimer()
			reportLatency(b, samples)
			b.ReportMetric(float64(matches)/float64(b.N), "matches")
		})
	}
}

// reportLatency reports the p50 and p99 of samples in milliseconds.
func reportLatency(b *testing.B, samples []time.Duration) {
	slices.Sort(samples)
	at := func(q float64) float64 {
		i := int(q*float64(len(samples))+0.999999) - 1
		return float64(samples[max(i, 0)]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}
