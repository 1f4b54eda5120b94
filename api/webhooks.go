package api

import (
	"context"
	"crypto/ed25519"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store"
)

// PublicKeySource is the key webhook receivers verify signatures with
// (*webhooksign.Signer is one).
type PublicKeySource interface {
	PublicKey() ed25519.PublicKey
	KeyID() string
}

// DeliveryStore reads the record of webhook delivery attempts: of a job,
// a batch or a budget (store.DeliverySubject), all in one shape.
type DeliveryStore interface {
	WebhookDeliveries(ctx context.Context, subject store.DeliverySubject) ([]store.WebhookDelivery, error)
}

// webhooksHandler serves the webhook signing key and jobs' delivery
// attempts (docs/webhooks.md).
type webhooksHandler struct {
	// key nil (signing not configured) answers its route 503.
	key        PublicKeySource
	deliveries DeliveryStore
	jobs       jobReader
	// resends nil answers the resend routes 503.
	resends WebhookOps
}

// routes registers GET /v1/webhooks/public-key, which needs no token
// (receivers fetch it), and GET /v1/{resource}/{id}/webhook-deliveries.
func (h webhooksHandler) routes(r gin.IRouter, v1 *gin.RouterGroup) {
	r.GET("/v1/webhooks/public-key", handle(h.publicKey))
	for _, svc := range jobs.Services() {
		path := svc.Endpoint()[len("/v1"):] + "/:id/webhook-deliveries"
		v1.GET(path, auth.RequireScope(string(svc.ID)+":read"), h.listDeliveries(svc))
	}
	h.resendRoutes(v1)
}

// publicKey handles GET /v1/webhooks/public-key.
func (h webhooksHandler) publicKey(c *gin.Context) error {
	key := h.key
	if key == nil {
		return apierror.New(http.StatusServiceUnavailable, apierror.CodeServiceUnavailable, "webhook signing is not configured on this server")
	}
	// One key, no rotation yet: receivers may cache it for a while.
	c.Header("Cache-Control", "public, max-age=300")
	c.JSON(http.StatusOK, gin.H{"data": gin.H{
		"id":   key.KeyID(),
		"type": "webhook-public-key",
		"attributes": gin.H{
			"algorithm":        "ed25519",
			"public_key":       webhooksign.EncodePublicKey(key.PublicKey()),
			"signature_scheme": "standard-webhooks v1a",
		},
	}})
	return nil
}

// deliveryAttributes are the attributes of a webhook-delivery resource.
type deliveryAttributes struct {
	Event       string    `json:"event"`
	MessageID   string    `json:"message_id"`
	Attempt     int       `json:"attempt"`
	AttemptedAt time.Time `json:"attempted_at"`
	StatusCode  int       `json:"status_code,omitempty"`
	Error       string    `json:"error,omitempty"`
	DurationMS  int64     `json:"duration_ms"`
	// Trigger is what sent the attempt: delivery, resend or recover.
	Trigger string `json:"trigger"`
}

type deliveryResource struct {
	ID         string             `json:"id"`
	Type       string             `json:"type"`
	Attributes deliveryAttributes `json:"attributes"`
}

// listDeliveries handles GET /v1/{resource}/{id}/webhook-deliveries:
// every delivery attempt of the job's events, oldest first.
func (h webhooksHandler) listDeliveries(svc jobs.Service) gin.HandlerFunc {
	return handle(func(c *gin.Context) error {
		job, err := visibleJob(c, h.jobs, svc)
		if err != nil {
			return err
		}
		return answerDeliveries(c, h.deliveries, store.JobDeliveries(job.ID))
	})
}

// answerDeliveries answers with subject's delivery log, oldest first
// (docs/webhooks.md, Delivery log): the same list for a job, a batch and
// a budget.
func answerDeliveries(c *gin.Context, deliveries DeliveryStore, subject store.DeliverySubject) error {
	rows, err := deliveries.WebhookDeliveries(c.Request.Context(), subject)
	if err != nil {
		return err
	}
	out := make([]deliveryResource, 0, len(rows))
	for _, d := range rows {
		out = append(out, deliveryResource{
			ID:   strconv.FormatInt(d.ID, 10),
			Type: "webhook-delivery",
			Attributes: deliveryAttributes{
				Event:       d.Event,
				MessageID:   d.MessageID,
				Attempt:     d.Attempt,
				AttemptedAt: d.AttemptedAt.UTC(),
				StatusCode:  d.StatusCode,
				Error:       d.Error,
				DurationMS:  d.DurationMS,
				Trigger:     deliveryTrigger(d.Trigger),
			},
		})
	}
	c.JSON(http.StatusOK, gin.H{"data": out})
	return nil
}

// batchDeliveries handles GET /v1/batches/{id}/webhook-deliveries: every
// delivery attempt of the batch's batch.completed event, oldest first.
func (h batchesHandler) batchDeliveries(c *gin.Context) error {
	b, err := h.visible(c, "read")
	if err != nil {
		return err
	}
	return answerDeliveries(c, h.deliveries, store.BatchDeliveries(b.ID))
}

// budgetDeliveries handles GET /v1/budgets/{id}/webhook-deliveries: every
// delivery attempt of the budget's budget.threshold events, oldest first.
// The budget is one of the tenant's now.
func (h usageHandler) budgetDeliveries(c *gin.Context) error {
	tenant, err := h.budgetTenant(c)
	if err != nil {
		return err
	}
	id := c.Param("id")
	if !slices.ContainsFunc(tenant.Budgets, func(b store.Budget) bool { return b.ID == id }) {
		return apierror.NotFound("tenant %s has no budget %s", tenant.ID, id)
	}
	return answerDeliveries(c, h.deliveries, store.BudgetDeliveries(tenant.ID, id))
}

// deliveryTrigger names what sent an attempt (docs/webhooks.md).
func deliveryTrigger(t string) string {
	if t == "" {
		return "delivery"
	}
	return t
}
