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
