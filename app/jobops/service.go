// Package jobops carries out what is asked of jobs beyond reading them:
// Service.Submit accepts a job, Service.Cancel cancels one,
// Service.Retry runs a failed job again under its own id (the operator's
// `gateway jobs retry`), Service.ReceiveProviderCallback takes what a
// vendor posts back about an attempt, and the Dispatcher starts accepted
// jobs' workflows from the store's outbox. API handlers and the CLI parse
// a request, call the Service and render its answer; a refusal is an
// *Error (or ErrIdempotencyKeyReused) whose kind the API maps to a status
// and an error code. It is of the application layer (app/), above store
// and workflows (docs/architecture.md, The layers).
package jobops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/app/budgets"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// JobStore records jobs with their starts and keeps Idempotency-Keys.
type JobStore interface {
	CreateJob(ctx context.Context, job *jobs.Record, start *store.JobStart, limits ...store.InFlightLimit) (bool, error)
	GetJob(ctx context.Context, id string) (*jobs.Record, error)
	ClaimIdempotencyKey(ctx context.Context, k store.IdempotencyKey, ttl time.Duration) (string, bool, error)
	DeleteJobIf(ctx context.Context, id, by string, at time.Time, revision int) (*jobs.Record, *jobs.Tombstone, error)
	GetJobStart(ctx context.Context, jobID string) (*store.JobStart, error)
}

// TenantStore reads tenants' records: which services and providers a
// tenant may use.
type TenantStore interface {
	GetTenant(ctx context.Context, id string) (*store.Tenant, error)
}

// StatusStore reads the statuses administrators set on services and
// providers.
type StatusStore interface {
	ServiceStatuses(ctx context.Context) (map[string]string, error)
	ProviderStatuses(ctx context.Context) (map[string]store.ProviderStatus, error)
}

// PolicyStore reads routing policies.
type PolicyStore interface {
	GetPolicy(ctx context.Context, id string) (policy.Policy, error)
}

// RateStore reads the request counts routing keeps per provider.
type RateStore interface {
	RateCounts(ctx context.Context, service jobs.ServiceID, providerIDs []string, now time.Time) (map[string]store.RateCount, error)
	ReserveRate(ctx context.Context, providerID string, service jobs.ServiceID, perMinute, perDay int, now time.Time) (bool, error)
}

// Starter starts the workflows of accepted jobs (the Dispatcher).
type Starter interface {
	// Lease is the due time of a start recorded now: until then it is
	// this process's to make.
	Lease(tenant string) time.Time
	// Offer hands over a start recorded with a job, and how long
	// accepting that job took.
	Offer(start store.JobStart, took time.Duration)
	// Shed records a create refused with 429 because the outbox of starts
	// was full, and how long answering it took.
	Shed(took time.Duration)
	// StartNow makes a job's start at once unless it was made. A start
	// that can never be made fails the job.
	StartNow(ctx context.Context, jobID string) error
}

// Config is a Service's dependencies; all are required but CheckURLs,
// Logger and Now.
type Config struct {
	Jobs     JobStore
	Tenants  TenantStore
	Statuses StatusStore
	Policies PolicyStore
	// Rates refuses a job that names a provider at its published request
	// limit (ErrRateLimited).
	Rates   RateStore
	Catalog *providers.Catalog
	// Temporal cancels jobs' workflows.
	Temporal client.Client
	// Starts starts the workflows of accepted jobs.
	Starts Starter
	// CheckURLs refuses webhook and media URLs on loopback, private,
	// link-local and other non-public addresses (serve without
	// --allow-private-networks).
	CheckURLs bool
	// TenantCreatesPerMinute caps how many jobs one tenant may create a
	// minute, counted in the store so every API replica shares the count
	// (docs/api.md, Rate limits); 0 is no cap.
	TenantCreatesPerMinute int
	// Backlog sheds creates once the outbox of job starts passes its
	// bounds (docs/operations.md, Overload); nil sheds none.
	Backlog *BacklogGuard
	// CallbackTokens checks vendor callbacks' tokens and Callbacks keeps
	// what they post (docs/providers.md, Vendor callbacks); without them
	// ReceiveProviderCallback refuses every post as ErrUnknownJob.
	CallbackTokens CallbackTokens
	Callbacks      CallbackStore
	// DataConverter reads a job's submission from its workflow history
	// for Retry: Temporal's client's (payloads may be encrypted); nil is
	// the SDK's default.
	DataConverter converter.DataConverter
	// Budgets reserves a job whose estimate is known at creation against
	// its tenant's budgets (docs/api.md, Budgets); nil: jobs are reserved
	// by their workflow only.
	Budgets *budgets.Reserver
	// Generation is the generation of the job workflow stamped on retried
	// jobs' new runs, as DispatcherConfig's.
	Generation int
	// Batches records and cancels batches (docs/api.md, Batches); nil
	// refuses them.
	Batches BatchStore
	// Webhooks reads jobs' webhook messages for resends and recovery
	// (docs/webhooks.md); nil: they are refused as ErrUnavailable.
	Webhooks WebhookStore
	// WebhookGiveUpAfter is how long webhook events are retried before
	// they are given up; 0 is 24 h (docs/webhooks.md).
	WebhookGiveUpAfter time.Duration
	// Audit records retries, webhook resends and recoveries, which write
	// to Temporal rather than the store, in the audit log (docs/api.md,
	// Audit log); nil records none.
	Audit  AuditLog
	Logger *slog.Logger // default slog.Default()
	Now    func() time.Time
}

// AuditLog records administrative actions (store.AuditStore).
type AuditLog interface {
	RecordAuditEvent(ctx context.Context, e store.AuditEntry) error
}

// audit records e, once the action it stands for was carried out: a
// failure to record it is logged, and the action stands.
func (s *Service) audit(ctx context.Context, e store.AuditEntry) {
	if s.cfg.Audit == nil {
		return
	}
	if err := s.cfg.Audit.RecordAuditEvent(context.WithoutCancel(ctx), e); err != nil {
		s.cfg.Logger.Error("record an audit event", "action", e.Action, "target", e.Target, "error", err)
	}
}

// Service carries out the operations on jobs: Submit, Cancel, Retry and
// ReceiveProviderCallback.
//
// A job's workflow id is its job id, and startOptions never runs a
// finished job's workflow again; Retry is the one exception, a start that
// allows a new run of the failed job's workflow (retry.go).
type Service struct {
	cfg Config
}

// New checks cfg and builds a Service.
func New(cfg Config) (*Service, error) {
	var missing []error
	for _, dep := range []struct {
		name   string
		absent bool
	}{
		{"Jobs", cfg.Jobs == nil},
		{"Tenants", cfg.Tenants == nil},
		{"Statuses", cfg.Statuses == nil},
		{"Policies", cfg.Policies == nil},
		{"Rates", cfg.Rates == nil},
		{"Catalog", cfg.Catalog == nil},
		{"Temporal", cfg.Temporal == nil},
		{"Starts", cfg.Starts == nil},
	} {
		if dep.absent {
			missing = append(missing, fmt.Errorf("jobops: Config.%s is required", dep.name))
		}
	}
	if err := errors.Join(missing...); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{cfg: cfg}, nil
}
