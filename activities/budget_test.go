package activities_test

import (
	"context"
	"encoding/json"
	"errors"
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

// jobsByID serves jobs' records, counting the reads.
type jobsByID struct {
	records map[string]*jobs.Record
	err     error
	reads   int
}

func (j *jobsByID) GetJob(_ context.Context, id string) (*jobs.Record, error) {
	j.reads++
	if j.err != nil {
		return nil, j.err
	}
	if r, ok := j.records[id]; ok {
		return r, nil
	}
	return nil, store.ErrNotFound
}

func (j *jobsByID) GetTombstone(context.Context, string) (*jobs.Tombstone, error) {
	return nil, store.ErrNotFound
}

// BudgetInput carries no caller (it is recorded in workflow histories):
// when a budget of the tenant names an API key, the activity reads the
// job's record to learn its key; otherwise it reads nothing.
func TestReserveBudgetReadsTheJobsKeyWhenABudgetNamesOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := "aaaaaaaaaaaaaaaa"
	tenants := tenantsByID{
		"acme":  {ID: "acme", Budgets: []store.Budget{{ID: "ci", APIKey: &key, Period: store.PeriodDay, Unit: "minute", Limit: 1e9}}},
		"plain": {ID: "plain", Budgets: []store.Budget{{ID: "day", Period: store.PeriodDay, Unit: "minute", Limit: 1e9}}},
	}
	seconds := 90.0
	in := activities.BudgetInput{JobID: "job-1", Tenant: "acme", Service: jobs.Transcriptions,
		Input: json.RawMessage(`{"type":"audio","url":"https://example.test/a.wav"}`), MediaSeconds: &seconds}
	records := &jobsByID{records: map[string]*jobs.Record{
		"job-1": {ID: "job-1", Tenant: "acme", UserID: jobs.KeyCaller(key)},
		"job-2": {ID: "job-2", Tenant: "acme", UserID: "alice"},
	}}
	r := &fakeReserver{}
	// The worker's activities read the jobs webhooks render.
	steps := activities.New(activities.Deps{Tenants: tenants, Jobs: records, Budgets: r}).Budgets

	out, err := steps.ReserveBudget(ctx, in)
	require.NoError(t, err)
	require.Nil(t, out.Error)
	require.Equal(t, key, r.got[0].APIKey, "the key the job's record names")
	require.True(t, r.got[0].Known)
	require.Equal(t, 90.0, *r.got[0].Usage.MediaSeconds, "the media's duration")

	in.JobID = "job-2"
	_, err = steps.ReserveBudget(ctx, in)
	require.NoError(t, err)
	require.Empty(t, r.got[1].APIKey, "a token's job has no key")

	in.JobID = "deleted"
	_, err = steps.ReserveBudget(ctx, in)
	require.NoError(t, err)
	require.Empty(t, r.got[2].APIKey, "a job without a record has none")
	require.Equal(t, 3, records.reads)

	in.Tenant = "plain"
	_, err = steps.ReserveBudget(ctx, in)
	require.NoError(t, err)
	require.Equal(t, 3, records.reads, "no budget names a key: nothing read")

	in.Tenant = "acme"
	records.err = errors.New("database down")
	_, err = steps.ReserveBudget(ctx, in)
	require.EqualError(t, err, "database down", "retried, never reserved without the key")
	require.Len(t, r.got, 4)

	_, err = (&activities.Budgets{Tenants: tenants, Reserver: r}).ReserveBudget(ctx, in)
	require.Error(t, err, "a worker that reads no jobs cannot learn the key")
	require.Len(t, r.got, 4)
}

// An llm-task's estimate allows for its options' max_tokens, which the
// activity reads from the job's record (BudgetInput has no options), for
// a tenant with budgets.
func TestReserveBudgetEstimatesAnLLMTaskByItsMaxTokens(t *testing.T) {
	t.Parallel()
	tenants := tenantsByID{
		"acme":  {ID: "acme", Budgets: []store.Budget{{ID: "day", Period: store.PeriodDay, Unit: "usd", Limit: 100}}},
		"plain": {ID: "plain"},
	}
	records := &jobsByID{records: map[string]*jobs.Record{
		"short": {ID: "short", Tenant: "acme", Options: `{"max_tokens":16}`},
		"plain": {ID: "plain", Tenant: "acme"},
	}}
	r := &fakeReserver{}
	steps := activities.New(activities.Deps{Tenants: tenants, Jobs: records, Budgets: r}).Budgets
	in := activities.BudgetInput{JobID: "short", Tenant: "acme", Service: jobs.LLMTasks,
		Input: json.RawMessage(`{"type":"text","text":"Temporal keeps workflows durable.","prompt":"Summarise."}`)}
	for _, id := range []string{"short", "plain", "deleted"} {
		in.JobID = id
		_, err := steps.ReserveBudget(context.Background(), in)
		require.NoError(t, err)
	}
	require.Len(t, r.got, 3)
	require.EqualValues(t, 16, *r.got[0].Usage.OutputTokens, "max_tokens bounds the answer")
	require.EqualValues(t, jobs.DefaultOutputTokens, *r.got[1].Usage.OutputTokens, "else the default")
	require.EqualValues(t, jobs.DefaultOutputTokens, *r.got[2].Usage.OutputTokens)
	require.Equal(t, 3, records.reads)

	in.Tenant, in.JobID = "plain", "short"
	_, err := steps.ReserveBudget(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, 3, records.reads, "a tenant without budgets: nothing read")
}
