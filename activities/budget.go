package activities

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// TenantReader reads tenants' records.
type TenantReader interface {
	GetTenant(ctx context.Context, id string) (*store.Tenant, error)
}

// BudgetReserver reserves a job's estimate against its tenant's budgets
// (an error matching jobs.ErrBudgetExceeded is a budget it does not fit),
// and gives back the reservations of a job that ended unbilled.
// cmd/gateway wires in the application layer's *budgets.Reserver.
type BudgetReserver interface {
	Reserve(ctx context.Context, t *store.Tenant, j jobs.Reservation, now time.Time) error
	Release(ctx context.Context, jobID string) error
}

// JobGetter reads jobs' records.
type JobGetter interface {
	GetJob(ctx context.Context, id string) (*jobs.Record, error)
}

// Budgets reserve jobs against their tenant's budgets before their
// provider is called (docs/api.md, Budgets).
type Budgets struct {
	Tenants TenantReader
	// Jobs reads a job's caller, for the budgets that name an API key.
	Jobs     JobGetter
	Reserver BudgetReserver
}

// BudgetInput is a job to reserve, with its media's duration once probed.
type BudgetInput struct {
	JobID        string          `json:"job_id"`
	Tenant       string          `json:"tenant"`
	Application  string          `json:"application,omitempty"`
	Service      jobs.ServiceID  `json:"service"`
	Provider     string          `json:"provider,omitempty"`
	Input        json.RawMessage `json:"input"`
	MediaSeconds *float64        `json:"media_seconds,omitempty"`
}

// BudgetOutput is the job's error when a budget refuses it.
type BudgetOutput struct {
	Error *jobs.Error `json:"error,omitempty"`
}

// ReserveBudget reserves the job's estimate against the budgets that
// cover it; a job that reserved already (at creation, or a try before)
// keeps its reservation. A budget it does not fit fails the job
// BUDGET_EXCEEDED.
func (b *Budgets) ReserveBudget(ctx context.Context, in BudgetInput) (BudgetOutput, error) {
	if b == nil || b.Reserver == nil || b.Tenants == nil {
		return BudgetOutput{}, nil
	}
	t, err := b.Tenants.GetTenant(ctx, in.Tenant)
	if errors.Is(err, store.ErrNotFound) {
		return BudgetOutput{}, nil
	}
	if err != nil {
		return BudgetOutput{}, err
	}
	apiKey, options, err := b.fromRecord(ctx, t, in)
	if err != nil {
		return BudgetOutput{}, err
	}
	usage, known := jobs.EstimateUsage(in.Service, in.Input, options, in.MediaSeconds)
	err = b.Reserver.Reserve(ctx, t, jobs.Reservation{JobID: in.JobID, Application: in.Application, APIKey: apiKey,
		Service: in.Service, Provider: in.Provider, Usage: usage, Known: known}, time.Now())
	if errors.Is(err, jobs.ErrBudgetExceeded) {
		return BudgetOutput{Error: &jobs.Error{Code: jobs.CodeBudgetExceeded, Message: err.Error()}}, nil
	}
	return BudgetOutput{}, err
}

// fromRecord reads, from the job's record, what BudgetInput (recorded in
// workflow histories) does not carry: the id of the API key that created
// the job ("" for none), when one of t's budgets names a key, and an
// llm-task's options, whose max_tokens bound its estimate. A job without
// a record was deleted, and reserves nothing anyway.
func (b *Budgets) fromRecord(ctx context.Context, t *store.Tenant, in BudgetInput) (apiKey string, options json.RawMessage, err error) {
	namesKey := store.NamesAPIKey(t.Budgets)
	if !namesKey && (in.Service != jobs.LLMTasks || b.Jobs == nil || len(t.Budgets) == 0) {
		return "", nil, nil
	}
	if b.Jobs == nil {
		return "", nil, errors.New("a budget of the tenant names an API key, and this worker reads no jobs to learn the job's")
	}
	job, err := b.Jobs.GetJob(ctx, in.JobID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	if namesKey {
		apiKey = jobs.CallerKey(job.UserID)
	}
	if job.Options != "" {
		options = json.RawMessage(job.Options)
	}
	return apiKey, options, nil
}

// releaseBudget gives back the reservations of a job that ended
// unbilled; without Budgets none were made.
func (p *Projections) releaseBudget(ctx context.Context, jobID string) error {
	if p.Budgets == nil {
		return nil
	}
	return p.Budgets.Release(ctx, jobID)
}
