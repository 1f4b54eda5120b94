package api

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// abort stops the handler chain with an error for renderErrors.
func abort(c *gin.Context, err error) {
	_ = c.Error(err)
	c.Abort()
}

// handle adapts a handler that returns its error: a non-nil error stops
// the chain and goes to renderErrors.
func handle(h func(*gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := h(c); err != nil {
			abort(c, err)
		}
	}
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
		apiErr := classify(c, logger, c.Errors.Last().Err)
		body := gin.H{"code": apiErr.Code, "message": apiErr.Message}
		if apiErr.Pointer != "" {
			body["pointer"] = apiErr.Pointer // the member at fault (docs/api.md, Errors)
		}
		if id := RequestID(c.Request.Context()); id != "" {
			body["request_id"] = id // what to quote to support
		}
		writeError(c, apiErr.Status, apiErr.Header, gin.H{"error": body})
	}
}

// writeError answers an error: the rest of an unread request body is
// dealt with, header added, then body as JSON with status.
func writeError(c *gin.Context, status int, header http.Header, body any) {
	if bodyUnread(c) {
		endUnreadBody(c)
	}
	for key, values := range header {
		for _, v := range values {
			c.Writer.Header().Add(key, v)
		}
	}
	c.JSON(status, body)
}

// classify is err as the API answers it: an API error or a create request
// the job model refused (asAPIError), a body too large or not received, an
// unreachable database (503 with Retry-After), else a 500 that leaks
// nothing. What is not the client's doing is logged.
func classify(c *gin.Context, logger *slog.Logger, err error) *apierror.Error {
	if apiErr := asAPIError(err); apiErr != nil {
		return apiErr
	}
	var maxErr *http.MaxBytesError
	var bodyErr *bodyReadError
	switch {
	case errors.As(err, &maxErr):
		return apierror.New(http.StatusRequestEntityTooLarge, apierror.CodePayloadTooLarge, "the request body is larger than %d bytes", maxErr.Limit)
	case errors.As(err, &bodyErr):
		// A client's problem: logged as such, never as a 5xx.
		logger.Info("request body not received", "method", c.Request.Method, "path", c.Request.URL.Path, "request_id", RequestID(c.Request.Context()), "error", err)
		if bodyErr.timedOut() {
			return apierror.New(http.StatusRequestTimeout, apierror.CodeRequestTimeout, "the request body was not received in time; send it again")
		}
		return apierror.New(http.StatusBadRequest, apierror.CodeIncompleteBody, "the request body ended before its end; send it again")
	case store.Unavailable(err):
		logger.Warn("database unavailable", "method", c.Request.Method, "path", c.Request.URL.Path, "request_id", RequestID(c.Request.Context()), "error", err)
		return apierror.New(http.StatusServiceUnavailable, apierror.CodeServiceUnavailable,
			"the gateway's database cannot be reached or did not answer in time; retry after Retry-After seconds").
			WithHeader("Retry-After", strconv.Itoa(unavailableRetryAfter))
	default:
		logger.Error("request failed", "method", c.Request.Method, "path", c.Request.URL.Path, "request_id", RequestID(c.Request.Context()), "error", err)
		return apierror.New(http.StatusInternalServerError, apierror.CodeInternal, "internal error; the request can be retried")
	}
}

// asAPIError is err as the API answers it, if it is an API error or a
// create request the job model refused (422 with the refusal's code,
// docs/api.md, Errors); nil for any other error.
func asAPIError(err error) *apierror.Error {
	var apiErr *apierror.Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	var reqErr *jobs.RequestError
	if errors.As(err, &reqErr) {
		return apierror.Unprocessable(reqErr.Code, "%s", reqErr.Error()).At(reqErr.Pointer)
	}
	return nil
}

// refusalPointer is the JSON pointer, in the create request's body, of the
// member a job operation's refusal is about ("" when none is).
func refusalPointer(refusal *jobops.Error) string {
	if refusal.Pointer == "" {
		return ""
	}
	return jobs.PtrAttributes + refusal.Pointer
}

// unavailableRetryAfter is the Retry-After, in seconds, of a request
// answered 503 because the database could not be reached.
const unavailableRetryAfter = 5

// limitBody caps request bodies at limit, or at the limit given for the
// request's route; reading past the cap fails with *http.MaxBytesError,
// rendered as 413.
func limitBody(limit int64, routeLimits map[string]int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		limit := limit
		if l, ok := routeLimits[c.FullPath()]; ok {
			limit = l
		}
		if c.Request.ContentLength > limit {
			abort(c, apierror.New(http.StatusRequestEntityTooLarge, apierror.CodePayloadTooLarge, "the request body is larger than %d bytes", limit))
			return
		}
		c.Request.Body = &trackedBody{ReadCloser: http.MaxBytesReader(c.Writer, c.Request.Body, limit)}
		c.Next()
	}
}

// trackedBody records whether a request body was read to its end.
type trackedBody struct {
	io.ReadCloser
	done bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var maxErr *http.MaxBytesError
	switch {
	case err == nil:
	case err == io.EOF:
		b.done = true
	case errors.As(err, &maxErr):
	default:
		// The client's connection failed us, not the database: classified
		// here, before anything could mistake it for a store outage.
		err = &bodyReadError{err: err}
	}
	return n, err
}

// bodyReadError is a request body the client did not finish sending: it
// stalled past the server's read timeout, or its connection ended early.
type bodyReadError struct{ err error }

func (e *bodyReadError) Error() string { return "read the request body: " + e.err.Error() }
func (e *bodyReadError) Unwrap() error { return e.err }

// timedOut reports whether the client stalled rather than hung up.
func (e *bodyReadError) timedOut() bool {
	var netErr net.Error
	return errors.As(e.err, &netErr) && netErr.Timeout()
}

// unreadBodyGrace is how long the server still reads a body it answered
// without reading, before it closes the connection (docs/operations.md).
const unreadBodyGrace = time.Second

// endUnreadBody makes an answer given without reading the request's body
// the connection's last: net/http would otherwise read up to 256 KiB of
// the body, as slowly as the client sends it, before answering and again
// before closing. Within unreadBodyGrace the rest of the body is still
// read, so a client that sent it gets the answer rather than a reset.
func endUnreadBody(c *gin.Context) {
	c.Header("Connection", "close")
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now().Add(unreadBodyGrace))
}

// bodyUnread reports whether the request announced a body that was not
// read to its end.
func bodyUnread(c *gin.Context) bool {
	if c.Request.ContentLength == 0 {
		return false
	}
	b, ok := c.Request.Body.(*trackedBody)
	return !ok || !b.done
}

func notFoundRoute(c *gin.Context) error {
	return apierror.NotFound("no resource at %s", c.Request.URL.Path)
}

func methodNotAllowed(c *gin.Context) error {
	return apierror.New(http.StatusMethodNotAllowed, apierror.CodeMethodNotAllowed, "%s is not allowed on %s", c.Request.Method, c.Request.URL.Path)
}
