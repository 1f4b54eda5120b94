package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// WebhookOps resends jobs' webhook events (docs/webhooks.md, Resending
// and recovering events); *jobops.Service is one.
type WebhookOps interface {
	ResendWebhooks(ctx context.Context, job *jobs.Record) (*jobops.WebhookResend, error)
	RecoverWebhooks(ctx context.Context, req jobops.RecoverRequest) (*jobops.RecoverResult, error)
}

// resendRoutes registers POST /v1/{resource}/{id}/webhooks/resend and
// POST /v1/webhooks/recover.
func (h webhooksHandler) resendRoutes(v1 *gin.RouterGroup) {
	for _, svc := range jobs.Services() {
		path := svc.Endpoint()[len("/v1"):] + "/:id/webhooks/resend"
		v1.POST(path, auth.RequireScope(string(svc.ID)+":write"), h.resend(svc))
	}
	v1.POST("/webhooks/recover", handle(h.recover))
}

// resendAttributes are the attributes of a webhook-resend resource.
type resendAttributes struct {
	JobID      string   `json:"job_id"`
	Count      int      `json:"count"`
	MessageIDs []string `json:"message_ids"`
	// Skipped are messages that cannot be rebuilt (docs/webhooks.md).
	Skipped []string `json:"skipped_message_ids,omitempty"`
}

type resendResource struct {
	ID         string           `json:"id"`
	Type       string           `json:"type"`
	Attributes resendAttributes `json:"attributes"`
}

func resendDoc(r jobops.WebhookResend) resendResource {
	ids := r.MessageIDs
	if ids == nil {
		ids = []string{}
	}
	return resendResource{ID: r.WorkflowID, Type: "webhook-resend",
		Attributes: resendAttributes{JobID: r.JobID, Count: len(ids), MessageIDs: ids, Skipped: r.Skipped}}
}

func (h webhooksHandler) ops() (WebhookOps, error) {
	if h.resends == nil {
		return nil, apierror.New(http.StatusServiceUnavailable, apierror.CodeServiceUnavailable, "webhook resends are not available on this server")
	}
	return h.resends, nil
}

// resend handles POST /v1/{resource}/{id}/webhooks/resend.
func (h webhooksHandler) resend(svc jobs.Service) gin.HandlerFunc {
	return handle(func(c *gin.Context) error {
		ops, err := h.ops()
		if err != nil {
			return err
		}
		job, err := visibleJob(c, h.jobs, svc)
		if err != nil {
			return err
		}
		r, err := ops.ResendWebhooks(c.Request.Context(), job)
		if err != nil {
			return jobopsError(err)
		}
		c.JSON(http.StatusAccepted, gin.H{"data": resendDoc(*r)})
		return nil
	})
}

// recoverRequest is the body of POST /v1/webhooks/recover.
type recoverRequest struct {
	Since  *time.Time `json:"since"`
	Until  *time.Time `json:"until"`
	URL    string     `json:"url"`
	Tenant string     `json:"tenant"`
	DryRun bool       `json:"dry_run"`
}

// recover handles POST /v1/webhooks/recover: a super-admin recovers any
// tenant's (every tenant's without one), others their own tenant's jobs
// of the services they may write.
func (h webhooksHandler) recover(c *gin.Context) error {
	ops, err := h.ops()
	if err != nil {
		return err
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return err
	}
	var in recoverRequest
	if !json.Valid(body) || !strings.HasPrefix(strings.TrimSpace(string(body)), "{") {
		return apierror.Validation("", "the body must be a JSON object")
	}
	if err := decodeStrict(body, "", &in); err != nil {
		return err
	}
	if in.Since == nil {
		return apierror.Validation("/since", "is required: an RFC 3339 time")
	}
	req := jobops.RecoverRequest{Since: *in.Since, URL: in.URL, DryRun: in.DryRun}
	if in.Until != nil {
		if !in.Until.After(*in.Since) {
			return apierror.Validation("/until", "must be after since")
		}
		req.Until = *in.Until
	}
	caller := auth.CallerFrom(c)
	acting := strings.TrimSpace(c.GetHeader(auth.HeaderEffectiveTenant)) != ""
	if caller.IsSuperAdmin() && !acting {
		req.Tenant = in.Tenant
	} else {
		if in.Tenant != "" {
			return apierror.Forbidden("tenant: needs the %s role; without it a recovery takes the token's tenant", auth.RoleSuperAdmin)
		}
		tenant, _, err := auth.EffectiveIdentity(c)
		if err != nil {
			return err
		}
		if tenant == "" {
			return apierror.Forbidden("the token carries no tenant_id claim")
		}
		req.Tenant = tenant
		for _, svc := range jobs.Services() {
			if caller.HasScope(string(svc.ID) + ":write") {
				req.Services = append(req.Services, svc.ID)
			}
		}
		if len(req.Services) == 0 {
			return apierror.Forbidden("needs a {service}:write scope of at least one service")
		}
	}
	r, err := ops.RecoverWebhooks(c.Request.Context(), req)
	if err != nil {
		return jobopsError(err)
	}
	perJob := make([]resendResource, 0, len(r.Jobs))
	for _, j := range r.Jobs {
		perJob = append(perJob, resendDoc(j))
	}
	skipped := make([]gin.H, 0, len(r.Skipped))
	for _, s := range r.Skipped {
		skipped = append(skipped, gin.H{"job_id": s.JobID, "reason": s.Reason})
	}
	status := http.StatusAccepted
	if in.DryRun {
		status = http.StatusOK
	}
	c.JSON(status, gin.H{
		"data": perJob,
		"meta": gin.H{"dry_run": in.DryRun, "jobs": len(r.Jobs), "messages": r.Messages, "skipped_jobs": skipped, "truncated": r.Truncated},
	})
	return nil
}
