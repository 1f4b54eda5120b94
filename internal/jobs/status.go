// Package jobs is the job model every layer shares: the services (their
// ids, descriptors, request and result shapes), statuses and their
// transitions, the error of a failed job and every job error code, what a
// job asks of a provider (Requirements), its routing record, the
// submission, the workflow's snapshot of a job, the record the store
// persists, the document clients and webhook receivers see, and the names
// of lifecycle events. It also parses a create request's body
// (ParseCreateBody, ParseCreate, ParseWebhook), refusing with a
// *RequestError. It does no I/O and imports only the standard library,
// internal/strictjson, golang.org/x/text/language, golang.org/x/net's
// httpguts and google/uuid: every layer above imports it, never the reverse.
//
// Each service is one file: a request type holding the service's typed
// input and options (strict parsing and validation, capability
// requirements, task priority, result media types and rendering),
// registered under the service's id.
package jobs

// Status is a job's lifecycle status (docs/api.md, Jobs).
type Status string

// The job statuses.
const (
	StatusPending    Status = "pending"
	StatusProcessing Status = "processing"
	StatusCompleted  Status = "completed"
	StatusFailed     Status = "failed"
)

// Statuses lists every status in lifecycle order.
func Statuses() []Status {
	return []Status{StatusPending, StatusProcessing, StatusCompleted, StatusFailed}
}

// Valid reports whether s is one of the job statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusProcessing, StatusCompleted, StatusFailed:
		return true
	}
	return false
}

// Terminal reports whether a job in status s is over: completed or failed.
func (s Status) Terminal() bool { return s == StatusCompleted || s == StatusFailed }

// CanMoveTo reports whether a job may go from s to next in normal
// processing. A pending job is picked up (processing) or fails before any
// provider was chosen (no eligible provider, cancelled); a processing job
// stays processing across failovers and ends completed or failed. Nothing
// leaves a terminal status.
func (s Status) CanMoveTo(next Status) bool {
	switch s {
	case StatusPending:
		// pending -> pending: a pending job's projection says it waits
		// (docs/providers.md, Waiting out an outage).
		return next == StatusPending || next == StatusProcessing || next == StatusFailed
	case StatusProcessing:
		return next == StatusProcessing || next == StatusCompleted || next == StatusFailed
	}
	return false
}

// CanRetryTo reports whether an operator's retry may move a job from s to
// next: a failed job back to pending, the one deliberate exception to
// terminal statuses (docs/operations.md, Retrying jobs).
func (s Status) CanRetryTo(next Status) bool {
	return s == StatusFailed && next == StatusPending
}
