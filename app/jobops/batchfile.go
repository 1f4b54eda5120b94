package jobops

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/netguard"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// FileBatchRequest is a batch whose items are read from a JSONL file by
// URL (docs/api.md, Batches).
type FileBatchRequest struct {
	// Requester's IdempotencyKey names the batch; it is required.
	Requester
	Atomic  bool
	Webhook *jobs.Webhook
	URL     string
	// Writable are the services the requester may create jobs of.
	Writable []string
}

// CreateFileBatch records a file batch, validating, and starts the
// workflow that reads its items. The same request again returns the
// batch (and starts its reading if it never started); another request
// with the key is ErrIdempotencyKeyReused.
func (s *Service) CreateFileBatch(ctx context.Context, req FileBatchRequest) (*store.Batch, error) {
	if s.cfg.Batches == nil {
		return nil, refuse(ErrUnavailable, "this gateway keeps no batches")
	}
	// A file's items are read later, a chunk at a time, where neither
	// limit is held: a caller held to one sends its items inline.
	tenant, err := s.cfg.Tenants.GetTenant(ctx, req.Tenant)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if limits := inFlightLimits(SubmitRequest{Requester: req.Requester}, tenant); len(limits) > 0 || req.KeyLimits.TokensPerMinute > 0 {
		held := "tokens_per_minute"
		if len(limits) > 0 {
			held = limits[0].Name
		}
		return nil, refuseField(ErrInvalid, "/input_file_url", "batches from a file are not taken from a caller held to %s: send the items inline (data.attributes.items), which are admitted within it", held)
	}
	if s.cfg.CheckURLs {
		lookupCtx, cancel := context.WithTimeout(ctx, urlCheckTimeout)
		err := netguard.CheckURL(lookupCtx, req.URL, false)
		cancel()
		if errors.Is(err, netguard.ErrForbiddenAddress) {
			return nil, refuseField(ErrInvalid, "/input_file_url", "%v; the gateway only reads files at public addresses", err)
		}
	}
	b := &store.Batch{ID: BatchID(req.Tenant, req.IdempotencyKey), Tenant: req.Tenant, UserID: req.User,
		Application: req.Application, Fingerprint: Fingerprint(req.User, req.Application, req.Body),
		State: store.BatchValidating, IdempotencyKey: req.IdempotencyKey, InputFileURL: req.URL, Atomic: req.Atomic,
		Writable: strings.Join(req.Writable, " "), CreatedAt: s.cfg.Now().UTC()}
	if req.Webhook != nil {
		hook, err := json.Marshal(req.Webhook)
		if err != nil {
			return nil, err
		}
		b.Webhook = string(hook)
	}
	existing, err := s.cfg.Batches.GetBatch(ctx, b.ID)
	if errors.Is(err, store.ErrNotFound) {
		var created bool
		if created, err = s.cfg.Batches.CreateBatch(ctx, b, nil, nil); err != nil {
			s.cfg.Logger.Error("record new file batch", "batch", b.ID, "error", err)
			return nil, refuse(ErrUnavailable, "the batch could not be recorded; retry the request with the same Idempotency-Key")
		}
		existing = b
		if !created {
			existing, err = s.cfg.Batches.GetBatch(ctx, b.ID)
		}
	}
	if err != nil {
		return nil, err
	}
	if existing.Tenant != b.Tenant || existing.Fingerprint != b.Fingerprint {
		return nil, ErrIdempotencyKeyReused
	}
	if existing.State == store.BatchValidating {
		if err := s.startBatchFile(ctx, existing.ID); err != nil {
			s.cfg.Logger.Error("start reading a batch file", "batch", existing.ID, "error", err)
			return nil, refuse(ErrUnavailable, "the batch's file could not be queued for reading; retry the request with the same Idempotency-Key")
		}
	}
	return existing, nil
}

// startBatchFile starts the workflow that reads batch id's file, unless
// it runs.
func (s *Service) startBatchFile(ctx context.Context, id string) error {
	_, err := s.cfg.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.BatchFileWorkflowID(id), TaskQueue: workflows.TaskQueue,
	}, workflows.BatchFileWorkflowName, id)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	return err
}

// PlanFileItems checks and admits items of file batch b as PlanBatch
// does those of a batch that is not atomic: the reader of the file
// decides on atomicity across the whole file.
func (s *Service) PlanFileItems(ctx context.Context, b *store.Batch, items []BatchItem) *BatchPlan {
	plan := &BatchPlan{req: BatchRequest{Requester: Requester{Tenant: b.Tenant, User: b.UserID,
		Application: b.Application, IdempotencyKey: b.IdempotencyKey}, Items: items},
		id: b.ID, now: s.cfg.Now().UTC(), Errors: make([]error, len(items))}
	s.planItems(ctx, plan)
	return plan
}

// RecordFileItems records the admitted items of plan, the file's items
// from to to, with the refused ones, in one transaction, and returns the
// batch's services with the plan's added. It returns false when another
// reading of the file recorded them (nothing was written then).
func (s *Service) RecordFileItems(ctx context.Context, plan *BatchPlan, from, to int, services []string, refused []store.BatchRefusal) (bool, []string, error) {
	records, starts, services := plan.records(services)
	recorded, err := s.cfg.Batches.RecordBatchItems(ctx, plan.id, from, to, strings.Join(services, " "), records, starts, refused)
	if err != nil || !recorded {
		s.AbandonBatch(ctx, plan)
		return false, nil, err
	}
	for _, start := range starts {
		s.cfg.Starts.Offer(*start, 0)
	}
	return true, services, nil
}
