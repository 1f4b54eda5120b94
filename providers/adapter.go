package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// Call is one provider call for one job.
type Call struct {
	JobID    string
	Service  jobs.ServiceID
	Provider *Provider
	// Input is the job's input object as validated by the API; decode it
	// into TranscriptionInput and the like.
	Input json.RawMessage
	// Options is the job's options object; it may be empty or null.
	Options json.RawMessage
	// ResumeFrom is the progress (0..100) an earlier attempt of this call
	// reached; adapters that can resume skip the work already done.
	ResumeFrom int
	// Report is called with increasing percentages 0..100; it may be nil.
	Report func(progress int)
	// Stream, when not nil, asks for the answer as it is written: an
	// adapter whose vendor streams calls it with each new piece of text,
	// in order (docs/api.md, Streamed answers). Its result is the whole
	// answer all the same. Adapters that cannot stream leave it uncalled.
	Stream func(text string)
	// Media is the job's media as the gateway's media stage prepared it
	// (docs/media.md); nil for jobs without media, and for jobs that
	// started before the media stage existed (adapters then read
	// input.url themselves).
	Media *Media
	// ResultFile is where an adapter that produces a file (a translated
	// document) writes it; the gateway stores the file and links it as
	// the result's download_url. Empty when the job has no result file.
	ResultFile string
	// Delegate runs a call on another provider of the catalog, for an
	// adapter that hands part of its job on (the media adapter's
	// speech_to_text); nil where the caller offers none.
	Delegate func(ctx context.Context, providerID string, call Call) (json.RawMessage, error)

	// CallbackURL, for Submit, is where the provider may post its result
	// back (docs/providers.md, Vendor callbacks); empty when the gateway
	// takes no callbacks.
	CallbackURL string
	// Callback, for Check, is what the provider posted back; nil while it
	// has posted nothing.
	Callback []byte
	// Submitted, for Check, is when the work was submitted.
	Submitted time.Time
}

// Media is a job's media, fetched once and checked by the gateway.
type Media struct {
	// Path is a local file holding the media for the call's duration:
	// for transcriptions the selected audio track as 16 kHz mono 16-bit
	// PCM WAV, otherwise the file as fetched.
	Path string
	// ContentType is the media type of the file at Path.
	ContentType string
	// Size is its size in bytes.
	Size int64
	// Duration is its length in seconds; 0 for documents.
	Duration float64
	// VideoMetadata describes the video, when the media has one.
	VideoMetadata *jobs.VideoMetadata
}

// Decode reads the call's input into in, and its options, when given, into
// opts. What does not decode is the job's own input error.
func (c Call) Decode(in, opts any) error {
	if err := json.Unmarshal(c.Input, in); err != nil {
		return InputError(jobs.CodeInvalidInput, "cannot decode the job input", err)
	}
	if len(c.Options) > 0 && string(c.Options) != "null" {
		if err := json.Unmarshal(c.Options, opts); err != nil {
			return InputError(jobs.CodeInvalidInput, "cannot decode the job options", err)
		}
	}
	return nil
}

// Capability returns the provider's capability for the call's service, or
// a zero one when the catalog lists none.
func (c Call) Capability() Capability {
	if c.Provider != nil {
		if capab := c.Provider.Services[c.Service]; capab != nil {
			return *capab
		}
	}
	return Capability{}
}

// Progress reports progress when the call has a Report function.
func (c Call) Progress(p int) {
	if c.Report != nil {
		c.Report(p)
	}
}

// Adapter calls one provider.
type Adapter interface {
	// Services are the services the adapter serves (docs/providers.md,
	// Writing an adapter). The registry refuses a catalog entry that
	// lists another service, and refuses calls for another service before
	// they reach the adapter, so Run, Submit and Check need not check
	// call.Service themselves.
	Services() []jobs.ServiceID
	// Run performs the call and returns the result object of the job's
	// service, JSON-encoded. Failures are *Error values, except that a
	// cancelled or expired ctx gives ctx.Err().
	Run(ctx context.Context, call Call) (json.RawMessage, error)
}

// Submitter is an Adapter whose provider works asynchronously: it takes
// the work, answers with a handle, and is asked later how the work went
// (docs/providers.md, Asynchronous providers). The job workflow submits
// once, then checks on durable timers, so no worker holds the job while
// the provider works and a restart in between submits nothing twice. Run
// stays for callers that want the whole call in one go (it submits, then
// checks in a loop).
type Submitter interface {
	Adapter
	// Submit hands the call to the provider and returns the provider's
	// handle of the work. Failures are classified as Run's.
	Submit(ctx context.Context, call Call) (handle string, err error)
	// Check asks the provider about submitted work. The call carries no
	// media and no result file. A provider's verdict that the work failed
	// is an *Error, classified as Run's.
	Check(ctx context.Context, call Call, handle string) (Check, error)
}

// Check is what a provider said about submitted work.
type Check struct {
	// Done: Result holds the result object of the job's service.
	Done   bool
	Result json.RawMessage
	// Progress is the provider's estimate (0..100) while not done.
	Progress int
	// Wait is the provider's hint of when to ask again; 0 leaves it to
	// the gateway's backoff.
	Wait time.Duration
}

// DurationEstimator is an Adapter that knows how long its calls take,
// because it bounds them (the sandbox). The job workflow runs calls
// expected to be short as local activities, so an adapter whose calls can
// run long (a network API) must not implement it. The catalog's
// latency_ms_hint is a routing input only.
type DurationEstimator interface {
	ExpectedDuration() time.Duration
}

// Factory builds the adapter of a provider, validating p.Settings.
type Factory func(p *Provider) (Adapter, error)

// ErrorKind tells the caller of an adapter what to do about a failure.
type ErrorKind int

// Error kinds.
const (
	// KindRetryable is a transient failure (429, 5xx, timeouts, network):
	// retry the same provider.
	KindRetryable ErrorKind = iota
	// KindPermanent means the provider refuses this job for good (4xx
	// auth, unsupported input): try another provider.
	KindPermanent
	// KindInput means the job's input itself is bad (unreadable audio):
	// fail the job at once.
	KindInput
)

// String names the kind.
func (k ErrorKind) String() string {
	switch k {
	case KindRetryable:
		return "retryable"
	case KindPermanent:
		return "permanent"
	case KindInput:
		return "input"
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// Error is a classified provider call failure.
type Error struct {
	Kind       ErrorKind
	Code       string
	Message    string
	StatusCode int // HTTP status of the provider's answer, when there was one
	// RetryAfter is how long the provider asked to wait before the next
	// try (its Retry-After header); 0 leaves the wait to the retry policy.
	RetryAfter time.Duration
	Err        error
}

// RetryAfterHeader parses a Retry-After header given in seconds (the form
// APIs use); 0 when absent, malformed or over an hour.
func RetryAfterHeader(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > 3600 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// Error returns the code, the message and the cause.
func (e *Error) Error() string { return jobs.DescribeFailure(e.Code, e.Message, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Retryable builds a KindRetryable error.
func Retryable(code, msg string, err error) *Error {
	return &Error{Kind: KindRetryable, Code: code, Message: msg, Err: err}
}

// Permanent builds a KindPermanent error.
func Permanent(code, msg string, err error) *Error {
	return &Error{Kind: KindPermanent, Code: code, Message: msg, Err: err}
}

// InputError builds a KindInput error.
func InputError(code, msg string, err error) *Error {
	return &Error{Kind: KindInput, Code: code, Message: msg, Err: err}
}
