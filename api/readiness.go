package api

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
)

// ReadyCheck is one dependency /readyz waits for.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
	// Degradable: once the check has passed, a failure no longer makes
	// the process unready, and is reported as "degraded" (serve's token
	// issuer: tokens are checked against the keys already fetched).
	Degradable bool
	// Optional: a failure never makes the process unready, and is
	// reported as "degraded" (serve's Temporal: jobs go to the outbox
	// meanwhile). docs/operations.md, Health.
	Optional bool
}

// readyTimeout bounds each check of a /readyz. The checks run at once, so
// the answer comes within it, under a probe's usual timeout, even when a
// dependency hangs rather than refuses.
const readyTimeout = 800 * time.Millisecond

// ReadyHandler answers GET /readyz: 200 when every check passes (or is
// degraded), else 503. The body names each dependency and says only "ok",
// "degraded" or "unavailable": the listener is public, so what failed and
// why (addresses, users, driver errors) goes to the log
// (docs/operations.md, Health).
func ReadyHandler(checks []ReadyCheck, logger *slog.Logger) gin.HandlerFunc {
	passed := make([]atomic.Bool, len(checks))
	return func(c *gin.Context) {
		errs := make([]error, len(checks))
		var wg sync.WaitGroup
		for i, check := range checks {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
				defer cancel()
				errs[i] = check.Check(ctx)
			})
		}
		wg.Wait()
		states := gin.H{}
		ready := true
		for i, check := range checks {
			err := errs[i]
			switch {
			case err == nil:
				passed[i].Store(true)
				states[check.Name] = "ok"
			case check.Optional || check.Degradable && passed[i].Load():
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
