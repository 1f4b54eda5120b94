package jobops

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// MaxBatchItems bounds the items of one batch (docs/api.md, Batches).
const MaxBatchItems = 1000

// batchCancels is how many of a batch's running jobs CancelBatch cancels
// at once.
const batchCancels = 8

// batchNamespace is the UUIDv5 namespace of batch and batch job ids.
var batchNamespace = uuid.MustParse("6f0d3a52-3c1e-4f57-9a8e-0b7f7a3c2d41")

// BatchStore records batches with their jobs and cancels them.
type BatchStore interface {
	CreateBatch(ctx context.Context, b *store.Batch, records []*jobs.Record, starts []*store.JobStart, limits ...store.InFlightLimit) (bool, error)
	RecordBatchItems(ctx context.Context, id string, from, to int, services string, records []*jobs.Record, starts []*store.JobStart, refused []store.BatchRefusal) (bool, error)
	GetBatch(ctx context.Context, id string) (*store.Batch, error)
	RequestBatchCancel(ctx context.Context, id string, now time.Time) (*store.Batch, error)
	FailUnstartedBatchJobs(ctx context.Context, id, code, message string, now time.Time) (int, error)
	BatchJobs(ctx context.Context, id string, finished bool, after string, limit int) ([]jobs.Record, error)
}

// derivedID is the UUIDv5 of parts, each length-prefixed so that no two
// lists of parts share a name.
func derivedID(parts ...string) string {
	var name []byte
	for _, p := range parts {
		name = binary.BigEndian.AppendUint32(name, uint32(len(p)))
		name = append(name, p...)
	}
	return uuid.NewSHA1(batchNamespace, name).String()
}

// BatchID is the id of the batch a tenant creates with an Idempotency-Key.
func BatchID(tenant, key string) string { return derivedID(tenant, key) }

// BatchJobID is the id of the job of item customID of that batch, the
// same however often the batch is sent.
func BatchJobID(tenant, key, customID string) string { return derivedID(tenant, key, customID) }

// BatchItem is one item of a batch: a create request, parsed, or why
// parsing refused it.
type BatchItem struct {
	CustomID string
	Request  *SubmitRequest
	Err      error
}

// BatchRequest is a batch of jobs to accept (docs/api.md, Batches).
type BatchRequest struct {
	// Requester's IdempotencyKey names the batch; it is required.
	Requester
	// Atomic refuses the whole batch when an item is refused.
	Atomic  bool
	Webhook *jobs.Webhook
	Items   []BatchItem
}

// BatchPlan is a batch whose items were checked and admitted, one by one
// as Submit does, and which is not recorded yet: RecordBatch records it,
// AbandonBatch gives its reservations back.
type BatchPlan struct {
	// Existing is the batch an earlier request with the same key created;
	// nothing else is set then.
	Existing *store.Batch
	// Errors are the items' refusals by index; nil for an item admitted.
	Errors []error

	req      BatchRequest
	id       string
	now      time.Time
	admitted []admittedJob
}

// admittedJob is an item checked and admitted.
type admittedJob struct {
	index int
	in    jobs.Submission
	input []byte
}

// Refused reports whether an item was refused.
func (p *BatchPlan) Refused() bool {
	return slices.ContainsFunc(p.Errors, func(err error) bool { return err != nil })
}

// Admitted is how many items would be recorded.
func (p *BatchPlan) Admitted() int { return len(p.admitted) }

// PlanBatch checks each item of a batch as Submit checks a job, then, when
// an atomic batch has no refused item or the batch is not atomic, admits
// the items that passed against the tenant's create rate and budgets. A
// batch the key created already is returned as Existing; the key used
// with another request is ErrIdempotencyKeyReused.
func (s *Service) PlanBatch(ctx context.Context, req BatchRequest) (*BatchPlan, error) {
	if s.cfg.Batches == nil {
		return nil, refuse(ErrUnavailable, "this gateway keeps no batches")
	}
	plan := &BatchPlan{req: req, id: BatchID(req.Tenant, req.IdempotencyKey), now: s.cfg.Now().UTC(),
		Errors: make([]error, len(req.Items))}
	existing, err := s.cfg.Batches.GetBatch(ctx, plan.id)
	switch {
	case err == nil:
		if existing.Tenant != req.Tenant || existing.Fingerprint != Fingerprint(req.User, req.Application, req.Body) {
			return nil, ErrIdempotencyKeyReused
		}
		return &BatchPlan{Existing: existing}, nil
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	s.planItems(ctx, plan)
	return plan, nil
}

// planItems checks each item of plan's request as Submit checks a job
// and admits those that pass (none when an atomic batch has a refused
// item).
func (s *Service) planItems(ctx context.Context, plan *BatchPlan) {
	req := plan.req
	type prepared struct {
		admittedJob
		tenant *store.Tenant
	}
	var ready []prepared
	for i, item := range req.Items {
		if item.Err != nil {
			plan.Errors[i] = item.Err
			continue
		}
		id := BatchJobID(req.Tenant, req.IdempotencyKey, item.CustomID)
		item.Request.KeyLimits = req.KeyLimits // held to its key's tokens_per_minute
		in, input, tenant, err := s.prepare(ctx, *item.Request, id, plan.now)
		if err != nil {
			plan.Errors[i] = err
			continue
		}
		ready = append(ready, prepared{admittedJob{i, in, input}, tenant})
	}
	if req.Atomic && plan.Refused() {
		return
	}
	for _, p := range ready {
		if err := s.admit(ctx, *req.Items[p.index].Request, p.tenant, p.in); err != nil {
			plan.Errors[p.index] = err
			continue
		}
		plan.admitted = append(plan.admitted, p.admittedJob)
	}
	if req.Atomic && plan.Refused() {
		s.AbandonBatch(ctx, plan)
	}
}

// AbandonBatch gives back what a plan not recorded reserved.
func (s *Service) AbandonBatch(ctx context.Context, plan *BatchPlan) {
	for _, a := range plan.admitted {
		s.release(ctx, a.in)
	}
	plan.admitted = nil
}

// RecordBatch records a planned batch, its admitted jobs and their starts
// in one transaction, refused being the refused items as the client is
// told of them (kept with the batch). The starts are due at once: the
// dispatchers take them from the outbox at the pace they start jobs. A
// batch a concurrent request with the same key recorded first is returned
// instead.
func (s *Service) RecordBatch(ctx context.Context, plan *BatchPlan, refused json.RawMessage) (*store.Batch, error) {
	req := plan.req
	b := &store.Batch{ID: plan.id, Tenant: req.Tenant, UserID: req.User, Application: req.Application,
		Fingerprint: Fingerprint(req.User, req.Application, req.Body), Total: len(plan.admitted),
		Refused: string(refused), CreatedAt: plan.now}
	if req.Webhook != nil {
		hook, err := json.Marshal(req.Webhook)
		if err != nil {
			return nil, err
		}
		b.Webhook = string(hook)
	}
	records, starts, services := plan.records(nil)
	b.Services = strings.Join(services, " ")
	tenant, err := s.cfg.Tenants.GetTenant(ctx, req.Tenant)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.AbandonBatch(ctx, plan)
		return nil, err
	}
	created, err := s.cfg.Batches.CreateBatch(ctx, b, records, starts, inFlightLimits(SubmitRequest{Requester: req.Requester}, tenant)...)
	var over *store.InFlightError
	if errors.As(err, &over) {
		s.AbandonBatch(ctx, plan)
		return nil, inFlightRefusal(over, len(records))
	}
	if err != nil {
		s.cfg.Logger.Error("record new batch", "batch", b.ID, "jobs", len(records), "error", err)
		s.AbandonBatch(ctx, plan)
		return nil, refuse(ErrUnavailable, "the batch could not be recorded; retry the request with the same Idempotency-Key")
	}
	if !created {
		// Its jobs are the same ids, reserved once: nothing to give back.
		existing, err := s.cfg.Batches.GetBatch(ctx, b.ID)
		if err != nil {
			return nil, err
		}
		if existing.Fingerprint != b.Fingerprint {
			return nil, ErrIdempotencyKeyReused
		}
		return existing, nil
	}
	// The pacer sees what accepting one job of the batch took.
	var took time.Duration
	if !req.Received.IsZero() && len(starts) > 0 {
		took = time.Since(req.Received) / time.Duration(len(starts))
	}
	for _, start := range starts {
		s.cfg.Starts.Offer(*start, took)
	}
	return b, nil
}

// records are the jobs of a plan's admitted items and their starts, due
// at once, and the services of its jobs added to services, in order.
func (p *BatchPlan) records(services []string) ([]*jobs.Record, []*store.JobStart, []string) {
	records := make([]*jobs.Record, len(p.admitted))
	starts := make([]*store.JobStart, len(p.admitted))
	for i, a := range p.admitted {
		item := p.req.Items[a.index]
		records[i] = a.in.Record()
		records[i].CustomID = item.CustomID
		starts[i] = &store.JobStart{Input: string(a.input), Priority: item.Request.Parsed.Priority(), NextAttemptAt: p.now}
		if svc := string(a.in.Service); !slices.Contains(services, svc) {
			services = append(services, svc)
		}
	}
	slices.Sort(services)
	return records, starts, services
}

// CancelBatch cancels a batch's jobs that are not finished (docs/api.md,
// Batches): those no dispatcher has started fail CANCELLED at once, the
// others are cancelled one by one as Cancel does. Finished jobs keep their
// results. It returns the batch with its cancellation recorded.
func (s *Service) CancelBatch(ctx context.Context, id string) (*store.Batch, error) {
	if s.cfg.Batches == nil {
		return nil, refuse(ErrUnavailable, "this gateway keeps no batches")
	}
	now := s.cfg.Now().UTC()
	b, err := s.cfg.Batches.RequestBatchCancel(ctx, id, now)
	if err != nil {
		return nil, err
	}
	if _, err := s.cfg.Batches.FailUnstartedBatchJobs(ctx, id, jobs.CodeCancelled, "the job was cancelled with its batch", now); err != nil {
		return nil, err
	}
	var failed error
	var mu sync.Mutex
	after := ""
	for {
		running, err := s.cfg.Batches.BatchJobs(ctx, id, false, after, 500)
		if err != nil {
			return nil, err
		}
		if len(running) == 0 {
			break
		}
		after = running[len(running)-1].ID
		work := make(chan *jobs.Record)
		var wg sync.WaitGroup
		for range min(batchCancels, len(running)) {
			wg.Go(func() {
				for job := range work {
					if _, err := s.Cancel(ctx, job); err != nil && !errors.Is(err, ErrJobFinished) {
						mu.Lock()
						failed = err
						mu.Unlock()
					}
				}
			})
		}
		for i := range running {
			work <- &running[i]
		}
		close(work)
		wg.Wait()
	}
	if failed != nil {
		s.cfg.Logger.Error("cancel a job of a batch", "batch", id, "error", failed)
		return nil, refuse(ErrUnavailable, "some of the batch's jobs could not be cancelled now; retry the request")
	}
	return b, nil
}
