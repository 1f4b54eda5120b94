package jobops_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"

	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// serviceNow is the Service's clock in these tests: 52.911 s before the
// next minute.
var serviceNow = time.Date(2025, 3, 4, 5, 6, 7, 89_000_000, time.UTC)

// serviceCatalog has one provider, alpha, allowing two llm-tasks a minute.
const serviceCatalog = `
providers:
  - id: alpha
    name: Alpha
    adapter: sandbox
    services:
      llm-tasks:
        models: [model-a]
        limits: {requests_per_minute: 2, requests_per_day: 100, max_file_size_mb: 10, max_duration_seconds: 600}
        pricing: {unit: per_token, amount: 0.000002, currency: USD}
`

// starter is a Starter that records the starts offered to it.
type starter struct {
	lease time.Time
	err   error // returned by StartNow

	mu     sync.Mutex
	offers []offer
	shed   int // creates shed
}

type offer struct {
	start store.JobStart
	took  time.Duration
}

func (s *starter) Lease(string) time.Time { return s.lease }

func (s *starter) Offer(start store.JobStart, took time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offers = append(s.offers, offer{start, took})
}

func (s *starter) Shed(time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shed++
}

func (s *starter) StartNow(context.Context, string) error { return s.err }

func (s *starter) sheds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shed
}

func (s *starter) offered() []offer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]offer(nil), s.offers...)
}

// serviceBundle is a Service on a fresh SQLite store, a Temporal mock that
// expects no calls, and a recording starter.
type serviceBundle struct {
	svc     *jobops.Service
	store   *store.Store
	starter *starter
}

func fullConfig(t *testing.T) (jobops.Config, *store.Store, *starter) {
	t.Helper()
	st := storetest.SQLite(t)
	catalog, err := providers.ParseCatalog([]byte(serviceCatalog))
	require.NoError(t, err)
	s := &starter{lease: serviceNow.Add(30 * time.Second)}
	return jobops.Config{
		Jobs: st.Jobs, Tenants: st.Routing, Statuses: st.Routing, Policies: st.Routing, Rates: st.Routing,
		Catalog:  catalog,
		Temporal: mocks.NewClient(t),
		Starts:   s,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:      func() time.Time { return serviceNow },
	}, st, s
}

func setupService(t *testing.T) *serviceBundle {
	t.Helper()
	cfg, st, s := fullConfig(t)
	svc, err := jobops.New(cfg)
	require.NoError(t, err)
	return &serviceBundle{svc: svc, store: st, starter: s}
}

// llmTask is a valid llm-task request of tenant acme, user alice.
func llmTask(t *testing.T) jobops.SubmitRequest {
	t.Helper()
	svc, ok := jobs.LookupService("llm-tasks")
	require.True(t, ok)
	input := json.RawMessage(`{"type":"text","text":"The quick brown fox.","prompt":"Summarise the text."}`)
	spec, ok := jobs.ServiceOf(svc.ID)
	require.True(t, ok)
	parsed, err := spec.Parse(input, nil)
	require.NoError(t, err)
	return jobops.SubmitRequest{Service: svc, Requester: jobops.Requester{Tenant: "acme", User: "alice", Body: []byte("body")}, Input: input, Parsed: parsed}
}

func TestNewRequiresEveryDependency(t *testing.T) {
	t.Parallel()
	_, err := jobops.New(jobops.Config{})
	require.Error(t, err)
	for _, name := range []string{"Jobs", "Tenants", "Statuses", "Policies", "Rates", "Catalog", "Temporal", "Starts"} {
		require.ErrorContains(t, err, "Config."+name+" is required")
	}

	// Without its request counts, Submit could not refuse a provider at
	// its limit: the store that keeps them is required too.
	cfg, _, _ := fullConfig(t)
	cfg.Rates = nil
	_, err = jobops.New(cfg)
	require.EqualError(t, err, "jobops: Config.Rates is required")
}

func TestSubmitRecordsTheJobAndOffersItsStart(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	req := llmTask(t)
	req.Received = time.Now().Add(-time.Second)
	job, err := b.svc.Submit(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusPending, job.Status)
	require.Equal(t, serviceNow, job.CreatedAt)

	stored, err := b.store.Jobs.GetJob(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, job.ID, stored.ID)
	start, err := b.store.Jobs.GetJobStart(t.Context(), job.ID)
	require.NoError(t, err)
	require.True(t, start.NextAttemptAt.Equal(b.starter.lease), "the start is leased to this process")

	offers := b.starter.offered()
	require.Len(t, offers, 1)
	require.Equal(t, job.ID, offers[0].start.JobID)
	require.GreaterOrEqual(t, offers[0].took, time.Second, "accepting is timed from Received")
}

func TestSubmitRefusesAProviderAtItsLimit(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	for range 2 {
		ok, err := b.store.Routing.ReserveRate(t.Context(), "alpha", "llm-tasks", 2, 100, serviceNow)
		require.NoError(t, err)
		require.True(t, ok)
	}
	req := llmTask(t)
	req.Provider = "alpha"
	_, err := b.svc.Submit(t.Context(), req)
	require.ErrorIs(t, err, jobops.ErrRateLimited)
	var refusal *jobops.Error
	require.ErrorAs(t, err, &refusal)
	require.Equal(t, "/provider", refusal.Pointer)
	require.Equal(t, 53*time.Second, refusal.RetryAfter, "whole seconds until the minute's window ends")
	require.Contains(t, refusal.Message, "retry in 53 s")
	require.Empty(t, b.starter.offered())
}

func TestSubmitRefusals(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	for name, tc := range map[string]struct {
		edit    func(*jobops.SubmitRequest)
		kind    error
		pointer string
	}{
		"unknown provider": {func(r *jobops.SubmitRequest) { r.Provider = "nobody" }, jobops.ErrUnknownProvider, "/provider"},
		"unknown policy":   {func(r *jobops.SubmitRequest) { r.PolicyID = uuid.NewString() }, jobops.ErrUnknownPolicy, "/policy_id"},
	} {
		t.Run(name, func(t *testing.T) {
			req := llmTask(t)
			tc.edit(&req)
			_, err := b.svc.Submit(t.Context(), req)
			require.ErrorIs(t, err, tc.kind)
			var refusal *jobops.Error
			require.ErrorAs(t, err, &refusal)
			require.Equal(t, tc.pointer, refusal.Pointer)
		})
	}
	require.Empty(t, b.starter.offered())
}

func TestSubmitIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	req := llmTask(t)
	req.IdempotencyKey = "order-17"
	first, err := b.svc.Submit(t.Context(), req)
	require.NoError(t, err)
	again, err := b.svc.Submit(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, first.ID, again.ID)

	req.Body = []byte("another body")
	_, err = b.svc.Submit(t.Context(), req)
	require.ErrorIs(t, err, jobops.ErrIdempotencyKeyReused)
	require.Len(t, b.starter.offered(), 1, "one start only")
}

func TestCancelRefusals(t *testing.T) {
	t.Parallel()
	b := setupService(t)

	done := &jobs.Record{ID: uuid.NewString(), Service: "llm-tasks", Tenant: "acme", Status: jobs.StatusCompleted}
	_, err := b.svc.Cancel(t.Context(), done)
	require.ErrorIs(t, err, jobops.ErrJobFinished)
	require.EqualError(t, err, "job "+done.ID+" already completed")

	// A pending job whose workflow cannot be started now: the client may
	// retry; Temporal is not asked to cancel anything (the mock expects
	// no call).
	b.starter.err = errors.New("temporal: connection refused")
	pending, err := b.svc.Submit(t.Context(), llmTask(t))
	require.NoError(t, err)
	_, err = b.svc.Cancel(t.Context(), pending)
	require.ErrorIs(t, err, jobops.ErrUnavailable)
}

func TestSubmitCapsATenantsCreates(t *testing.T) {
	t.Parallel()
	cfg, st, starter := fullConfig(t)
	cfg.TenantCreatesPerMinute = 2
	svc, err := jobops.New(cfg)
	require.NoError(t, err)
	b := &serviceBundle{svc: svc, store: st, starter: starter}

	keyed := llmTask(t)
	keyed.IdempotencyKey = "order-1"
	first, err := b.svc.Submit(t.Context(), keyed)
	require.NoError(t, err)
	replay, err := b.svc.Submit(t.Context(), keyed)
	require.NoError(t, err)
	require.Equal(t, first.ID, replay.ID, "a replay is answered, and not counted")
	_, err = b.svc.Submit(t.Context(), llmTask(t))
	require.NoError(t, err)

	_, err = b.svc.Submit(t.Context(), llmTask(t))
	require.ErrorIs(t, err, jobops.ErrRateLimited)
	var refusal *jobops.Error
	require.ErrorAs(t, err, &refusal)
	require.Equal(t, 53*time.Second, refusal.RetryAfter, "until the next minute, rounded up")
	require.Contains(t, refusal.Message, "tenant acme may create at most 2 jobs a minute")

	other := llmTask(t)
	other.Tenant = "globex"
	_, err = b.svc.Submit(t.Context(), other)
	require.NoError(t, err, "each tenant has its own count")
	require.Len(t, b.starter.offered(), 3)
}

func TestSubmitShedsPastTheBacklogsBounds(t *testing.T) {
	t.Parallel()
	cfg, st, starter := fullConfig(t)
	guard := &jobops.BacklogGuard{Store: st.Jobs, Limits: jobops.BacklogLimits{PerTenant: 2, Total: 3}}
	cfg.Backlog = guard
	svc, err := jobops.New(cfg)
	require.NoError(t, err)
	b := &serviceBundle{svc: svc, store: st, starter: starter}
	submit := func(tenant string) error {
		req := llmTask(t)
		req.Tenant = tenant
		req.Received = time.Now()
		_, err := b.svc.Submit(t.Context(), req)
		return err
	}

	// Not counted yet: nothing is shed (the fake starter starts nothing,
	// so every start stays in the outbox).
	for range 2 {
		require.NoError(t, submit("acme"))
	}
	guard.Refresh(t.Context())
	err = submit("acme")
	require.ErrorIs(t, err, jobops.ErrRateLimited)
	var refusal *jobops.Error
	require.ErrorAs(t, err, &refusal)
	require.Equal(t, time.Second, refusal.RetryAfter)
	require.Contains(t, refusal.Message, "tenant acme has 2 accepted jobs waiting to start")

	require.NoError(t, submit("globex"), "another tenant has its own bound")
	guard.Refresh(t.Context())
	err = submit("initech")
	require.ErrorIs(t, err, jobops.ErrRateLimited)
	require.ErrorContains(t, err, "the gateway has 3 accepted jobs waiting to start")
	require.Equal(t, 2, b.starter.sheds(), "each create shed is told to the starter, which paces its starts by them")

	// The backlog drains: creates go in again.
	var ids []string
	for _, o := range b.starter.offered() {
		ids = append(ids, o.start.JobID)
	}
	require.NoError(t, st.Jobs.DeleteJobStarts(t.Context(), ids))
	guard.Refresh(t.Context())
	require.NoError(t, submit("acme"))
}

// A job id the caller names (an upload stored under it first) is the
// job's; one that is not a UUID is refused.
func TestSubmitTakesTheJobIDItIsGiven(t *testing.T) {
	t.Parallel()
	b := setupService(t)
	req := llmTask(t)
	req.JobID = "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f"
	job, err := b.svc.Submit(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, req.JobID, job.ID)
	req.JobID = "../../results/other"
	_, err = b.svc.Submit(t.Context(), req)
	require.ErrorContains(t, err, "not a UUID")
}
