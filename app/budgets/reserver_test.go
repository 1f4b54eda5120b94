package budgets_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/budgets"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// A refusal is an *Exceeded that names the budget, and matches
// jobs.ErrBudgetExceeded, which is all the budget activity knows of it.
func TestReserveRefusalMatchesTheJobModelsError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.SQLite(t)
	tenant := &store.Tenant{ID: "acme-" + uuid.NewString()[:6],
		Budgets: []store.Budget{{ID: "day-minute", Period: store.PeriodDay, Unit: "minute", Limit: 10e9}}}
	require.NoError(t, st.Routing.CreateTenant(ctx, tenant))
	now := time.Now().UTC()
	_, err := st.Usage.ReserveBudget(ctx, uuid.NewString(), tenant.ID, []store.BudgetCharge{{Budget: tenant.Budgets[0], Amount: 10e9}}, now)
	require.NoError(t, err)

	r := &budgets.Reserver{Store: st.Usage, Metrics: metrics.New()}
	err = r.Reserve(ctx, tenant, jobs.Reservation{JobID: uuid.NewString(), Service: jobs.Transcriptions}, now)
	require.ErrorIs(t, err, jobs.ErrBudgetExceeded)
	var exceeded *budgets.Exceeded
	require.True(t, errors.As(err, &exceeded))
	require.Equal(t, "day-minute", exceeded.Budget.ID)
}

// A budget naming an API key covers that key's jobs only; with an
// application too, the jobs of both.
func TestBudgetsOfAKeyCoverItsJobsOnly(t *testing.T) {
	t.Parallel()
	keyA, keyB, web := "aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "web"
	tenant := &store.Tenant{ID: "acme", Budgets: []store.Budget{
		{ID: "a", APIKey: &keyA, Period: store.PeriodDay, Unit: "minute", Limit: 10e9},
		{ID: "a-web", APIKey: &keyA, Application: &web, Period: store.PeriodDay, Unit: "minute", Limit: 10e9},
		{ID: "web", Application: &web, Period: store.PeriodDay, Unit: "minute", Limit: 10e9},
	}}
	r := &budgets.Reserver{}
	cases := []struct {
		application, key string
		budgets          []string
	}{
		{"", "", nil},
		{"", keyB, nil},
		{"", keyA, []string{"a"}},
		{web, keyA, []string{"a", "a-web", "web"}},
		{web, keyB, []string{"web"}},
		{web, "", []string{"web"}},
	}
	for _, c := range cases {
		var ids []string
		for _, charge := range r.Charges(tenant, jobs.Reservation{JobID: "job", Application: c.application, APIKey: c.key, Service: jobs.Transcriptions}) {
			ids = append(ids, charge.Budget.ID)
		}
		require.Equal(t, c.budgets, ids, "a job of application %q by key %q", c.application, c.key)
		require.Equal(t, len(c.budgets) > 0, budgets.Applies(tenant, c.application, c.key), "a job of application %q by key %q", c.application, c.key)
	}
}

// A key's used-up budget refuses the key's jobs; the same tenant's other
// callers go on.
func TestReserveRefusesTheKeyWhoseBudgetIsUsedUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.SQLite(t)
	key := "aaaaaaaaaaaaaaaa"
	tenant := &store.Tenant{ID: "acme-" + uuid.NewString()[:6],
		Budgets: []store.Budget{{ID: "key-minute", APIKey: &key, Period: store.PeriodDay, Unit: "minute", Limit: 10e9}}}
	require.NoError(t, st.Routing.CreateTenant(ctx, tenant))
	now := time.Now().UTC()
	_, err := st.Usage.ReserveBudget(ctx, uuid.NewString(), tenant.ID, []store.BudgetCharge{{Budget: tenant.Budgets[0], Amount: 10e9}}, now)
	require.NoError(t, err)

	r := &budgets.Reserver{Store: st.Usage, Metrics: metrics.New()}
	err = r.Reserve(ctx, tenant, jobs.Reservation{JobID: uuid.NewString(), APIKey: key, Service: jobs.Transcriptions}, now)
	var exceeded *budgets.Exceeded
	require.ErrorAs(t, err, &exceeded)
	require.Equal(t, "key-minute", exceeded.Budget.ID)
	require.NoError(t, r.Reserve(ctx, tenant, jobs.Reservation{JobID: uuid.NewString(), APIKey: "bbbbbbbbbbbbbbbb", Service: jobs.Transcriptions}, now))
	require.NoError(t, r.Reserve(ctx, tenant, jobs.Reservation{JobID: uuid.NewString(), Service: jobs.Transcriptions}, now))
}
