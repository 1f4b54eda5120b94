package jobops

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// Why an operation refused a job. Submit, Cancel and Retry return them wrapped in
// an *Error that says more, except ErrIdempotencyKeyReused, which they
// return bare; errors.Is tells them apart.
var (
	// ErrServiceNotEnabled: the tenant's record disables the service.
	ErrServiceNotEnabled = errors.New("the service is not enabled for the tenant")
	// ErrProviderNotEnabled: the tenant's record disables the provider
	// the job names.
	ErrProviderNotEnabled = errors.New("the provider is not enabled for the tenant")
	// ErrServiceDisabled: an administrator disabled the service.
	ErrServiceDisabled = errors.New("the service is disabled")
	// ErrUnknownProvider: the catalog has no provider of the job's name.
	ErrUnknownProvider = errors.New("unknown provider")
	// ErrUnsupportedOption: the job's provider cannot run it as asked.
	ErrUnsupportedOption = errors.New("the provider does not support the job's options")
	// ErrProviderDisabled: the job's provider is disabled, or disabled
	// for the service.
	ErrProviderDisabled = errors.New("the provider is disabled")
	// ErrRateLimited: the job's provider used its published request
	// limit, or its tenant or API key has as many jobs in flight as it
	// may; Error.RetryAfter says when to try again.
	ErrRateLimited = errors.New("over a request limit")
	// ErrBudgetExceeded: the job's estimate does not fit one of its
	// tenant's budgets (docs/api.md, Budgets).
	ErrBudgetExceeded = errors.New("the budget is exceeded")
	// ErrUnknownPolicy: no policy of the job's policy_id that the
	// tenant may use.
	ErrUnknownPolicy = errors.New("unknown policy")
	// ErrInvalid: a member of the job breaks a rule Submit checks (a
	// policy that does not cover the service, a URL of a non-public
	// address).
	ErrInvalid = errors.New("invalid job")
	// ErrIdempotencyKeyReused: the Idempotency-Key stands for another
	// request, or for another tenant's or service's job.
	ErrIdempotencyKeyReused = errors.New("the idempotency key was used with a different request")
	// ErrJobFinished: the job to cancel is completed or failed.
	ErrJobFinished = errors.New("the job is finished")
	// ErrJobDeleted: the job was deleted; its tombstone remains.
	ErrJobDeleted = errors.New("the job was deleted")
	// ErrUnknownJob: no job of the id (vendor callbacks).
	ErrUnknownJob = errors.New("unknown job")
	// ErrCallbackToken: a vendor callback's token does not match its job
	// and attempt.
	ErrCallbackToken = errors.New("the callback token does not match")
	// ErrUnavailable: the operation could not be carried out now; the
	// client may retry it.
	ErrUnavailable = errors.New("unavailable")
)

// Error is an operation's refusal, for the client: Kind is one of the Err
// values above, Message says what is wrong in the client's terms, and
// Pointer, when set, is the JSON pointer of the job's member at fault,
// relative to its attributes (/provider, /input/url), as in
// jobs.FieldError.
type Error struct {
	Kind    error
	Pointer string
	Message string
	// RetryAfter, for ErrRateLimited, is when to retry, in whole seconds.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Pointer != "" {
		return e.Pointer + ": " + e.Message
	}
	return e.Message
}

// Unwrap returns Kind, so that errors.Is matches it.
func (e *Error) Unwrap() error { return e.Kind }

// refusals are the HTTP status and error code of each kind of refusal
// (docs/api.md, Errors), the API's and a batch's refused items' alike.
var refusals = map[error]struct {
	status int
	code   string
}{
	ErrServiceNotEnabled:    {http.StatusForbidden, "SERVICE_NOT_ENABLED"},
	ErrProviderNotEnabled:   {http.StatusForbidden, "PROVIDER_NOT_ENABLED"},
	ErrServiceDisabled:      {http.StatusUnprocessableEntity, "SERVICE_DISABLED"},
	ErrUnknownProvider:      {http.StatusUnprocessableEntity, "UNKNOWN_PROVIDER"},
	ErrUnsupportedOption:    {http.StatusUnprocessableEntity, "UNSUPPORTED_OPTION"},
	ErrProviderDisabled:     {http.StatusUnprocessableEntity, "PROVIDER_DISABLED"},
	ErrUnknownPolicy:        {http.StatusUnprocessableEntity, "UNKNOWN_POLICY"},
	ErrInvalid:              {http.StatusUnprocessableEntity, jobs.RequestInvalid},
	ErrRateLimited:          {http.StatusTooManyRequests, "RATE_LIMITED"},
	ErrBudgetExceeded:       {http.StatusPaymentRequired, "BUDGET_EXCEEDED"},
	ErrJobFinished:          {http.StatusConflict, "JOB_FINISHED"},
	ErrNotRetryable:         {http.StatusConflict, "JOB_NOT_RETRYABLE"},
	ErrNoWebhook:            {http.StatusConflict, "JOB_HAS_NO_WEBHOOK"},
	ErrNotResendable:        {http.StatusConflict, "WEBHOOK_NOT_RESENDABLE"},
	ErrPayloadUndecryptable: {http.StatusConflict, "PAYLOAD_UNDECRYPTABLE"},
	ErrUnknownJob:           {http.StatusNotFound, "NOT_FOUND"},
	ErrJobDeleted:           {http.StatusGone, "JOB_DELETED"},
	ErrCallbackToken:        {http.StatusForbidden, "FORBIDDEN"},
	ErrUnavailable:          {http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE"},
}

// RefusalCodes are the error codes of every kind of refusal, sorted (api's tests check them against openapi.yaml).
func RefusalCodes() []string {
	codes := make([]string, 0, len(refusals))
	for _, r := range refusals {
		codes = append(codes, r.code)
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

// Status is the HTTP status the refusal is answered with (docs/api.md,
// Errors); 0 for a Kind that is none of the Err values above.
func (e *Error) Status() int { return refusals[e.Kind].status }

// Code is the error code the refusal is answered with (docs/api.md,
// Errors); "" when Status is 0.
func (e *Error) Code() string { return refusals[e.Kind].code }

// ClientMessage is the message as the client reads it: Pointer, when
// set, within the request's document (/data/attributes/provider).
func (e *Error) ClientMessage() string {
	if e.Pointer != "" {
		return jobs.PtrAttributes + e.Pointer + ": " + e.Message
	}
	return e.Message
}

func refuse(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

func refuseField(kind error, pointer, format string, args ...any) *Error {
	return &Error{Kind: kind, Pointer: pointer, Message: fmt.Sprintf(format, args...)}
}
