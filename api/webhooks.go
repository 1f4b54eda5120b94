package api

import (
	"context"
	"crypto/ed25519"
	"net/http"
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

// DeliveryStore reads the record of webhook delivery attempts.
type DeliveryStore interface {
	ListDeliveries(ctx context.Context, jobID string) ([]store.WebhookDelivery, error)
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
		rows, err := h.deliveries.ListDeliveries(c.Request.Context(), job.ID)
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
	})
}

// deliveryTrigger names what sent an attempt (docs/webhooks.md).
func deliveryTrigger(t string) string {
	if t == "" {
		return "delivery"
	}
	return t
}
