// Package apierror is the one error type API handlers and middleware return;
// the API renders it as {"error": {"code", "message", "pointer"}}
// (docs/api.md, Errors).
package apierror

import (
	"fmt"
	"net/http"
	"strings"
)

// Error is an API error with its HTTP status and machine-readable code.
type Error struct {
	Status  int
	Code    string
	Message string
	// Pointer is the JSON pointer of the request body's member at fault,
	// rendered as error.pointer; empty when no one member is (a query
	// parameter or a header is named in Message only; docs/api.md, Errors).
	Pointer string
	// Header holds extra response headers (WWW-Authenticate, Retry-After).
	Header http.Header
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// New builds an error with a formatted message.
func New(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// At returns the error with the JSON pointer of the request body's member
// at fault; a pointer that is not one (empty, or not starting with /, such
// as "header X-Application") leaves it without.
func (e *Error) At(pointer string) *Error {
	if strings.HasPrefix(pointer, "/") {
		e.Pointer = pointer
	}
	return e
}

// WithHeader returns the error with one more response header.
func (e *Error) WithHeader(key, value string) *Error {
	if e.Header == nil {
		e.Header = http.Header{}
	}
	e.Header.Set(key, value)
	return e
}

// Codes (docs/api.md, Errors).
const (
	CodeUnauthorized      = "UNAUTHORIZED"
	CodeInsufficientScope = "INSUFFICIENT_SCOPE"
	CodeForbidden         = "FORBIDDEN"
	CodeNotFound          = "NOT_FOUND"
	CodeResultNotReady    = "RESULT_NOT_READY"
	CodeJobFailed         = "JOB_FAILED"
	CodeJobFinished       = "JOB_FINISHED"
	CodeMalformedJSON     = "MALFORMED_JSON"
	CodePayloadTooLarge   = "PAYLOAD_TOO_LARGE"
	// CodeRequestTimeout: the request body was not received within the
	// server's read timeout.
	CodeRequestTimeout = "REQUEST_TIMEOUT"
	// CodeIncompleteBody: the connection ended before the announced body.
	CodeIncompleteBody     = "INCOMPLETE_BODY"
	CodeValidation         = "VALIDATION_ERROR"
	CodeProviderAndPolicy  = "PROVIDER_AND_POLICY"
	CodeUnknownProvider    = "UNKNOWN_PROVIDER"
	CodeUnknownPolicy      = "UNKNOWN_POLICY"
	CodeUnsupportedOption  = "UNSUPPORTED_OPTION"
	CodeServiceDisabled    = "SERVICE_DISABLED"
	CodeProviderDisabled   = "PROVIDER_DISABLED"
	CodeServiceNotEnabled  = "SERVICE_NOT_ENABLED"
	CodeProviderNotEnabled = "PROVIDER_NOT_ENABLED"
	CodeConflict           = "CONFLICT"
	CodeRateLimited        = "RATE_LIMITED"
	CodeMethodNotAllowed   = "METHOD_NOT_ALLOWED"
	// CodeNotAcceptable: the route cannot answer the Accept header's types.
	CodeNotAcceptable      = "NOT_ACCEPTABLE"
	CodeInternal           = "INTERNAL_ERROR"
	CodeServiceUnavailable = "SERVICE_UNAVAILABLE"
	// CodeIdempotencyKeyReused answers a live Idempotency-Key sent with
	// another request (docs/api.md, Cancel and idempotency).
	CodeIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"
	// CodeJobNotRetryable answers a retry of a job that is not failed,
	// never started or runs again already (docs/api.md, Retrying a failed
	// job).
	CodeJobNotRetryable = "JOB_NOT_RETRYABLE"
	// CodeJobHasNoWebhook answers a webhook resend of a job submitted
	// without a webhook (docs/webhooks.md).
	CodeJobHasNoWebhook = "JOB_HAS_NO_WEBHOOK"
	// CodeWebhookNotResendable answers a webhook resend of a job whose
	// workflow history is gone (docs/webhooks.md).
	CodeWebhookNotResendable = "WEBHOOK_NOT_RESENDABLE"
	// CodePayloadUndecryptable: payloads (a job's workflow history, or a
	// codec request's) that the server's payload keys cannot decrypt
	// (docs/operations.md, Payload encryption).
	CodePayloadUndecryptable = "PAYLOAD_UNDECRYPTABLE"
	// CodeJobDeleted answers every request on a deleted job but its
	// tenant's other jobs (docs/api.md, Deleting a job).
	CodeJobDeleted = "JOB_DELETED"
	// CodeResultExpired answers the result of a job whose result expired
	// by its tenant's retention (docs/api.md, Retention).
	CodeResultExpired = "RESULT_EXPIRED"
	// CodeBudgetExceeded answers a job whose estimate, known at creation,
	// does not fit one of its tenant's budgets (402).
	CodeBudgetExceeded = "BUDGET_EXCEEDED"
)

// Unauthorized is the 401 for a missing or invalid token.
func Unauthorized(message string) *Error {
	return New(http.StatusUnauthorized, CodeUnauthorized, "%s", message).
		WithHeader("WWW-Authenticate", `Bearer error="invalid_token"`)
}

// InsufficientScope is the 403 for a token without the needed scope.
func InsufficientScope(scope string) *Error {
	return New(http.StatusForbidden, CodeInsufficientScope, "the token lacks the scope %q", scope)
}

// Forbidden is the 403 for a caller without the privilege.
func Forbidden(format string, args ...any) *Error {
	return New(http.StatusForbidden, CodeForbidden, format, args...)
}

// NotFound is the 404 for an unknown (or hidden) resource.
func NotFound(format string, args ...any) *Error {
	return New(http.StatusNotFound, CodeNotFound, format, args...)
}

// Validation is the 422 for a request field that breaks a rule; pointer is
// the field's JSON pointer, which the message starts with and error.pointer
// repeats (At), or the name of a header or query parameter, which only the
// message carries.
func Validation(pointer, format string, args ...any) *Error {
	return New(http.StatusUnprocessableEntity, CodeValidation, "%s: %s", pointer, fmt.Sprintf(format, args...)).At(pointer)
}

// Unprocessable is a 422 with a specific code. A message that starts
// with the JSON pointer of the member at fault ("/data/…: …") gives the
// error its Pointer.
func Unprocessable(code, format string, args ...any) *Error {
	e := New(http.StatusUnprocessableEntity, code, format, args...)
	if pointer, _, ok := strings.Cut(e.Message, ": "); ok && !strings.ContainsRune(pointer, ' ') {
		e.At(pointer)
	}
	return e
}
