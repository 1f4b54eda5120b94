package api

import (
	"context"
	"io"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/internal/vendorcallback"
)

// CallbackReceiver takes what vendors post back about jobs
// (*jobops.Service is one).
type CallbackReceiver interface {
	ReceiveProviderCallback(ctx context.Context, jobID string, attempt int, token string, body []byte) error
}

// callbackRoutes registers POST /v1/provider-callbacks/{job_id}/{attempt}:
// vendors carry no token of ours, so the route is outside /v1's
// authentication and its own token is in the query (docs/providers.md,
// Vendor callbacks).
func (s *Server) callbackRoutes(r gin.IRouter) {
	r.POST(vendorcallback.Path, handle(s.receiveProviderCallback))
}

// receiveProviderCallback handles POST
// /v1/provider-callbacks/{job_id}/{attempt}?token=.
func (s *Server) receiveProviderCallback(c *gin.Context) error {
	jobID := c.Param("job_id")
	attempt, err := strconv.Atoi(c.Param("attempt"))
	if s.cfg.Callbacks == nil || err != nil {
		return apierror.NotFound("no callback address %s", c.Request.URL.Path)
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return apierror.New(http.StatusBadRequest, apierror.CodeValidation, "the callback has no body")
	}
	if err := s.cfg.Callbacks.ReceiveProviderCallback(c.Request.Context(), jobID, attempt, c.Query("token"), body); err != nil {
		return jobopsError(err)
	}
	c.Status(http.StatusNoContent)
	return nil
}
