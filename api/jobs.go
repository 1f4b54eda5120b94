package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// jobReader loads one job, or the tombstone of a deleted one.
type jobReader interface {
	GetJob(ctx context.Context, id string) (*jobs.Record, error)
	GetTombstone(ctx context.Context, id string) (*jobs.Tombstone, error)
}

// jobCounter counts accepted jobs (*metrics.Metrics, nil counting none).
type jobCounter interface {
	JobCreated(service string)
}

// jobsHandler serves a service's jobs: create, read, cancel and retry
// (docs/api.md, Jobs). Submit, cancel and retry go to jobops.
type jobsHandler struct {
	jobs    jobReader
	ops     JobOps
	views   jobViews
	metrics jobCounter
	// waiter honours Prefer: wait; nil ignores it.
	waiter JobWaiter
}

// create handles POST /v1/{resource}.
func (h jobsHandler) create(svc jobs.Service) gin.HandlerFunc {
	return handle(func(c *gin.Context) error {
		req, err := submitRequest(c, svc)
		if err != nil {
			return err
		}
		job, err := h.ops.Submit(c.Request.Context(), *req)
		if err != nil {
			return jobopsError(err)
		}
		c.Header("Location", svc.Endpoint()+"/"+job.ID)
		h.metrics.JobCreated(string(svc.ID))
		accepted := job
		job, waited, err := h.await(c, job, func() (*jobs.Record, error) {
			if now, err := h.jobs.GetJob(c.Request.Context(), accepted.ID); err == nil {
				return now, nil
			}
			return accepted, nil // accepted all the same
		})
		if err != nil {
			return err
		}
		status := http.StatusAccepted
		if waited && job.Terminal() {
			status = http.StatusOK
		}
		doc, err := h.views.resource(c.Request.Context(), job, jobs.Full, nil)
		if err != nil {
			return err
		}
		c.JSON(status, gin.H{"data": doc})
		return nil
	})
}

// submitRequest reads a create request: the caller's identity, the
// X-Application and Idempotency-Key headers and the body.
func submitRequest(c *gin.Context, svc jobs.Service) (*jobops.SubmitRequest, error) {
	by, err := creatorOf(c)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return nil, err
	}
	// Timed from here for the dispatcher's pacing: the client's upload
	// is not this process's to speed up.
	received := time.Now()
	req, err := parseJobRequest(svc, body)
	if err != nil {
		return nil, err
	}
	req.Requester = by
	req.Body, req.Received = body, received
	return req, nil
}

// creatorOf reads who asks for a create (a job's or a batch's): the
// caller's identity and the X-Application and Idempotency-Key headers.
func creatorOf(c *gin.Context) (jobops.Requester, error) {
	tenant, user, err := auth.EffectiveIdentity(c)
	if err != nil {
		return jobops.Requester{}, err
	}
	if tenant == "" {
		return jobops.Requester{}, apierror.Forbidden("the token carries no tenant_id claim; jobs belong to a tenant")
	}
	application := c.GetHeader("X-Application")
	if err := validApplication(application); err != nil {
		return jobops.Requester{}, err
	}
	caller := auth.CallerFrom(c)
	if bound := caller.Application; bound != "" {
		if application != "" && application != bound {
			return jobops.Requester{}, apierror.Forbidden("this API key is bound to the application %q, not %q", bound, application)
		}
		application = bound
	}
	idempotencyKey := c.GetHeader("Idempotency-Key")
	if len(idempotencyKey) > 255 {
		return jobops.Requester{}, apierror.New(http.StatusUnprocessableEntity, apierror.CodeValidation, "header Idempotency-Key: must be at most 255 characters")
	}
	if strings.IndexFunc(idempotencyKey, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
		return jobops.Requester{}, apierror.New(http.StatusUnprocessableEntity, apierror.CodeValidation, "header Idempotency-Key: must be printable ASCII")
	}
	return jobops.Requester{Tenant: tenant, User: user, Application: application, IdempotencyKey: idempotencyKey,
		KeyLimits: caller.KeyLimits}, nil
}

// jobopsError is the API error of a refusal by jobops; other errors are
// returned as they are.
func jobopsError(err error) error {
	if errors.Is(err, jobops.ErrIdempotencyKeyReused) {
		return apierror.New(http.StatusConflict, apierror.CodeIdempotencyKeyReused,
			"header Idempotency-Key: the key was already used with a different request in the last 24 h; send that request again, or use a new key")
	}
	var refusal *jobops.Error
	if !errors.As(err, &refusal) {
		return err
	}
	if refusal.Status() == 0 {
		return err
	}
	apiErr := apierror.New(refusal.Status(), refusal.Code(), "%s", refusal.ClientMessage()).At(refusalPointer(refusal))
	switch {
	case refusal.RetryAfter > 0:
		apiErr.WithHeader("Retry-After", strconv.Itoa(int(refusal.RetryAfter/time.Second)))
	case errors.Is(refusal.Kind, jobops.ErrUnavailable):
		// The store or Temporal out of reach: as for any 503 (docs/api.md, Errors).
		apiErr.WithHeader("Retry-After", strconv.Itoa(unavailableRetryAfter))
	}
	return apiErr
}

// get handles GET /v1/{resource}/{id}.
func (h jobsHandler) get(svc jobs.Service) gin.HandlerFunc {
	return h.onJob(svc, http.StatusOK, func(c *gin.Context, job *jobs.Record) (*jobs.Record, error) {
		job, _, err := h.await(c, job, func() (*jobs.Record, error) { return visibleJob(c, h.jobs, svc) })
		return job, err
	})
}

// waitedKey holds, in a request's gin context, how long it waited on
// Prefer: wait; the request duration metric leaves it out
// (docs/operations.md, Metrics).
const waitedKey = "api.waited"

// await waits, as the request's Prefer: wait asks, until job is completed
// or failed, then returns it as reread reads it (docs/api.md, Waiting for
// a job). It reports whether it honoured the preference.
func (h jobsHandler) await(c *gin.Context, job *jobs.Record, reread func() (*jobs.Record, error)) (*jobs.Record, bool, error) {
	wait, ok := preferredWait(c.Request.Header)
	if !ok || h.waiter == nil {
		return job, false, nil
	}
	c.Header("Preference-Applied", "wait="+strconv.Itoa(wait))
	if job.Terminal() {
		return job, true, nil
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), time.Duration(wait)*time.Second)
	defer cancel()
	start := time.Now()
	h.waiter.WaitTerminal(ctx, job.ID)
	c.Set(waitedKey, time.Since(start))
	if c.Request.Context().Err() != nil {
		return job, true, nil // the client is gone: nobody reads the answer
	}
	job, err := reread()
	return job, true, err
}

// cancel handles POST /v1/{resource}/{id}/cancel.
func (h jobsHandler) cancel(svc jobs.Service) gin.HandlerFunc {
	return h.onJob(svc, http.StatusAccepted, viaJobops(h.ops.Cancel))
}

// retry handles POST /v1/{resource}/{id}/retry and, with anyService,
// POST /v1/jobs/{id}/retry (docs/api.md, Retrying a failed job).
func (h jobsHandler) retry(svc jobs.Service) gin.HandlerFunc {
	return h.onJob(svc, http.StatusAccepted, viaJobops(h.ops.Retry))
}

// anyService stands for every service where a route takes a job of any
// (POST /v1/jobs/{id}/retry).
var anyService = jobs.Service{JobType: "job"}

// viaJobops is op with jobops' refusals as API errors.
func viaJobops(op func(context.Context, *jobs.Record) (*jobs.Record, error)) func(*gin.Context, *jobs.Record) (*jobs.Record, error) {
	return func(c *gin.Context, job *jobs.Record) (*jobs.Record, error) {
		job, err := op(c.Request.Context(), job)
		if err != nil {
			return nil, jobopsError(err)
		}
		return job, nil
	}
}

// onJob handles a request on the job the path names, as the caller may
// see it: act acts on the job and returns it as it then is, and the
// answer is the job with status.
func (h jobsHandler) onJob(svc jobs.Service, status int, act func(*gin.Context, *jobs.Record) (*jobs.Record, error)) gin.HandlerFunc {
	return handle(func(c *gin.Context) error {
		job, err := visibleJob(c, h.jobs, svc)
		if err != nil {
			return err
		}
		if job, err = act(c, job); err != nil {
			return err
		}
		doc, err := h.views.resource(c.Request.Context(), job, jobs.Full, nil)
		if err != nil {
			return err
		}
		c.JSON(status, gin.H{"data": doc})
		return nil
	})
}

// visibleJob loads the job named by the path from reader, as the caller
// may see it: another tenant's job, another service's job (unless svc is
// anyService) and a malformed id are all 404, so ids leak nothing.
func visibleJob(c *gin.Context, reader jobReader, svc jobs.Service) (*jobs.Record, error) {
	tenant, _, err := auth.EffectiveIdentity(c)
	if err != nil {
		return nil, err
	}
	id := c.Param("id")
	notFound := apierror.NotFound("no %s with id %s", svc.JobType, id)
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return nil, notFound
	}
	job, err := reader.GetJob(c.Request.Context(), strings.ToLower(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, deletedOrNotFound(c, reader, svc, tenant, strings.ToLower(id), notFound)
	}
	if err != nil {
		return nil, err
	}
	if !mayAccess(c, svc, tenant, job.Service, job.Tenant) {
		return nil, notFound
	}
	return job, nil
}

// mayAccess reports whether the caller, of tenant, may see a job of
// service and jobTenant on a route of svc: its own tenant's, or any
// tenant's for a cross-tenant caller not acting as one.
func mayAccess(c *gin.Context, svc jobs.Service, tenant string, service jobs.ServiceID, jobTenant string) bool {
	actingAs := c.GetHeader("X-Effective-Tenant-Id") != ""
	return (svc.ID == "" || service == svc.ID) && (jobTenant == tenant || (!actingAs && auth.CallerFrom(c).CrossTenant()))
}

// deletedOrNotFound is the answer for a job id the store holds no job of:
// 410 JOB_DELETED when it is a deleted job the caller may see, notFound
// otherwise.
func deletedOrNotFound(c *gin.Context, reader jobReader, svc jobs.Service, tenant, id string, notFound error) error {
	tomb, err := reader.GetTombstone(c.Request.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	if !mayAccess(c, svc, tenant, tomb.Service, tomb.Tenant) {
		return notFound
	}
	return apierror.New(http.StatusGone, apierror.CodeJobDeleted, "%s %s was deleted at %s",
		jobs.TypeOf(tomb.Service), tomb.ID, tomb.DeletedAt.UTC().Format(time.RFC3339))
}

// remove handles DELETE /v1/{resource}/{id} and, with anyService,
// DELETE /v1/jobs/{id} (docs/api.md, Deleting a job).
func (h jobsHandler) remove(svc jobs.Service) gin.HandlerFunc {
	return handle(func(c *gin.Context) error {
		job, err := visibleJob(c, h.jobs, svc)
		if err != nil {
			return err
		}
		_, user, err := auth.EffectiveIdentity(c)
		if err != nil {
			return err
		}
		tomb, err := h.ops.Delete(c.Request.Context(), job, user)
		if err != nil {
			return jobopsError(err)
		}
		c.JSON(http.StatusAccepted, gin.H{"data": tomb.Document()})
		return nil
	})
}
