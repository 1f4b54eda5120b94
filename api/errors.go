package api

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
)

// abort stops the handler chain with an error for renderErrors.
func abort(c *gin.Context, err error) {
	_ = c.Error(err)
	c.Abort()
}

// renderErrors writes the one JSON error shape for whatever error a handler
// or middleware left on the context. Unknown errors are logged and answered
// with a 500 that leaks nothing.
func renderErrors(logger *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Next()
		if len(c.Errors) == 0 || c.Writer.Written() {
			return
		}
		err := c.Errors.Last().Err
		var apiErr *apierror.Error
		if !errors.As(err, &apiErr) {
			var maxErr *http.MaxBytesError
			if errors.As(err, &maxErr) {
				apiErr = apierror.New(http.StatusRequestEntityTooLarge, apierror.CodePayloadTooLarge, "the request body is larger than %d bytes", maxErr.Limit)
			} else {
				logger.Error("request failed", "method", c.Request.Method, "path", c.Request.URL.Path, "error", err)
				apiErr = apierror.New(http.StatusInternalServerError, apierror.CodeInternal, "internal error; the request can be retried")
			}
		}
		for key, values := range apiErr.Header {
			for _, v := range values {
				c.Writer.Header().Add(key, v)
			}
		}
		c.JSON(apiErr.Status, gin.H{"error": gin.H{"code": apiErr.Code, "message": apiErr.Message}})
	}
}

// limitBody caps request bodies; reading past the cap fails with
// *http.MaxBytesError, rendered as 413.
func limitBody(limit int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > limit {
			abort(c, apierror.New(http.StatusRequestEntityTooLarge, apierror.CodePayloadTooLarge, "the request body is larger than %d bytes", limit))
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
		c.Next()
	}
}

func notFoundRoute(c *gin.Context) *apierror.Error {
	return apierror.NotFound("no resource at %s", c.Request.URL.Path)
}

func methodNotAllowed(c *gin.Context) *apierror.Error {
	return apierror.New(http.StatusMethodNotAllowed, apierror.CodeMethodNotAllowed, "%s is not allowed on %s", c.Request.Method, c.Request.URL.Path)
}
