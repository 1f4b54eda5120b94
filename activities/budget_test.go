package activities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

type tenantsByID map[string]*store.Tenant

func (t tenantsByID) GetTenant(_ context.Context, id string) (*store.Tenant, error) {
	if tenant, ok := t[id]; ok {
		return tenant, nil
	}
	return nil, store.ErrNotFound
}

// fakeReserver records reservations, refusing them with refusal, and
// the jobs whose reservations were released.
type fakeReserver struct {
	got      []jobs.Reservation
	refusal  error
	released []string
}

func (r *fakeReserver) Release(_ context.Context, jobID string) error {
	r.released = append(r.released, jobID)
	return nil
}

func (r *fakeReserver) Reserve(_ context.Context, _ *store.Tenant, j jobs.Reservation, _ time.Time) error {
	r.got = append(r.got, j)
	return r.refusal
}

// The activity reaches the application layer's reserver through the
// interface it declares: an estimate goes in, a refusal matching
// jobs.ErrBudgetExceeded comes out as the job's BUDGET_EXCEEDED.
func TestReserveBudgetThroughItsInterface(t *testing.T) {
	t.Parallel()
	tenants := tenantsByID{"acme": {ID: "acme"}}
	in := activities.BudgetInput{JobID: "job-1", Tenant: "acme", Application: "web", Service: jobs.Translations,
		Input: json.RawMessage(`{"type":"text","content":"Grüße","target_language":"en"}`)}

	r := &fakeReserver{}
	out, err := (&activities.Budgets{Tenants: tenants, Reserver: r}).ReserveBudget(context.Background(), in)
	require.NoError(t, err)
	require.Nil(t, out.Error)
	require.Len(t, r.got, 1)
	require.Equal(t, "job-1", r.got[0].JobID)
	require.Equal(t, "web", r.got[0].Application)
	require.True(t, r.got[0].Known)
	require.EqualValues(t, 5, *r.got[0].Usage.Characters)

	r.refusal = fmt.Errorf("budget day of tenant is used up: %w", jobs.ErrBudgetExceeded)
	out, err = (&activities.Budgets{Tenants: tenants, Reserver: r}).ReserveBudget(context.Background(), in)
	require.NoError(t, err, "a refusal fails the job, not the activity")
	require.Equal(t, jobs.CodeBudgetExceeded, out.Error.Code)
	require.Contains(t, out.Error.Message, "budget day of tenant is used up")

	r.refusal = fmt.Errorf("database down")
	_, err = (&activities.Budgets{Tenants: tenants, Reserver: r}).ReserveBudget(context.Background(), in)
	require.EqualError(t, err, "database down", "any other error is worth a retry")

	in.Tenant = "gone"
	out, err = (&activities.Budgets{Tenants: tenants, Reserver: r}).ReserveBudget(context.Background(), in)
	require.NoError(t, err)
	require.Nil(t, out.Error, "a tenant without a record has no budgets")
}
