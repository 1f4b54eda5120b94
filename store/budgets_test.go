package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// minuteBudget is a quantity budget of limit minutes a day.
func minuteBudget(limit int64, thresholds ...int) store.Budget {
	return store.Budget{ID: "b-" + uuid.NewString()[:8], Period: store.PeriodDay, Unit: "minute", Limit: limit * 1e9, Thresholds: thresholds}
}

func TestConcurrentReservationsNeverPassTheLimit(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		tenant := "budget-" + uuid.NewString()[:8]
		b := minuteBudget(10, 50, 80, 100)
		now := time.Now()
		var (
			mu      sync.Mutex
			ok      int
			crossed []int
			wg      sync.WaitGroup
		)
		for range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := s.Usage.ReserveBudget(ctx, uuid.NewString(), tenant, []store.BudgetCharge{{Budget: b, Amount: 1e9}}, now)
				require.NoError(t, err)
				mu.Lock()
				defer mu.Unlock()
				if out.OK {
					ok++
				} else {
					require.Equal(t, b.ID, out.Exceeded.ID)
				}
				for _, c := range out.Crossed {
					crossed = append(crossed, c.Threshold)
				}
			}()
		}
		wg.Wait()
		require.Equal(t, 10, ok)
		require.ElementsMatch(t, []int{50, 80, 100}, crossed, "each threshold once")
		used, err := s.Usage.BudgetUsed(ctx, tenant, b, now)
		require.NoError(t, err)
		require.Equal(t, store.BudgetUse{Reserved: 10e9}, used)
	})
}

func TestBudgetSettlementAndRelease(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		tenant := "budget-" + uuid.NewString()[:8]
		b := minuteBudget(3)
		usd := store.Budget{ID: "usd", Period: store.PeriodMonth, Currency: "USD", Limit: 1e9}
		now := time.Now()
		charges := func(minutes int64) []store.BudgetCharge {
			return []store.BudgetCharge{{Budget: b, Amount: minutes * 1e9}, {Budget: usd, Amount: 1000}}
		}

		// A billed job settles to the ledger's count, not the estimate.
		job := newJob()
		job.Tenant = tenant
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		out, err := s.Usage.ReserveBudget(ctx, job.ID, tenant, charges(1), now)
		require.NoError(t, err)
		require.True(t, out.OK)
		// A repeat (an activity retried, a reservation made at create) keeps it.
		out, err = s.Usage.ReserveBudget(ctx, job.ID, tenant, charges(1), now)
		require.NoError(t, err)
		require.True(t, out.OK)
		entry := entryOf(job, 1, 300, now)
		entry.Quantity = 1.5
		require.NoError(t, s.Jobs.SaveJobUsage(ctx, completed(job, 3, `{}`), entry))
		used, err := s.Usage.BudgetUsed(ctx, tenant, b, now)
		require.NoError(t, err)
		require.Equal(t, store.BudgetUse{Settled: 1.5e9}, used)
		cost, err := s.Usage.BudgetUsed(ctx, tenant, usd, now)
		require.NoError(t, err)
		require.Equal(t, store.BudgetUse{Settled: 300}, cost)
		rs, err := s.Usage.BudgetReservations(ctx, job.ID)
		require.NoError(t, err)
		require.Len(t, rs, 2)
		require.Equal(t, "settled", rs[0].State)
		require.Equal(t, int64(1.5e9), rs[0].Settled)

		// A job that fails unbilled gives its reservation back.
		failed := uuid.NewString()
		out, err = s.Usage.ReserveBudget(ctx, failed, tenant, charges(1), now)
		require.NoError(t, err)
		require.True(t, out.OK)
		out, err = s.Usage.ReserveBudget(ctx, uuid.NewString(), tenant, charges(1), now)
		require.NoError(t, err)
		require.False(t, out.OK, "1.5 settled + 1 reserved + 1 is over 3")
		require.Equal(t, b.ID, out.Exceeded.ID)
		require.Equal(t, int64(2.5e9), out.Spent)
		require.NoError(t, s.Usage.ReleaseBudget(ctx, failed))
		require.NoError(t, s.Usage.ReleaseBudget(ctx, failed))
		used, err = s.Usage.BudgetUsed(ctx, tenant, b, now)
		require.NoError(t, err)
		require.Equal(t, store.BudgetUse{Settled: 1.5e9}, used)
		out, err = s.Usage.ReserveBudget(ctx, uuid.NewString(), tenant, charges(1), now)
		require.NoError(t, err)
		require.True(t, out.OK)

		// The next period starts from zero.
		out, err = s.Usage.ReserveBudget(ctx, uuid.NewString(), tenant, charges(3), now.Add(24*time.Hour))
		require.NoError(t, err)
		require.True(t, out.OK)
	})
}

func TestBudgetCounterStartsFromTheLedger(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		tenant := "budget-" + uuid.NewString()[:8]
		now := time.Now()
		job := newJob()
		job.Tenant = tenant
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		entry := entryOf(job, 1, 300, now)
		entry.Quantity = 2
		require.NoError(t, s.Jobs.SaveJobUsage(ctx, completed(job, 3, `{}`), entry))

		b := minuteBudget(3)
		out, err := s.Usage.ReserveBudget(ctx, uuid.NewString(), tenant, []store.BudgetCharge{{Budget: b, Amount: 2e9}}, now)
		require.NoError(t, err)
		require.False(t, out.OK, "the 2 minutes billed before the budget count")
		out, err = s.Usage.ReserveBudget(ctx, uuid.NewString(), tenant, []store.BudgetCharge{{Budget: b, Amount: 1e9}}, now)
		require.NoError(t, err)
		require.True(t, out.OK)
	})
}

func TestTenantBudgetsRoundTrip(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		app := "web"
		b := minuteBudget(10, 50, 100)
		b.Application = &app
		tenant := &store.Tenant{ID: "budget-" + uuid.NewString()[:8], Budgets: []store.Budget{b}, NotificationURL: "https://hooks.example/b"}
		require.NoError(t, s.Routing.CreateTenant(ctx, tenant))
		got, err := s.Routing.GetTenant(ctx, tenant.ID)
		require.NoError(t, err)
		require.Equal(t, tenant.Budgets, got.Budgets)
		require.Equal(t, "https://hooks.example/b", got.NotificationURL)
		got, err = s.Routing.UpdateTenant(ctx, tenant.ID, func(t *store.Tenant) error { t.Budgets = nil; return nil })
		require.NoError(t, err)
		require.Empty(t, got.Budgets)
		got, err = s.Routing.GetTenant(ctx, tenant.ID)
		require.NoError(t, err)
		require.Empty(t, got.Budgets)
	})
}

func TestJobsThatNeverRunGiveTheirReservationsBack(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		tenant := "budget-" + uuid.NewString()[:8]
		b := minuteBudget(3)
		now := time.Now()
		reserve := func(jobID string) {
			t.Helper()
			out, err := s.Usage.ReserveBudget(ctx, jobID, tenant, []store.BudgetCharge{{Budget: b, Amount: 2e9}}, now)
			require.NoError(t, err)
			require.True(t, out.OK)
		}
		used := func() store.BudgetUse {
			t.Helper()
			u, err := s.Usage.BudgetUsed(ctx, tenant, b, now)
			require.NoError(t, err)
			return u
		}

		// A job whose workflow could never be started.
		refused := newJob()
		refused.Tenant = tenant
		require.NoError(t, s.Jobs.InsertJob(ctx, refused))
		reserve(refused.ID)
		require.NoError(t, s.Jobs.FailJobStart(ctx, refused.ID, "JOB_NOT_STARTED", "refused", now))
		require.Equal(t, store.BudgetUse{}, used())

		// A job deleted before it ran.
		deleted := newJob()
		deleted.Tenant = tenant
		require.NoError(t, s.Jobs.InsertJob(ctx, deleted))
		reserve(deleted.ID)
		_, _, err := s.Jobs.DeleteJob(ctx, deleted.ID, "tester", now)
		require.NoError(t, err)
		require.Equal(t, store.BudgetUse{}, used())
		rs, err := s.Usage.BudgetReservations(ctx, deleted.ID)
		require.NoError(t, err)
		require.Len(t, rs, 1)
		require.Equal(t, "released", rs[0].State)
	})
}

func TestConcurrentReservationsOfOneJobCountOnce(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		tenant := "budget-" + uuid.NewString()[:8]
		b := minuteBudget(10)
		now := time.Now()
		job := uuid.NewString()
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				out, err := s.Usage.ReserveBudget(ctx, job, tenant, []store.BudgetCharge{{Budget: b, Amount: 1e9}}, now)
				assert.NoError(t, err)
				assert.True(t, out.OK)
			})
		}
		wg.Wait()
		used, err := s.Usage.BudgetUsed(ctx, tenant, b, now)
		require.NoError(t, err)
		require.Equal(t, store.BudgetUse{Reserved: 1e9}, used, "one job, one reservation")
		require.NoError(t, s.Usage.ReleaseBudget(ctx, job))
		used, err = s.Usage.BudgetUsed(ctx, tenant, b, now)
		require.NoError(t, err)
		require.Equal(t, store.BudgetUse{}, used, "released in full")

		// A deleted job reserves nothing.
		deleted := newJob()
		deleted.Tenant = tenant
		require.NoError(t, s.Jobs.InsertJob(ctx, deleted))
		_, _, err = s.Jobs.DeleteJob(ctx, deleted.ID, "tester", now)
		require.NoError(t, err)
		out, err := s.Usage.ReserveBudget(ctx, deleted.ID, tenant, []store.BudgetCharge{{Budget: b, Amount: 1e9}}, now)
		require.NoError(t, err)
		require.True(t, out.OK)
		used, err = s.Usage.BudgetUsed(ctx, tenant, b, now)
		require.NoError(t, err)
		require.Equal(t, store.BudgetUse{}, used)
	})
}

// reservedJob is a job of a tenant of its own that reserved a minute of
// a budget of three a day, now.
func reservedJob(ctx context.Context, t *testing.T, s *store.Store) (*jobs.Record, store.Budget, time.Time) {
	t.Helper()
	b := minuteBudget(3)
	now := time.Now()
	job := newJob()
	job.Tenant = "budget-" + uuid.NewString()[:8]
	require.NoError(t, s.Jobs.InsertJob(ctx, job))
	out, err := s.Usage.ReserveBudget(ctx, job.ID, job.Tenant, []store.BudgetCharge{{Budget: b, Amount: 1e9}}, now)
	require.NoError(t, err)
	require.True(t, out.OK)
	return job, b, now
}

func TestABillReleasedEarlierStillCounts(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		job, b, now := reservedJob(ctx, t, s)
		tenant := job.Tenant
		// Released (the job was given up for failed), then its call's bill
		// arrives after all.
		require.NoError(t, s.Usage.ReleaseBudget(ctx, job.ID))
		entry := entryOf(job, 1, 300, now)
		entry.Quantity = 2
		require.NoError(t, s.Jobs.SaveJobUsage(ctx, completed(job, 3, `{}`), entry))
		used, err := s.Usage.BudgetUsed(ctx, tenant, b, now)
		require.NoError(t, err)
		require.Equal(t, store.BudgetUse{Settled: 2e9}, used, "the money was spent")
		rs, err := s.Usage.BudgetReservations(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, "settled", rs[0].State)
	})
}

// A cancel that lands after a short call projected its completion
// (docs/api.md, Usage and cost): the job ends cancelled, and what its
// provider billed stays in the ledger and in the budget.
func TestACancelAfterTheBillKeepsIt(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		job, b, now := reservedJob(ctx, t, s)
		tenant := job.Tenant
		entry := entryOf(job, 1, 300, now)
		entry.Quantity = 2
		billed := completed(job, 2, `{"unit":"minute","quantity":2}`)
		require.NoError(t, s.Jobs.SaveJobUsage(ctx, billed, entry))

		// The workflow's cancellation: its snapshot never had the usage
		// nor the result the call's activity projected.
		cancelled := *billed
		done := time.Now().UTC()
		cancelled.Status, cancelled.Revision, cancelled.CompletedAt = jobs.StatusFailed, 4, &done
		cancelled.Result, cancelled.Usage = "", ""
		cancelled.ErrorCode, cancelled.ErrorMessage = jobs.CodeCancelled, "the job was cancelled"
		require.NoError(t, s.Jobs.SaveJob(ctx, &cancelled))
		require.NoError(t, s.Usage.ReleaseBudget(ctx, job.ID), "the cancelled job ends unbilled as far as its workflow knows")

		got, err := s.Jobs.GetJob(ctx, job.ID)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusFailed, got.Status)
		require.Equal(t, jobs.CodeCancelled, got.ErrorCode)
		require.Empty(t, got.Usage, "the billed usage is no longer the job's: a failed job's document has none")
		entries, err := s.Usage.UsageEntries(ctx, job.ID)
		require.NoError(t, err)
		require.Len(t, entries, 1, "the provider was paid")
		used, err := s.Usage.BudgetUsed(ctx, tenant, b, now)
		require.NoError(t, err)
		require.Equal(t, store.BudgetUse{Settled: 2e9}, used, "the release gives back nothing already settled")
	})
}

func TestBudgetAppliesToItsApplicationAndKey(t *testing.T) {
	t.Parallel()
	web, key := "web", "aaaaaaaaaaaaaaaa"
	cases := []struct {
		budget           store.Budget
		application, api string
		applies          bool
	}{
		{store.Budget{}, "", "", true},
		{store.Budget{}, "web", key, true},
		{store.Budget{APIKey: &key}, "web", key, true},
		{store.Budget{APIKey: &key}, "", "", false},
		{store.Budget{APIKey: &key}, "", "bbbbbbbbbbbbbbbb", false},
		{store.Budget{Application: &web, APIKey: &key}, "web", key, true},
		{store.Budget{Application: &web, APIKey: &key}, "app", key, false},
		{store.Budget{Application: &web, APIKey: &key}, "web", "", false},
	}
	for _, c := range cases {
		require.Equal(t, c.applies, c.budget.Applies(c.application, c.api), "budget %+v, job of %q by key %q", c.budget, c.application, c.api)
	}
}

// A budget naming an API key counts that key's ledger entries only,
// from the ledger while its period has no counter, and from it when the
// counter starts; a job of the key then settles into it.
func TestKeyBudgetCountsItsKeysLedgerEntries(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		tenant := "budget-" + uuid.NewString()[:8]
		keyA, keyB, web := "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "web"
		now := time.Now()
		bill := func(key, application string, minutes float64) *jobs.Record {
			t.Helper()
			job := newJob()
			job.Tenant, job.Application = tenant, application
			if key != "" {
				job.UserID = jobs.KeyCaller(key)
			}
			require.NoError(t, s.Jobs.InsertJob(ctx, job))
			entry := entryOf(job, 1, 100, now)
			entry.Quantity, entry.APIKey = minutes, key
			require.NoError(t, s.Jobs.SaveJobUsage(ctx, completed(job, 3, `{}`), entry))
			return job
		}
		bill(keyA, "", 2)
		bill(keyA, web, 1)
		bill(keyB, "", 5)
		bill("", "", 4)

		ofA := minuteBudget(4)
		ofA.APIKey = &keyA
		ofAWeb := minuteBudget(4)
		ofAWeb.APIKey, ofAWeb.Application = &keyA, &web
		ofB := minuteBudget(10)
		ofB.APIKey = &keyB
		tenantWide := minuteBudget(100)
		for b, want := range map[*store.Budget]int64{&ofA: 3e9, &ofAWeb: 1e9, &ofB: 5e9, &tenantWide: 12e9} {
			used, err := s.Usage.BudgetUsed(ctx, tenant, *b, now)
			require.NoError(t, err)
			require.Equal(t, store.BudgetUse{Settled: want}, used, "budget of key %v, application %v", b.APIKey, b.Application)
		}

		// The counter starts from key A's 3 minutes: 2 more do not fit 4.
		out, err := s.Usage.ReserveBudget(ctx, uuid.NewString(), tenant, []store.BudgetCharge{{Budget: ofA, Amount: 2e9}}, now)
		require.NoError(t, err)
		require.False(t, out.OK)
		require.Equal(t, int64(3e9), out.Spent)

		// A job of key A reserves a minute, and settles what it billed.
		job := newJob()
		job.Tenant, job.UserID = tenant, jobs.KeyCaller(keyA)
		require.NoError(t, s.Jobs.InsertJob(ctx, job))
		out, err = s.Usage.ReserveBudget(ctx, job.ID, tenant, []store.BudgetCharge{{Budget: ofA, Amount: 1e9}}, now)
		require.NoError(t, err)
		require.True(t, out.OK)
		used, err := s.Usage.BudgetUsed(ctx, tenant, ofA, now)
		require.NoError(t, err)
		require.Equal(t, store.BudgetUse{Settled: 3e9, Reserved: 1e9}, used)
		entry := entryOf(job, 1, 100, now)
		entry.Quantity, entry.APIKey = 0.5, keyA
		require.NoError(t, s.Jobs.SaveJobUsage(ctx, completed(job, 3, `{}`), entry))
		used, err = s.Usage.BudgetUsed(ctx, tenant, ofA, now)
		require.NoError(t, err)
		require.Equal(t, store.BudgetUse{Settled: 3.5e9}, used)
		used, err = s.Usage.BudgetUsed(ctx, tenant, ofB, now)
		require.NoError(t, err)
		require.Equal(t, store.BudgetUse{Settled: 5e9}, used, "key B's budget never saw key A's job")
	})
}

func TestTenantKeyBudgetsRoundTrip(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		key := "aaaaaaaaaaaaaaaa"
		b := minuteBudget(10)
		b.APIKey = &key
		tenant := &store.Tenant{ID: "budget-" + uuid.NewString()[:8], Budgets: []store.Budget{b}}
		require.NoError(t, s.Routing.CreateTenant(ctx, tenant))
		got, err := s.Routing.GetTenant(ctx, tenant.ID)
		require.NoError(t, err)
		require.Equal(t, tenant.Budgets, got.Budgets)
		require.Equal(t, key, *got.Budgets[0].APIKey)
	})
}

// A minute budget (an API key's tokens_per_minute) counts per clock
// minute, and its past minutes' counters are swept.
func TestMinuteBudgets(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		key := "aaaaaaaaaaaaaaaa"
		b := store.Budget{ID: "tokens_per_minute:" + key, APIKey: &key, Period: store.PeriodMinute, Unit: "token", Limit: 100e9}
		at := time.Date(2026, 12, 7, 10, 30, 5, 0, time.UTC)
		require.Equal(t, time.Date(2026, 12, 7, 10, 30, 0, 0, time.UTC), b.PeriodStart(at))
		require.Equal(t, time.Date(2026, 12, 7, 10, 31, 0, 0, time.UTC), b.PeriodEnd(b.PeriodStart(at)))
		reserve := func(job string, tokens int64, now time.Time) bool {
			out, err := s.Usage.ReserveBudget(ctx, job, "acme", []store.BudgetCharge{{Budget: b, Amount: tokens * 1e9}}, now)
			require.NoError(t, err)
			return out.OK
		}
		job := newJob()
		job.Service, job.UserID = jobs.LLMTasks, "key:"+key
		_, err := s.Jobs.CreateJob(ctx, job, &store.JobStart{Input: "{}", NextAttemptAt: job.CreatedAt})
		require.NoError(t, err)
		require.True(t, reserve(job.ID, 60, at))
		require.False(t, reserve(uuid.NewString(), 60, at.Add(5*time.Second)), "the same minute: 120 of 100")

		// Billed per request, the job settles to the tokens it reported.
		done := *job
		finished := at.Add(10 * time.Second)
		done.Status, done.Revision, done.CompletedAt, done.Result = jobs.StatusCompleted, 1, &finished, `{"content":"ok"}`
		require.NoError(t, s.Jobs.SaveJobUsage(ctx, &done, &store.UsageEntry{JobID: job.ID, Attempt: 1, Tenant: "acme", APIKey: key,
			Service: jobs.LLMTasks, Provider: "p", Unit: "request", Quantity: 1, Native: `{"input_tokens":4,"output_tokens":6}`, BilledAt: finished}))
		require.False(t, reserve(uuid.NewString(), 95, at.Add(15*time.Second)), "10 settled: 95 more do not fit 100")
		require.True(t, reserve(uuid.NewString(), 90, at.Add(16*time.Second)), "10 settled and 90 fit 100")
		require.True(t, reserve(uuid.NewString(), 60, at.Add(time.Minute)), "the next minute")
		n, err := s.Usage.DeleteMinuteBudgetCountersBefore(ctx, "tokens_per_minute:", at.Add(time.Minute).Truncate(time.Minute))
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "the 10:30 counter; 10:31's is kept")
	})
}
