package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// Days of the ledger usageLedger writes.
var (
	usageDay1 = time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	usageDay2 = usageDay1.AddDate(0, 0, 1)
	usageDay3 = usageDay1.AddDate(0, 0, 2)
)

// ledgerJob is a billed job of the usage ledger: its attempts' entries.
type ledgerJob struct {
	tenant, app string
	service     jobs.ServiceID
	attempts    []store.UsageEntry
}

// usageLedger writes two tenants' entries over two days (and one each
// side of [usageDay1, usageDay3)), two services, two currencies:
//
//	acme: 3 transcriptions on alpha, 0.1 USD each (web at day 1 00:00 and
//	      23:59:59.999, mobile at day 2 00:00); a translation on beta then
//	      gamma (no application), 0.02 + 0.03 EUR on day 2; 5 USD before
//	      and after the window
//	globex: a transcription on alpha, 0.7 USD, day 1; an llm-task on alpha,
//	      0.002 USD in tokens, day 2
func usageLedger(ctx context.Context, t *testing.T, s *store.Store) {
	t.Helper()
	minute := func(provider string, nanos int64, at time.Time) store.UsageEntry {
		return store.UsageEntry{Provider: provider, Unit: "minute", Quantity: 0.5, CostNanos: nanos, Currency: "USD", BilledAt: at}
	}
	ledger := []ledgerJob{
		{"acme", "web", jobs.Transcriptions, []store.UsageEntry{minute("alpha", 100_000_000, usageDay1)}},
		{"acme", "web", jobs.Transcriptions, []store.UsageEntry{minute("alpha", 100_000_000, usageDay2.Add(-time.Millisecond))}},
		{"acme", "mobile", jobs.Transcriptions, []store.UsageEntry{minute("alpha", 100_000_000, usageDay2)}},
		{"acme", "", jobs.Translations, []store.UsageEntry{
			{Provider: "beta", Unit: "character", Quantity: 1000, CostNanos: 20_000_000, Currency: "EUR", BilledAt: usageDay2.Add(12 * time.Hour)},
			{Provider: "gamma", Unit: "character", Quantity: 1000, CostNanos: 30_000_000, Currency: "EUR", BilledAt: usageDay2.Add(12*time.Hour + time.Minute)},
		}},
		{"acme", "web", jobs.Transcriptions, []store.UsageEntry{minute("alpha", 5_000_000_000, usageDay1.Add(-time.Millisecond))}},
		{"acme", "web", jobs.Transcriptions, []store.UsageEntry{minute("alpha", 5_000_000_000, usageDay3)}},
		{"globex", "", jobs.Transcriptions, []store.UsageEntry{minute("alpha", 700_000_000, usageDay1.Add(12*time.Hour))}},
		{"globex", "", jobs.LLMTasks, []store.UsageEntry{
			{Provider: "alpha", Unit: "token", Quantity: 1000, CostNanos: 2_000_000, Currency: "USD", BilledAt: usageDay2.Add(time.Hour)},
		}},
	}
	for _, lj := range ledger {
		job := newJob()
		job.Tenant, job.Application, job.Service = lj.tenant, lj.app, lj.service
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		for i, e := range lj.attempts {
			e.JobID, e.Attempt, e.Tenant, e.Application, e.Service = job.ID, i+1, job.Tenant, job.Application, job.Service
			e.Native, e.PriceVersion = "{}", "v1"
			require.NoError(t, s.Jobs.SaveJobUsage(ctx, completed(job, 3+i, `{}`), &e))
		}
	}
}

// report runs q over [usageDay1, usageDay3) and returns its rows and
// totals, the rows' quantities checked against quantities (when given)
// and every quantity cleared.
func report(ctx context.Context, t *testing.T, s *store.Store, q store.UsageQuery, quantities ...float64) ([]store.UsageRow, []store.UsageRow) {
	t.Helper()
	q.From, q.To = usageDay1, usageDay3
	r, err := s.Usage.UsageReport(ctx, q)
	require.NoError(t, err)
	if quantities != nil {
		require.Len(t, r.Rows, len(quantities))
		for i := range r.Rows {
			require.InDelta(t, quantities[i], r.Rows[i].Quantity, 1e-9, "row %d", i)
		}
	}
	for i := range r.Rows {
		r.Rows[i].Quantity = 0
	}
	for i := range r.Totals {
		r.Totals[i].Quantity = 0
	}
	return r.Rows, r.Totals
}

func TestUsageReportGroups(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		usageLedger(ctx, t, s)

		rows, totals := report(ctx, t, s, store.UsageQuery{Tenant: "acme"}, 2000, 1.5)
		require.Equal(t, []store.UsageRow{
			{Unit: "character", Currency: "EUR", Jobs: 1, Entries: 2, CostNanos: 50_000_000},
			{Unit: "minute", Currency: "USD", Jobs: 3, Entries: 3, CostNanos: 300_000_000},
		}, rows, "one row per currency; 3 × 0.1 USD is 0.3 exactly; the window's ends: From in, To out")
		require.Equal(t, rows, totals)

		rows, _ = report(ctx, t, s, store.UsageQuery{Tenant: "acme", GroupBy: []store.UsageKey{store.UsageByDay}})
		require.Equal(t, []store.UsageRow{
			{Day: "2026-11-25", Unit: "minute", Currency: "USD", Jobs: 2, Entries: 2, CostNanos: 200_000_000},
			{Day: "2026-11-26", Unit: "character", Currency: "EUR", Jobs: 1, Entries: 2, CostNanos: 50_000_000},
			{Day: "2026-11-26", Unit: "minute", Currency: "USD", Jobs: 1, Entries: 1, CostNanos: 100_000_000},
		}, rows, "days are UTC days: 23:59:59.999 is the day before")

		rows, _ = report(ctx, t, s, store.UsageQuery{Tenant: "acme", GroupBy: []store.UsageKey{store.UsageByService, store.UsageByProvider}})
		require.Equal(t, []store.UsageRow{
			{Service: jobs.Transcriptions, Provider: "alpha", Unit: "minute", Currency: "USD", Jobs: 3, Entries: 3, CostNanos: 300_000_000},
			{Service: jobs.Translations, Provider: "beta", Unit: "character", Currency: "EUR", Jobs: 1, Entries: 1, CostNanos: 20_000_000},
			{Service: jobs.Translations, Provider: "gamma", Unit: "character", Currency: "EUR", Jobs: 1, Entries: 1, CostNanos: 30_000_000},
		}, rows)

		rows, _ = report(ctx, t, s, store.UsageQuery{Tenant: "acme", GroupBy: []store.UsageKey{store.UsageByApplication}})
		require.Equal(t, []store.UsageRow{
			{Application: "", Unit: "character", Currency: "EUR", Jobs: 1, Entries: 2, CostNanos: 50_000_000},
			{Application: "mobile", Unit: "minute", Currency: "USD", Jobs: 1, Entries: 1, CostNanos: 100_000_000},
			{Application: "web", Unit: "minute", Currency: "USD", Jobs: 2, Entries: 2, CostNanos: 200_000_000},
		}, rows)

		rows, totals = report(ctx, t, s, store.UsageQuery{GroupBy: []store.UsageKey{store.UsageByTenant}})
		require.Equal(t, []store.UsageRow{
			{Tenant: "acme", Unit: "character", Currency: "EUR", Jobs: 1, Entries: 2, CostNanos: 50_000_000},
			{Tenant: "acme", Unit: "minute", Currency: "USD", Jobs: 3, Entries: 3, CostNanos: 300_000_000},
			{Tenant: "globex", Currency: "USD", Jobs: 2, Entries: 2, CostNanos: 702_000_000},
		}, rows, "every tenant; globex's minutes and tokens share no unit")
		require.Equal(t, []store.UsageRow{
			{Unit: "character", Currency: "EUR", Jobs: 1, Entries: 2, CostNanos: 50_000_000},
			{Currency: "USD", Jobs: 5, Entries: 5, CostNanos: 1_002_000_000},
		}, totals, "totals never add currencies")

		rows, _ = report(ctx, t, s, store.UsageQuery{Tenant: "globex", GroupBy: []store.UsageKey{store.UsageByUnit}}, 0.5, 1000)
		require.Equal(t, []store.UsageRow{
			{Unit: "minute", Currency: "USD", Jobs: 1, Entries: 1, CostNanos: 700_000_000},
			{Unit: "token", Currency: "USD", Jobs: 1, Entries: 1, CostNanos: 2_000_000},
		}, rows)
	})
}

func TestUsageReportFilters(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		usageLedger(ctx, t, s)

		rows, _ := report(ctx, t, s, store.UsageQuery{Tenant: "acme", Service: jobs.Translations, Provider: "gamma"})
		require.Equal(t, []store.UsageRow{{Unit: "character", Currency: "EUR", Jobs: 1, Entries: 1, CostNanos: 30_000_000}}, rows)

		web, none := "web", ""
		rows, _ = report(ctx, t, s, store.UsageQuery{Tenant: "acme", Application: &web})
		require.Equal(t, []store.UsageRow{{Unit: "minute", Currency: "USD", Jobs: 2, Entries: 2, CostNanos: 200_000_000}}, rows)
		rows, _ = report(ctx, t, s, store.UsageQuery{Application: &none, Service: jobs.Transcriptions})
		require.Equal(t, []store.UsageRow{{Unit: "minute", Currency: "USD", Jobs: 1, Entries: 1, CostNanos: 700_000_000}}, rows)

		rows, totals := report(ctx, t, s, store.UsageQuery{Tenant: "initech-" + uuid.NewString()[:8]})
		require.Empty(t, rows)
		require.Empty(t, totals)

		r, err := s.Usage.UsageReport(ctx, store.UsageQuery{Tenant: "acme", From: usageDay1.Add(-time.Millisecond), To: usageDay1.Add(time.Millisecond),
			GroupBy: []store.UsageKey{store.UsageByDay}})
		require.NoError(t, err)
		require.Len(t, r.Rows, 2, "a window across midnight")
		require.Equal(t, "2026-11-24", r.Rows[0].Day)
		require.Equal(t, "2026-11-25", r.Rows[1].Day)
	})
}

// TestUsageReportByAPIKey: entries remember the key that created their
// job, and a report groups by it ("" for a token's jobs).
func TestUsageReportByAPIKey(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		for i, key := range []string{"kkkkkkkkkkkkkkkk", "kkkkkkkkkkkkkkkk", ""} {
			job := newJob()
			job.Tenant = "acme"
			require.NoError(t, s.Jobs.InsertJob(ctx, job))
			e := store.UsageEntry{JobID: job.ID, Attempt: 1, Tenant: "acme", APIKey: key, Service: job.Service, Provider: "alpha",
				Unit: "minute", Quantity: 1, CostNanos: int64(i+1) * 100_000_000, Currency: "USD", Native: "{}", PriceVersion: "v1",
				BilledAt: usageDay1.Add(time.Duration(i) * time.Hour), Unbudgeted: i != 1} // both write paths of PostgreSQL
			require.NoError(t, s.Jobs.SaveJobUsage(ctx, completed(job, 3, `{}`), &e))
		}
		rows, _ := report(ctx, t, s, store.UsageQuery{Tenant: "acme", GroupBy: []store.UsageKey{store.UsageByAPIKey}})
		require.Equal(t, []store.UsageRow{
			{Unit: "minute", Currency: "USD", Jobs: 1, Entries: 1, CostNanos: 300_000_000},
			{APIKey: "kkkkkkkkkkkkkkkk", Unit: "minute", Currency: "USD", Jobs: 2, Entries: 2, CostNanos: 300_000_000},
		}, rows)
	})
}
