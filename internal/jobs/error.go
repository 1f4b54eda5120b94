package jobs

// Error is the {code, message} of a failed job.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// DescribeFailure writes a classified failure as "CODE: message: cause",
// leaving out what is empty.
func DescribeFailure(code, message string, cause error) string {
	s := code
	if message != "" {
		s += ": " + message
	}
	if cause != nil {
		s += ": " + cause.Error()
	}
	return s
}

// The codes a failed job's error carries (docs/api.md, Job error codes).
// Routing, the media stage and the adapters are where they are born; this
// list is their one catalogue.
const (
	// CodeCancelled: the job was cancelled (POST .../cancel).
	CodeCancelled = "CANCELLED"
	// CodeNotStarted: the job's workflow could never be started (Temporal
	// refused the start as invalid); it never ran.
	CodeNotStarted = "JOB_NOT_STARTED"
	// CodeWorkflowClosed: the job's workflow ended without recording the
	// job's outcome (terminated, timed out, or failed outside the job's
	// code); the reconciliation sweep records it.
	CodeWorkflowClosed = "WORKFLOW_CLOSED"

	// CodeNoEligibleProvider: routing found no provider able and allowed
	// to run the job (the first attempt).
	CodeNoEligibleProvider = "NO_ELIGIBLE_PROVIDER"
	// CodeProvidersExhausted: every candidate provider failed.
	CodeProvidersExhausted = "PROVIDERS_EXHAUSTED"
	// CodeFileTooLarge and CodeMediaTooLong: every provider left is
	// excluded by its max_file_size_mb (max_duration_seconds) alone, or
	// the file exceeds what a provider takes.
	CodeFileTooLarge = "FILE_TOO_LARGE"
	CodeMediaTooLong = "MEDIA_TOO_LONG"

	// Provider call failures; the adapter classifies them as retryable,
	// permanent or an input error.
	CodeProviderUnavailable = "PROVIDER_UNAVAILABLE" // retryable
	CodeProviderRejected    = "PROVIDER_REJECTED"    // permanent
	CodeBadResponse         = "PROVIDER_BAD_RESPONSE"
	CodeUnsupportedService  = "UNSUPPORTED_SERVICE"
	CodeUnsupportedInput    = "UNSUPPORTED_INPUT"
	CodeUnsupportedOption   = "UNSUPPORTED_OPTION"

	// CodeAudioUnreadable: a transcription's audio could not be extracted
	// or decoded (an input error).
	CodeAudioUnreadable = "AUDIO_UNREADABLE"
	// CodeInputUnreadable: another service's media or document could not
	// be read (an input error).
	CodeInputUnreadable = "INPUT_UNREADABLE"
	// CodeInvalidInput: the provider judged the job's input invalid.
	CodeInvalidInput = "INVALID_INPUT"
	// CodeMediaUnavailable: the media could not be fetched: the host could
	// not be reached (retryable) or refused it with a 4xx (input error).
	CodeMediaUnavailable = "MEDIA_UNAVAILABLE"
	// CodeMediaProcessingUnavailable: this gateway cannot process the
	// job's media: no blob store, or no ffmpeg on the worker.
	CodeMediaProcessingUnavailable = "MEDIA_PROCESSING_UNAVAILABLE"
	// CodeMediaAddressForbidden: the media URL, or a redirect, leads to an
	// address, port or scheme the gateway refuses to call (input error).
	CodeMediaAddressForbidden = "MEDIA_ADDRESS_FORBIDDEN"
	// CodeOutputInvalid: an llm-task's providers answered, but not what
	// its response_format asks, and no provider is left (docs/api.md, LLM
	// tasks).
	CodeOutputInvalid = "OUTPUT_INVALID"
	// CodeBudgetExceeded: the job's estimate does not fit one of its
	// tenant's budgets; no provider was called (docs/api.md, Budgets).
	CodeBudgetExceeded = "BUDGET_EXCEEDED"
)
