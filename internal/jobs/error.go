package jobs

import (
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
)

// Error is the {code, message} of a failed job.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// The codes a failed job's error carries (docs/api.md, Job error codes). Routing and the adapters are where some of them are born; this
// list is their one catalogue.
const (
	// CodeCancelled: the job was cancelled (POST .../cancel).
	CodeCancelled = "CANCELLED"
	// CodeNotStarted: the job's workflow could never be started (Temporal
	// refused the start as invalid); it never ran.
	CodeNotStarted = "JOB_NOT_STARTED"
	// CodeNoEligibleProvider: routing found no provider able and allowed
	// to run the job.
	CodeNoEligibleProvider = policy.CodeNoEligibleProvider
	// CodeProvidersExhausted: every candidate provider failed.
	CodeProvidersExhausted = policy.CodeProvidersExhausted
	// CodeAudioUnreadable: a transcription's audio could not be extracted
	// or decoded.
	CodeAudioUnreadable = providers.CodeAudioUnreadable
	// CodeInputUnreadable: another service's media or document could not
	// be read.
	CodeInputUnreadable = providers.CodeInputUnreadable
	// CodeInvalidInput: the provider judged the job's input invalid.
	CodeInvalidInput = providers.CodeInvalidInput
	// CodeMediaAddressForbidden: the media URL, or a redirect, leads to an
	// address, port or scheme the gateway refuses to call.
	CodeMediaAddressForbidden = providers.CodeMediaAddressForbidden
)
