package api

import (
	"context"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// RequestIDHeader carries a request's id, in the request and in its
// answer (docs/api.md, Request ids).
const RequestIDHeader = "X-Request-Id"

type requestIDKey struct{}

// RequestID is the id of the request ctx serves, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// assignRequestID gives every request an id: the client's X-Request-Id
// when it is a sensible one (1 to 128 of A-Z a-z 0-9 - _ . :), else a new
// UUID. The answer carries it, and so do the request's log lines, its
// error body and its trace span.
func assignRequestID(c *gin.Context) {
	id := c.GetHeader(RequestIDHeader)
	if !validRequestID(id) {
		id = uuid.NewString()
	}
	c.Header(RequestIDHeader, id)
	c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), requestIDKey{}, id))
	trace.SpanFromContext(c.Request.Context()).SetAttributes(attribute.String("http.request_id", id))
	c.Next()
}

func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == ':'
		if !ok {
			return false
		}
	}
	return true
}
