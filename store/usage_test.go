package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// completed is job completed at revision rev with usage.
func completed(job *jobs.Record, rev int, usage string) *jobs.Record {
	done := *job
	now := time.Now().UTC()
	done.Status, done.Progress, done.Revision, done.CompletedAt = jobs.StatusCompleted, 100, rev, &now
	done.Result, done.Usage = `{"duration":3}`, usage
	return &done
}

func entryOf(job *jobs.Record, attempt int, nanos int64, at time.Time) *store.UsageEntry {
	return &store.UsageEntry{JobID: job.ID, Attempt: attempt, Tenant: job.Tenant, Application: job.Application,
		Service: job.Service, Provider: "sandbox-fast", Unit: "minute", Quantity: 0.05, Native: `{"media_seconds":3}`,
		CostNanos: nanos, Currency: "USD", PriceVersion: "v1", BilledAt: at}
}

func TestUsageLedgerIsWrittenWithTheJobOnceAnAttempt(t *testing.T) {
	for _, budgeted := range []bool{true, false} {
		t.Run(fmt.Sprintf("budgeted=%v", budgeted), func(t *testing.T) {
			testUsageLedgerIsWrittenWithTheJobOnceAnAttempt(t, budgeted)
		})
	}
}

// testUsageLedgerIsWrittenWithTheJobOnceAnAttempt runs the test for jobs
// with budget reservations to settle and without (one statement on
// PostgreSQL).
func testUsageLedgerIsWrittenWithTheJobOnceAnAttempt(t *testing.T, budgeted bool) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		job := newJob()
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		usage := `{"unit":"minute","quantity":0.05}`
		at := time.Now().Truncate(time.Millisecond)
		entry := entryOf(job, 1, 300000, at)
		entry.Unbudgeted = !budgeted
		require.NoError(t, s.Jobs.SaveJobUsage(ctx, completed(job, 3, usage), entry))

		// A retried write (same revision) changes nothing, the entry neither.
		retry := entryOf(job, 1, 999, at.Add(time.Minute))
		retry.Unbudgeted = !budgeted
		require.NoError(t, s.Jobs.SaveJobUsage(ctx, completed(job, 3, usage), retry))

		got, err := s.Jobs.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusCompleted, got.Status)
		require.Equal(t, usage, got.Usage)
		entries, err := s.Usage.UsageEntries(ctx, job.ID)
		require.NoError(t, err)
		require.Len(t, entries, 1)
		require.Equal(t, int64(300000), entries[0].CostNanos)
		require.Equal(t, `{"media_seconds":3}`, entries[0].Native)
		require.WithinDuration(t, at, entries[0].BilledAt, time.Millisecond)
		events, err := s.Jobs.JobEvents(ctx, job.ID, 0, 10)
		require.NoError(t, err)
		require.Len(t, events, 1, "one completion, recorded once")
		require.Equal(t, 1, events[0].Seq)

		page, _, err := s.Jobs.ListJobs(ctx, store.JobFilter{Tenant: job.Tenant}, 0, 100)
		require.NoError(t, err)
		var listed bool
		for _, r := range page {
			if r.ID == job.ID {
				listed = true
				require.Equal(t, usage, r.Usage, "listings carry the usage")
			}
		}
		require.True(t, listed)
	})
}

func TestUsageSumsAreExact(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		tenant := "usage-" + newJob().ID
		start := time.Now().UTC().Truncate(time.Second)
		for i := range 1000 {
			job := newJob()
			job.Tenant = tenant
			job.Application = []string{"web", "mobile"}[i%2]
			require.NoError(t, s.Jobs.InsertJob(ctx, job))
			// 0.1 USD + 1 nano: floats would drift over a thousand.
			require.NoError(t, s.Jobs.SaveJobUsage(ctx, completed(job, 3, `{}`), entryOf(job, 1, 100_000_001, start.Add(time.Duration(i)*time.Millisecond))))
		}
		other := newJob()
		require.NoError(t, s.Jobs.InsertJob(ctx, other))
		require.NoError(t, s.Jobs.SaveJobUsage(ctx, completed(other, 3, `{}`), entryOf(other, 1, 5, start)))

		sums, err := s.Usage.SumUsage(ctx, store.UsageFilter{Tenant: tenant, From: start, To: start.Add(time.Hour)})
		require.NoError(t, err)
		require.Equal(t, []store.UsageSum{{Service: jobs.Transcriptions, Unit: "minute", Currency: "USD",
			Entries: 1000, Quantity: sums[0].Quantity, CostNanos: 100_000_001_000}}, sums)
		require.InDelta(t, 50, sums[0].Quantity, 1e-6)

		web := "web"
		sums, err = s.Usage.SumUsage(ctx, store.UsageFilter{Tenant: tenant, Application: &web, From: start, To: start.Add(time.Hour)})
		require.NoError(t, err)
		require.Equal(t, int64(500), sums[0].Entries)
		require.Equal(t, int64(50_000_000_500), sums[0].CostNanos)

		sums, err = s.Usage.SumUsage(ctx, store.UsageFilter{Tenant: tenant, From: start, To: start.Add(500 * time.Millisecond)})
		require.NoError(t, err)
		require.Equal(t, int64(500), sums[0].Entries, "billed_at bounds the period, To excluded")
	})
}
