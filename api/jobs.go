package api

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// createJob handles POST /v1/{resource}.
func (s *Server) createJob(svc providers.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		tenant, user, err := auth.EffectiveIdentity(c)
		if err != nil {
			abort(c, err)
			return
		}
		if tenant == "" {
			abort(c, apierror.Forbidden("the token carries no tenant_id claim; jobs belong to a tenant"))
			return
		}
		application := c.GetHeader("X-Application")
		if err := validApplication(application); err != nil {
			abort(c, err)
			return
		}
		idempotencyKey := c.GetHeader("Idempotency-Key")
		if len(idempotencyKey) > 255 {
			abort(c, apierror.New(http.StatusUnprocessableEntity, apierror.CodeValidation, "header Idempotency-Key: must be at most 255 characters"))
			return
		}
		body, rerr := io.ReadAll(c.Request.Body)
		if rerr != nil {
			abort(c, rerr)
			return
		}
		// Timed from here for the dispatcher's pacing: the client's upload
		// is not this process's to speed up.
		began := time.Now()
		req, verr := parseJobRequest(svc, body)
		if verr != nil {
			abort(c, verr)
			return
		}
		if err := s.checkJobURLs(c.Request.Context(), req); err != nil {
			abort(c, err)
			return
		}
		if err := s.checkTenantAccess(c.Request.Context(), svc, tenant, req); err != nil {
			abort(c, err)
			return
		}
		if err := s.checkRouting(c.Request.Context(), svc, tenant, req); err != nil {
			abort(c, err)
			return
		}

		now := s.cfg.Now().UTC()
		jobID := uuid.Must(uuid.NewV7()).String()
		if idempotencyKey != "" {
			claimedID, claimed, err := s.cfg.Store.ClaimIdempotencyKey(c.Request.Context(), store.IdempotencyKey{
				Tenant: tenant, Service: string(svc.ID), Key: idempotencyKey,
				Fingerprint: requestFingerprint(user, application, body), JobID: jobID, CreatedAt: now,
			}, IdempotencyTTL)
			if errors.Is(err, store.ErrIdempotencyKeyReused) {
				abort(c, idempotencyKeyReused())
				return
			}
			if err != nil {
				abort(c, err)
				return
			}
			if !claimed {
				if existing, err := s.cfg.Store.GetJob(c.Request.Context(), claimedID); err == nil {
					if !sameScope(existing, tenant, svc) {
						abort(c, idempotencyKeyReused())
						return
					}
					c.Header("Location", svc.Endpoint()+"/"+existing.ID)
					c.JSON(http.StatusAccepted, gin.H{"data": s.jobResource(existing, true)})
					return
				}
				// The first request's job is not recorded yet (that request
				// is still running or died): record it under the same id;
				// of two such requests, one records it.
				jobID = claimedID
			}
		}

		in := jobs.Submission{
			JobID:       jobID,
			Service:     svc.ID,
			Tenant:      tenant,
			UserID:      user,
			Application: application,
			Provider:    req.Provider,
			PolicyID:    req.PolicyID,
			Input:       req.Input,
			Options:     req.Options,
			ClientMeta:  req.ClientMeta,
			CreatedAt:   now,
			Webhook:     req.Webhook.target(),
		}
		input, err := json.Marshal(in)
		if err != nil {
			abort(c, err)
			return
		}
		job := in.Record()
		// The job and its start are one transaction: once it commits the
		// job is accepted, and its workflow is started from the outbox.
		start := &store.JobStart{Input: string(input), Priority: req.Parsed.Priority(), NextAttemptAt: s.cfg.Starts.Lease()}
		created, err := s.cfg.Store.CreateJob(c.Request.Context(), job, start)
		if err != nil {
			s.cfg.Logger.Error("record new job", "job", jobID, "error", err)
			abort(c, apierror.New(http.StatusServiceUnavailable, apierror.CodeServiceUnavailable, "the job could not be recorded; retry the request (with the same Idempotency-Key)"))
			return
		}
		if !created {
			// A concurrent request with the same Idempotency-Key recorded it.
			existing, err := s.cfg.Store.GetJob(c.Request.Context(), jobID)
			if err != nil {
				abort(c, err)
				return
			}
			if !sameScope(existing, tenant, svc) {
				abort(c, idempotencyKeyReused())
				return
			}
			job = existing
		} else {
			s.cfg.Starts.Offer(*start, time.Since(began))
		}
		c.Header("Location", svc.Endpoint()+"/"+jobID)
		c.JSON(http.StatusAccepted, gin.H{"data": s.jobResource(job, true)})
	}
}

// requestFingerprint identifies what an Idempotency-Key stands for: the
// effective user, X-Application and the body, byte for byte. Tenant and
// service are the key's scope.
func requestFingerprint(user, application string, body []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(user), []byte(application), body} {
		_ = binary.Write(h, binary.BigEndian, uint64(len(part)))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sameScope reports whether a job found through an Idempotency-Key is the
// caller's tenant's and of this service; the store's key scope guarantees
// it, and a job of another scope must never be returned.
func sameScope(job *jobs.Record, tenant string, svc providers.Service) bool {
	return job.Tenant == tenant && job.Service == string(svc.ID)
}

func idempotencyKeyReused() error {
	return apierror.New(http.StatusConflict, apierror.CodeIdempotencyKeyReused,
		"header Idempotency-Key: the key was already used with a different request in the last 24 h; send that request again, or use a new key")
}

// checkRouting checks the service's status, then an explicit provider (or
// policy) against the catalog and the statuses administrators set.
func (s *Server) checkRouting(ctx context.Context, svc providers.Service, tenant string, req *jobRequest) error {
	if err := s.checkServiceEnabled(ctx, svc); err != nil {
		return err
	}
	if req.PolicyID != "" {
		return s.checkPolicy(ctx, svc, tenant, req.PolicyID)
	}
	if req.Provider == "" {
		return nil
	}
	p, ok := s.cfg.Catalog.Lookup(req.Provider)
	if !ok {
		return apierror.Unprocessable(apierror.CodeUnknownProvider, "%s/provider: no provider %q (see GET /v1/providers)", ptrAttributes, req.Provider)
	}
	if reason, message := policy.Unsupported(p, req.Parsed.Requirements()); reason != "" {
		return apierror.Unprocessable(apierror.CodeUnsupportedOption, "%s/provider: %s", ptrAttributes, message)
	}
	providerStatus, serviceStatus, err := s.effectiveStatus(ctx, p, svc.ID)
	if err != nil {
		return err
	}
	if providerStatus == providers.StatusDisabled {
		return apierror.Unprocessable(apierror.CodeProviderDisabled, "%s/provider: provider %s is disabled", ptrAttributes, p.ID)
	}
	if serviceStatus == providers.StatusDisabled {
		return apierror.Unprocessable(apierror.CodeProviderDisabled, "%s/provider: provider %s is disabled for %s", ptrAttributes, p.ID, svc.ID)
	}
	return s.checkRateLimit(ctx, p, svc.ID)
}

// RateStore reads the request counts routing keeps per provider.
type RateStore interface {
	RateCounts(ctx context.Context, service string, providerIDs []string, now time.Time) (map[string]store.RateCount, error)
}

// checkRateLimit answers 429 when a job names a provider that has used its
// published requests_per_minute or requests_per_day. Jobs routed
// automatically skip such a provider instead.
func (s *Server) checkRateLimit(ctx context.Context, p *providers.Provider, service providers.ServiceID) error {
	rates, ok := s.cfg.Store.(RateStore)
	limits := p.Services[service].Limits
	if !ok || (limits.RequestsPerMinute <= 0 && limits.RequestsPerDay <= 0) {
		return nil
	}
	now := s.cfg.Now().UTC()
	counts, err := rates.RateCounts(ctx, string(service), []string{p.ID}, now)
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
	return apierror.New(http.StatusTooManyRequests, apierror.CodeRateLimited,
		"%s/provider: provider %s is at its published request limit for %s; retry in %d s, or let the gateway route the job",
		ptrAttributes, p.ID, service, seconds).WithHeader("Retry-After", strconv.Itoa(seconds))
}

// checkPolicy checks a job's policy_id: the policy must exist, belong to
// the job's tenant or be gateway-wide, and cover the service. Another
// tenant's policy is unknown, as it would be when reading it.
func (s *Server) checkPolicy(ctx context.Context, svc providers.Service, tenant, id string) error {
	p, err := s.policies().GetPolicy(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !p.Global() && p.Tenant != tenant) {
		return apierror.Unprocessable(apierror.CodeUnknownPolicy, "%s/policy_id: no policy %s", ptrAttributes, id)
	}
	if err != nil {
		return err
	}
	if !p.Covers(svc.ID) {
		return apierror.Validation(ptrAttributes+"/policy_id", "policy %s does not cover %s", id, svc.ID)
	}
	return nil
}

// getJob handles GET /v1/{resource}/{id}.
func (s *Server) getJob(svc providers.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		job, err := s.visibleJob(c, svc)
		if err != nil {
			abort(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"data": s.jobResource(job, true)})
	}
}

// cancelJob handles POST /v1/{resource}/{id}/cancel.
func (s *Server) cancelJob(svc providers.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		job, err := s.visibleJob(c, svc)
		if err != nil {
			abort(c, err)
			return
		}
		if job.Terminal() {
			abort(c, apierror.New(http.StatusConflict, apierror.CodeJobFinished, "job %s already %s", job.ID, job.Status))
			return
		}
		// A pending job's workflow may not be started yet: start it, so
		// that it ends the job as cancelled and tells the webhook.
		if job.Status == jobs.StatusPending {
			if err := s.cfg.Starts.StartNow(c.Request.Context(), job.ID); err != nil {
				// A start refused for good fails the job: it is finished.
				if fresh, gerr := s.cfg.Store.GetJob(c.Request.Context(), job.ID); gerr == nil && fresh.Terminal() {
					abort(c, apierror.New(http.StatusConflict, apierror.CodeJobFinished, "job %s already %s", fresh.ID, fresh.Status))
					return
				}
				s.cfg.Logger.Error("start job workflow to cancel it", "job", job.ID, "error", err)
				abort(c, apierror.New(http.StatusServiceUnavailable, apierror.CodeServiceUnavailable, "the job could not be cancelled now; retry the request"))
				return
			}
		}
		err = s.cfg.Temporal.CancelWorkflow(c.Request.Context(), workflows.JobWorkflowID(job.ID), "")
		if err != nil && !isNotFound(err) {
			abort(c, err)
			return
		}
		// Give the workflow a moment to record the cancellation, so the
		// answer usually shows the job failed with CANCELLED.
		ctx, cancel := context.WithTimeout(c.Request.Context(), 5*time.Second)
		defer cancel()
		_ = s.cfg.Temporal.GetWorkflow(ctx, workflows.JobWorkflowID(job.ID), "").Get(ctx, nil)
		if fresh, err := s.cfg.Store.GetJob(c.Request.Context(), job.ID); err == nil {
			job = fresh
		}
		c.JSON(http.StatusAccepted, gin.H{"data": s.jobResource(job, true)})
	}
}

// visibleJob loads the job named by the path, as the caller may see it:
// another tenant's job, another service's job and a malformed id are all
// 404, so ids leak nothing.
func (s *Server) visibleJob(c *gin.Context, svc providers.Service) (*jobs.Record, error) {
	tenant, _, err := auth.EffectiveIdentity(c)
	if err != nil {
		return nil, err
	}
	id := c.Param("id")
	notFound := apierror.NotFound("no %s with id %s", svc.JobType, id)
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return nil, notFound
	}
	job, err := s.cfg.Store.GetJob(c.Request.Context(), strings.ToLower(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	caller := auth.CallerFrom(c)
	actingAs := c.GetHeader("X-Effective-Tenant-Id") != ""
	if job.Service != string(svc.ID) || (job.Tenant != tenant && (actingAs || !caller.CrossTenant())) {
		return nil, notFound
	}
	return job, nil
}

// isNotFound reports a workflow that no longer runs (it finished between
// the projection read and the cancel request).
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
