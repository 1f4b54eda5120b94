package media

import "github.com/ai-job-gateway/gateway/internal/jobs"

// Error is a failure of a job's media, classified where it is born: the
// job error code it ends the job with, and whether another try may
// succeed. Callers turn it into their own errors (providers.MediaError).
type Error struct {
	// Code is a job error code (jobs.CodeMediaUnavailable and the like).
	Code    string
	Message string
	// Retryable: the failure is transient (the host could not be reached,
	// the transfer was too slow); otherwise the job's input is at fault.
	Retryable bool
	// StatusCode is the media host's HTTP status when it answered.
	StatusCode int
	Err        error
}

func (e *Error) Error() string { return jobs.DescribeFailure(e.Code, e.Message, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// inputError is a failure of the job's input: trying again cannot help.
func inputError(code, msg string, err error) *Error {
	return &Error{Code: code, Message: msg, Err: err}
}

// retryable is a transient failure.
func retryable(code, msg string, err error) *Error {
	return &Error{Code: code, Message: msg, Retryable: true, Err: err}
}
