package jobops

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ai-job-gateway/gateway/app/budgets"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/netguard"
	"github.com/ai-job-gateway/gateway/internal/tracing"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// IdempotencyTTL is how long an Idempotency-Key stands for its first job.
const IdempotencyTTL = 24 * time.Hour

// urlCheckTimeout bounds the name resolution of one URL at submission.
const urlCheckTimeout = 3 * time.Second

// The members of a job's attributes Submit's refusals point at.
const (
	ptrProvider     = "/provider"
	ptrPolicyID     = "/policy_id"
	ptrInputURL     = "/input/url"
	ptrOptionsModel = "/options/model"
	ptrWebhookURL   = "/webhook/url"
)

// serviceDisabled is the status of a service that takes no new jobs
// (docs/api.md, Service and provider status); deprecated services still
// take them.
const serviceDisabled = "disabled"

// Requester is who asks for a job or a batch, and the request as sent.
type Requester struct {
	Tenant      string
	User        string
	Application string
	// IdempotencyKey, when set, makes a repeat of the request answer with
	// the job or batch the first one created (docs/api.md, Cancel and
	// idempotency; Batches).
	IdempotencyKey string
	// Body is the request as the client sent it, byte for byte: with User
	// and Application, what an IdempotencyKey stands for.
	Body []byte
	// Received is when the request was read; the Dispatcher paces starts
	// by how long accepting jobs takes. Zero: not measured.
	Received time.Time
	// KeyLimits are the limits of the API key asking (none for a token).
	KeyLimits store.KeyLimits
}

// SubmitRequest is a job to accept: who asks for it, and its attributes,
// validated (the API's request parsing).
type SubmitRequest struct {
	Requester
	Service jobs.Service

	Input   json.RawMessage
	Options json.RawMessage
	// Parsed is Input and Options, typed.
	Parsed     jobs.Request
	Webhook    *jobs.Webhook
	Provider   string
	PolicyID   string
	ClientMeta json.RawMessage
	// JobID, when set, is the new job's id (a UUID the caller made, as the
	// OpenAI-compatible audio routes do to store the upload under the job,
	// docs/openai.md); "" gives the job a new one.
	JobID string
}

// NewSubmitRequest is the request to submit a job the job model parsed
// (jobs.ParseCreateBody) of service; who asks is the caller's to add.
func NewSubmitRequest(service jobs.Service, job *jobs.CreateRequest) *SubmitRequest {
	return &SubmitRequest{Service: service, Input: job.Input, Options: job.Options, Parsed: job.Parsed,
		Webhook: job.Webhook, Provider: job.Provider, PolicyID: job.PolicyID, ClientMeta: job.ClientMeta}
}

// Submit accepts a job. It checks its URLs, the tenant's access, the
// service's status and the job's provider or policy, then records the job
// and its start in one transaction and offers the start to the Starter;
// the job is accepted once that transaction commits. With an
// IdempotencyKey, a repeat of an earlier request returns the earlier job,
// and another request with the key is ErrIdempotencyKeyReused.
func (s *Service) Submit(ctx context.Context, req SubmitRequest) (*jobs.Record, error) {
	jobID := req.JobID
	if jobID == "" {
		jobID = uuid.Must(uuid.NewV7()).String()
	} else if _, err := uuid.Parse(jobID); err != nil || len(jobID) != 36 {
		return nil, fmt.Errorf("jobops: the job id %q the caller named is not a UUID", jobID)
	}
	in, input, tenant, err := s.prepare(ctx, req, jobID, s.cfg.Now().UTC())
	if err != nil {
		return nil, err
	}
	if req.IdempotencyKey != "" {
		existing, id, err := s.claim(ctx, req, in.JobID, in.CreatedAt)
		if err != nil || existing != nil {
			return existing, err
		}
		if id != in.JobID {
			// Ids are all 36 characters: the size does not change.
			in.JobID = id
			if input, err = encode(in); err != nil {
				return nil, err
			}
		}
	}
	// Counted after the key is claimed: a replay of an accepted request
	// returned above without using up the tenant's rate.
	if err := s.admit(ctx, req, tenant, in); err != nil {
		return nil, err
	}
	job, err := s.record(ctx, req, in, input, inFlightLimits(req, tenant))
	if errors.Is(err, ErrRateLimited) {
		// Over an in-flight limit: not recorded. With a key, a repeat
		// reserves again.
		s.release(ctx, in)
	} else if errors.Is(err, ErrUnavailable) && req.IdempotencyKey == "" {
		// Not recorded, and no other request can record this job id.
		// With a key, a concurrent request with it may have recorded the
		// job on this reservation, and a retry with it finds the
		// reservation kept.
		s.release(ctx, in)
	}
	return job, err
}

// prepare checks what a create asks for, as Submit and SubmitBatch do for
// each job: its URLs, the tenant's access, the service's status, the
// job's provider or policy, and the backlog of starts. It returns the job's submission under jobID,
// created at now, encoded as its start records it, and the tenant's record
// (nil without one).
func (s *Service) prepare(ctx context.Context, req SubmitRequest, jobID string, now time.Time) (jobs.Submission, []byte, *store.Tenant, error) {
	if err := s.checkURLs(ctx, req); err != nil {
		return jobs.Submission{}, nil, nil, err
	}
	tenant, err := s.checkTenantAccess(ctx, req)
	if err != nil {
		return jobs.Submission{}, nil, nil, err
	}
	if err := s.checkRouting(ctx, req); err != nil {
		return jobs.Submission{}, nil, nil, err
	}
	if err := s.cfg.Backlog.check(req.Tenant); err != nil {
		if !req.Received.IsZero() {
			s.cfg.Starts.Shed(time.Since(req.Received))
		}
		return jobs.Submission{}, nil, nil, err
	}
	in := submission(ctx, req, jobID, now)
	if in.Webhook != nil {
		in.WebhookGiveUpAfter = s.cfg.WebhookGiveUpAfter
	}
	if w := tenant.Fairness(); w != store.DefaultFairnessWeight {
		in.FairnessWeight = w
	}
	in.Budgeted = budgets.Applies(tenant, req.Application, jobs.CallerKey(req.User)) || budgets.LimitsTokens(req.Service.ID, req.KeyLimits)
	// Sized before an Idempotency-Key is claimed: a refused request uses
	// up no key.
	input, err := encode(in)
	if err != nil {
		return jobs.Submission{}, nil, nil, err
	}
	return in, input, tenant, nil
}

// admit counts a job against its tenant's create rate and reserves it
// against the tenant's budgets.
func (s *Service) admit(ctx context.Context, req SubmitRequest, tenant *store.Tenant, in jobs.Submission) error {
	if err := s.reserveTenantCreate(ctx, req.Tenant); err != nil {
		return err
	}
	return s.reserveBudget(ctx, req, tenant, in)
}

// release gives back the budget reserved for a job that was not recorded.
// Had the job been recorded after all, its workflow reserves it again.
func (s *Service) release(ctx context.Context, in jobs.Submission) {
	if !in.Budgeted || s.cfg.Budgets == nil {
		return
	}
	if err := s.cfg.Budgets.Release(context.WithoutCancel(ctx), in.JobID); err != nil {
		s.cfg.Logger.Error("release the budget of a job not recorded", "job", in.JobID, "error", err)
	}
}

// reserveBudget reserves a job whose estimate is known now against its
// tenant's budgets, and an llm-task against its API key's
// tokens_per_minute; the workflow finds the reservation and keeps it. A
// job whose estimate waits for its media (or document) is reserved by its
// workflow, against the tenant's budgets.
func (s *Service) reserveBudget(ctx context.Context, req SubmitRequest, tenant *store.Tenant, in jobs.Submission) error {
	if !in.Budgeted || s.cfg.Budgets == nil {
		return nil
	}
	usage, known := jobs.EstimateUsage(req.Service.ID, req.Input, req.Options, nil)
	if !known {
		return nil
	}
	if tenant == nil {
		tenant = &store.Tenant{ID: req.Tenant} // no record: a key's limits only
	}
	now := s.cfg.Now()
	err := s.cfg.Budgets.Reserve(ctx, tenant, jobs.Reservation{JobID: in.JobID, Application: req.Application, APIKey: jobs.CallerKey(req.User),
		Service: req.Service.ID, Provider: req.Provider, Usage: usage, Known: true, TokensPerMinute: req.KeyLimits.TokensPerMinute}, now)
	var exceeded *budgets.Exceeded
	if errors.As(err, &exceeded) && budgets.IsKeyTokens(exceeded.Budget) {
		now = now.UTC()
		estimate := int64(0)
		for _, n := range []*int64{usage.InputTokens, usage.OutputTokens} {
			if n != nil {
				estimate += *n
			}
		}
		e := refuse(ErrRateLimited, "this API key's tokens_per_minute is %d, and this minute's llm-tasks hold %d tokens: the job's estimate of %d tokens (its input at four characters a token, and max_tokens, else %d, of answer) does not fit; retry after the Retry-After seconds",
			req.KeyLimits.TokensPerMinute, exceeded.Spent/1e9, estimate, jobs.DefaultOutputTokens)
		if estimate > int64(req.KeyLimits.TokensPerMinute) {
			e = refuse(ErrRateLimited, "this API key's tokens_per_minute is %d: the job's estimate of %d tokens (its input at four characters a token, and max_tokens, else %d, of answer) is more than a whole minute's; the key needs a higher limit",
				req.KeyLimits.TokensPerMinute, estimate, jobs.DefaultOutputTokens)
		}
		e.RetryAfter = (time.Minute - now.Sub(now.Truncate(time.Minute))).Truncate(time.Second) + time.Second
		return e
	}
	if errors.Is(err, jobs.ErrBudgetExceeded) {
		return refuse(ErrBudgetExceeded, "%v", err)
	}
	return err
}

// reserveTenantCreate counts a create against the tenant's per-minute cap.
func (s *Service) reserveTenantCreate(ctx context.Context, tenant string) error {
	limit := s.cfg.TenantCreatesPerMinute
	if limit <= 0 {
		return nil
	}
	now := s.cfg.Now().UTC()
	fits, err := s.cfg.Rates.ReserveRate(ctx, "tenant:"+tenant, "create", limit, 0, now)
	if err != nil || fits {
		return err
	}
	e := refuse(ErrRateLimited, "tenant %s may create at most %d jobs a minute; retry after the Retry-After seconds", tenant, limit)
	// The next minute's window, in whole seconds rounded up.
	e.RetryAfter = (time.Minute - now.Sub(now.Truncate(time.Minute))).Truncate(time.Second) + time.Second
	return e
}

// claim claims req's Idempotency-Key for jobID. It returns the job a
// request with the key recorded, or else the id to record this job under:
// jobID, or the id an earlier request claimed without recording its job
// (that request is still running, or died); of two requests recording
// it, one does.
func (s *Service) claim(ctx context.Context, req SubmitRequest, jobID string, now time.Time) (*jobs.Record, string, error) {
	claimedID, claimed, err := s.cfg.Jobs.ClaimIdempotencyKey(ctx, store.IdempotencyKey{
		Tenant: req.Tenant, Service: string(req.Service.ID), Key: req.IdempotencyKey,
		Fingerprint: Fingerprint(req.User, req.Application, req.Body), JobID: jobID, CreatedAt: now,
	}, IdempotencyTTL)
	if errors.Is(err, store.ErrIdempotencyKeyReused) {
		return nil, "", ErrIdempotencyKeyReused
	}
	if err != nil || claimed {
		return nil, jobID, err
	}
	existing, err := s.cfg.Jobs.GetJob(ctx, claimedID)
	if err != nil {
		return nil, claimedID, nil
	}
	if !sameScope(existing, req) {
		return nil, "", ErrIdempotencyKeyReused
	}
	return existing, claimedID, nil
}

// MaxSubmissionBytes bounds a job's workflow input as encoded, well under
// Temporal's 2 MiB payload limit, so that an accepted job can always start.
const MaxSubmissionBytes = 1536 << 10

// submission is the workflow input of the job req asks for.
func submission(ctx context.Context, req SubmitRequest, jobID string, now time.Time) jobs.Submission {
	return jobs.Submission{
		TraceContext: tracing.Capture(ctx),
		JobID:        jobID,
		Service:      req.Service.ID,
		Tenant:       req.Tenant,
		UserID:       req.User,
		Application:  req.Application,
		Provider:     req.Provider,
		PolicyID:     req.PolicyID,
		Input:        req.Input,
		Options:      req.Options,
		ClientMeta:   req.ClientMeta,
		CreatedAt:    now,
		Webhook:      req.Webhook,
	}
}

// encode is the submission as its workflow start records it, refused when
// it is over MaxSubmissionBytes.
func encode(in jobs.Submission) ([]byte, error) {
	input, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	if len(input) > MaxSubmissionBytes {
		// Encoding escapes <, > and &, six bytes each, so the limits on
		// the request's parts alone do not bound this.
		return nil, refuseField(ErrInvalid, "/input", "makes the job %d bytes once encoded for its workflow (<, > and & take 6 bytes each); a job is limited to %d KiB: give large texts as a document by url", len(input), MaxSubmissionBytes>>10)
	}
	return input, nil
}

// inFlightRetry is the Retry-After of a job refused for its tenant's or
// key's max_in_flight: when one of theirs will have finished is not known.
const inFlightRetry = time.Second

// inFlightRefusal refuses n jobs (one, or a batch's) over a limit.
func inFlightRefusal(over *store.InFlightError, n int) *Error {
	var e *Error
	if n == 1 {
		e = refuse(ErrRateLimited, "%s is %d, and as many of its jobs are pending or processing; retry once one has finished", over.Limit.Name, over.Limit.Max)
	} else {
		e = refuse(ErrRateLimited, "%s is %d: %d of its jobs are pending or processing, and the batch's %d do not fit (a batch is admitted whole); retry once some have finished, or send fewer items",
			over.Limit.Name, over.Limit.Max, over.InFlight, n)
	}
	e.RetryAfter = inFlightRetry
	return e
}

// inFlightLimits are the max_in_flight limits a job of req counts
// against: its tenant's (a nil tenant has no record) and its API key's.
func inFlightLimits(req SubmitRequest, tenant *store.Tenant) []store.InFlightLimit {
	var limits []store.InFlightLimit
	if tenant != nil && tenant.MaxInFlight != nil {
		limits = append(limits, store.InFlightLimit{Name: "tenant " + req.Tenant + "'s max_in_flight", Tenant: req.Tenant, Max: *tenant.MaxInFlight})
	}
	if req.KeyLimits.MaxInFlight > 0 {
		limits = append(limits, store.InFlightLimit{Name: "this API key's max_in_flight", Tenant: req.Tenant, User: req.User, Max: req.KeyLimits.MaxInFlight})
	}
	return limits
}

// record records the job and its start in one transaction, within its
// in-flight limits: once it commits the job is accepted, and its
// workflow is started from the outbox.
func (s *Service) record(ctx context.Context, req SubmitRequest, in jobs.Submission, input []byte, limits []store.InFlightLimit) (*jobs.Record, error) {
	jobID := in.JobID
	job := in.Record()
	start := &store.JobStart{Input: string(input), Priority: req.Parsed.Priority(), NextAttemptAt: s.cfg.Starts.Lease(req.Tenant)}
	created, err := s.cfg.Jobs.CreateJob(ctx, job, start, limits...)
	var over *store.InFlightError
	if errors.As(err, &over) {
		return nil, inFlightRefusal(over, 1)
	}
	if err != nil {
		s.cfg.Logger.Error("record new job", "job", jobID, "trace_id", tracing.TraceID(ctx), "error", err)
		return nil, refuse(ErrUnavailable, "the job could not be recorded; retry the request (with the same Idempotency-Key)")
	}
	if created {
		var took time.Duration
		if !req.Received.IsZero() {
			took = time.Since(req.Received)
		}
		s.cfg.Starts.Offer(*start, took)
		return job, nil
	}
	// A concurrent request with the same Idempotency-Key recorded it.
	existing, err := s.cfg.Jobs.GetJob(ctx, jobID)
	if err != nil {
		return nil, err
	}
	if !sameScope(existing, req) {
		return nil, ErrIdempotencyKeyReused
	}
	return existing, nil
}

// Fingerprint identifies what an Idempotency-Key stands for: the
// effective user, the application and the request body, byte for byte.
// Tenant and service are the key's scope.
func Fingerprint(user, application string, body []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(user), []byte(application), body} {
		_ = binary.Write(h, binary.BigEndian, uint64(len(part)))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sameScope reports whether a job found through an Idempotency-Key is the
// request's tenant's and of its service; the store's key scope guarantees
// it, and a job of another scope must never be returned.
func sameScope(job *jobs.Record, req SubmitRequest) bool {
	return job.Tenant == req.Tenant && job.Service == req.Service.ID
}

// checkURLs refuses, when Config.CheckURLs is set, a webhook URL or media
// URL (input.url) whose host is or resolves to an address outside the
// public internet (docs/webhooks.md, Address rules). A host that does not
// resolve passes: the workers check every address again when they
// connect.
func (s *Service) checkURLs(ctx context.Context, req SubmitRequest) error {
	if !s.cfg.CheckURLs {
		return nil
	}
	var input struct {
		URL string `json:"url"`
	}
	_ = json.Unmarshal(req.Input, &input)
	checks := []struct{ url, pointer string }{{input.URL, ptrInputURL}}
	if req.Webhook != nil {
		checks = append(checks, struct{ url, pointer string }{req.Webhook.URL, ptrWebhookURL})
	}
	for _, check := range checks {
		if check.url == "" {
			continue
		}
		lookupCtx, cancel := context.WithTimeout(ctx, urlCheckTimeout)
		err := netguard.CheckURL(lookupCtx, check.url, false)
		cancel()
		if errors.Is(err, netguard.ErrForbiddenAddress) {
			return refuseField(ErrInvalid, check.pointer, "%v; the gateway only calls public addresses", err)
		}
		if err != nil {
			s.cfg.Logger.Debug("URL not checked at creation", "field", check.pointer, "error", err)
		}
	}
	return nil
}

// checkTenantAccess refuses a job whose tenant's record disables the
// service or the provider the job names, and returns the record (nil
// without one). A tenant without a record, and keys its record does not
// list, get the platform default: enabled.
func (s *Service) checkTenantAccess(ctx context.Context, req SubmitRequest) (*store.Tenant, error) {
	t, err := s.cfg.Tenants.GetTenant(ctx, req.Tenant)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !t.ServiceEnabled(string(req.Service.ID)) {
		return nil, refuse(ErrServiceNotEnabled, "the %s service is not enabled for tenant %s", req.Service.ID, req.Tenant)
	}
	if req.Provider != "" && !t.ProviderEnabled(req.Provider) {
		return nil, refuseField(ErrProviderNotEnabled, ptrProvider, "provider %s is not enabled for tenant %s", req.Provider, req.Tenant)
	}
	return t, nil
}

// checkRouting checks the service's status, then the job's policy or
// provider, and its pinned model, against the catalog and the statuses
// administrators set.
func (s *Service) checkRouting(ctx context.Context, req SubmitRequest) error {
	statuses, err := s.cfg.Statuses.ServiceStatuses(ctx)
	if err != nil {
		return err
	}
	svc := req.Service.ID
	if statuses[string(svc)] == serviceDisabled {
		return refuse(ErrServiceDisabled, "the %s service is disabled; it accepts no new jobs", svc)
	}
	needs := req.Parsed.Requirements()
	if req.Provider == "" {
		if req.PolicyID != "" {
			if err := s.checkPolicy(ctx, req); err != nil {
				return err
			}
		}
		return s.checkModelOffered(svc, needs.Model)
	}
	p, ok := s.cfg.Catalog.Lookup(req.Provider)
	if !ok {
		return refuseField(ErrUnknownProvider, ptrProvider, "no provider %q (see GET /v1/providers)", req.Provider)
	}
	if reason, message := policy.Unsupported(p, needs); reason != "" {
		if reason == jobs.EvalOptionNotSupported && needs.Model != "" && !policy.OffersModel(p.Services[svc], needs.Model) {
			return refuseField(ErrUnsupportedOption, ptrOptionsModel, "provider %s does not offer this model; %s",
				p.ID, modelChoice(p.Services[svc].Models, "its models are", "it lists no models to pin"))
		}
		return refuseField(ErrUnsupportedOption, ptrProvider, "%s", message)
	}
	overrides, err := s.cfg.Statuses.ProviderStatuses(ctx)
	if err != nil {
		return err
	}
	var override *policy.ProviderOverride
	if ps, ok := overrides[p.ID]; ok {
		override = ps.Override()
	}
	providerStatus, serviceStatus := policy.EffectiveStatus(p, svc, override)
	if providerStatus == providers.StatusDisabled {
		return refuseField(ErrProviderDisabled, ptrProvider, "provider %s is disabled", p.ID)
	}
	if serviceStatus == providers.StatusDisabled {
		return refuseField(ErrProviderDisabled, ptrProvider, "provider %s is disabled for %s", p.ID, svc)
	}
	return s.checkRateLimit(ctx, p, svc)
}

// checkModelOffered refuses a model no provider of the service offers, for
// a job routed automatically: routing would find no provider for it. The
// providers' statuses are left to routing.
func (s *Service) checkModelOffered(svc jobs.ServiceID, model string) error {
	if model == "" {
		return nil
	}
	offered := policy.Models(s.cfg.Catalog.Providers, svc)
	if slices.Contains(offered, model) {
		return nil
	}
	return refuseField(ErrUnsupportedOption, ptrOptionsModel, "no provider of %s offers this model; %s",
		svc, modelChoice(offered, "the models offered are", "none lists models to pin"))
}

// modelChoice tells a client which models it may pin instead; the
// refused model is not repeated (the pointer names the field).
func modelChoice(models []string, some, none string) string {
	if len(models) == 0 {
		return none + ": leave options.model out for the provider's default model"
	}
	return some + " " + strings.Join(models, ", ")
}

// checkPolicy checks a job's policy: it must exist, belong to the job's
// tenant or be gateway-wide, and cover the service. Another tenant's
// policy is unknown, as it would be when reading it.
func (s *Service) checkPolicy(ctx context.Context, req SubmitRequest) error {
	p, err := s.cfg.Policies.GetPolicy(ctx, req.PolicyID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !p.Global() && p.Tenant != req.Tenant) {
		return refuseField(ErrUnknownPolicy, ptrPolicyID, "no policy %s", req.PolicyID)
	}
	if err != nil {
		return err
	}
	if !p.Covers(req.Service.ID) {
		return refuseField(ErrInvalid, ptrPolicyID, "policy %s does not cover %s", req.PolicyID, req.Service.ID)
	}
	return nil
}

// checkRateLimit refuses a job that names a provider that has used its
// published requests_per_minute or requests_per_day. Jobs routed
// automatically skip such a provider instead.
func (s *Service) checkRateLimit(ctx context.Context, p *providers.Provider, service jobs.ServiceID) error {
	limits := p.Services[service].Limits
	if limits.RequestsPerMinute <= 0 && limits.RequestsPerDay <= 0 {
		return nil
	}
	now := s.cfg.Now().UTC()
	counts, err := s.cfg.Rates.RateCounts(ctx, service, []string{p.ID}, now)
	if err != nil {
		return err
	}
	c := counts[p.ID]
	var retryAfter time.Duration
	switch {
	case limits.RequestsPerMinute > 0 && c.Minute >= limits.RequestsPerMinute:
		retryAfter = now.Truncate(time.Minute).Add(time.Minute).Sub(now)
	case limits.RequestsPerDay > 0 && c.Day >= limits.RequestsPerDay:
		retryAfter = now.Truncate(24 * time.Hour).Add(24 * time.Hour).Sub(now)
	default:
		return nil
	}
	seconds := int(math.Ceil(retryAfter.Seconds()))
	refusal := refuseField(ErrRateLimited, ptrProvider,
		"provider %s is at its published request limit for %s; retry in %d s, or let the gateway route the job", p.ID, service, seconds)
	refusal.RetryAfter = time.Duration(seconds) * time.Second
	return refusal
}
