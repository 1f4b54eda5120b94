package api

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
)

// ReadyCheck is one dependency /readyz waits for.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
	// Degradable: once the check has passed, a failure no longer makes
	// the process unready, and is reported as "degraded". serve's
	// Temporal is one: while it is away, jobs are still accepted into the
	// outbox (docs/operations.md, Health).
	Degradable bool
}

// readyTimeout bounds all of a /readyz's checks.
const readyTimeout = 3 * time.Second

// ReadyHandler answers GET /readyz: 200 when every check passes (or is
// degraded), else 503.
// The body names each dependency and says only "ok" or "unavailable": the
// listener is public, so what failed and why (addresses, users, driver
// errors) goes to the log (docs/operations.md, Health).
func ReadyHandler(checks []ReadyCheck, logger *slog.Logger) gin.HandlerFunc {
	passed := make([]atomic.Bool, len(checks))
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
		defer cancel()
		states := gin.H{}
		ready := true
		for i, check := range checks {
			err := check.Check(ctx)
			switch {
			case err == nil:
				passed[i].Store(true)
				states[check.Name] = "ok"
			case check.Degradable && passed[i].Load():
				logger.Warn("degraded", "dependency", check.Name, "error", err)
				states[check.Name] = "degraded"
			default:
				logger.Warn("not ready", "dependency", check.Name, "error", err)
				states[check.Name] = "unavailable"
				ready = false
			}
		}
		if !ready {
			c.JSON(http.StatusServiceUnavailable, gin.H{"status": "not ready", "checks": states})
			return
		}
		c.JSON(http.StatusOK, gin.H{"status": "ready", "checks": states})
	}
}
