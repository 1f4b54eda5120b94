package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// ReadyCheck is one dependency /readyz waits for.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// readyTimeout bounds all of a /readyz's checks.
const readyTimeout = 3 * time.Second

// ReadyHandler answers GET /readyz: 200 when every check passes, else 503.
// The body names each dependency and says only "ok" or "unavailable": the
// listener is public, so what failed and why (addresses, users, driver
// errors) goes to the log (docs/operations.md, Health).
func ReadyHandler(checks []ReadyCheck, logger *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
		defer cancel()
		states := gin.H{}
		ready := true
		for _, check := range checks {
			if err := check.Check(ctx); err != nil {
				logger.Warn("not ready", "dependency", check.Name, "error", err)
				states[check.Name] = "unavailable"
				ready = false
				continue
			}
			states[check.Name] = "ok"
		}
		if !ready {
			c.JSON(http.StatusServiceUnavailable, gin.H{"status": "not ready", "checks": states})
			return
		}
		c.JSON(http.StatusOK, gin.H{"status": "ready", "checks": states})
	}
}
