package jobs

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ai-job-gateway/gateway/internal/strictjson"
)

// Media types a job's result can be served as.
const (
	MediaJSON = "application/json"
	MediaSRT  = "text/srt"
	MediaVTT  = "text/vtt"
	MediaText = "text/plain"
)

// ServiceID names one of the gateway's job services; it is also the URL
// segment jobs of that service are created under.
type ServiceID string

// The gateway's services.
const (
	Transcriptions ServiceID = "transcriptions"
	Translations   ServiceID = "translations"
	VideoAnalyses  ServiceID = "video-analyses"
	LLMTasks       ServiceID = "llm-tasks"
)

// Service is the static description of a job service.
type Service struct {
	ID          ServiceID
	Name        string
	Description string
	// JobType is the data.type discriminator of the service's jobs.
	JobType string
	// EventPrefix starts the names of the service's webhook events
	// ("transcription" gives "transcription.completed").
	EventPrefix string
	// SendsProgress tells whether the service emits *.progress events.
	SendsProgress bool
	// Features are the capability features defined for the service (none
	// for llm-tasks, whose capability lists models instead).
	Features []string
}

// Endpoint is the base path jobs of the service are created under.
func (s Service) Endpoint() string { return "/v1/" + string(s.ID) }

var services = []Service{
	{
		ID:            Transcriptions,
		Name:          "Transcriptions",
		Description:   "Audio or video to time-aligned text.",
		JobType:       "transcription-job",
		EventPrefix:   "transcription",
		SendsProgress: true,
		Features:      TranscriptionFeatures,
	},
	{
		ID:            Translations,
		Name:          "Translations",
		Description:   "Text or document translation.",
		JobType:       "translation-job",
		EventPrefix:   "translation",
		SendsProgress: true,
		Features:      TranslationFeatures,
	},
	{
		ID:            VideoAnalyses,
		Name:          "Video analyses",
		Description:   "Structured metadata extracted from video.",
		JobType:       "video-analysis-job",
		EventPrefix:   "video-analysis",
		SendsProgress: true,
		Features:      VideoAnalysisFeatures,
	},
	{
		ID:            LLMTasks,
		Name:          "LLM tasks",
		Description:   "Generic language-model task, independent of vendor or model.",
		JobType:       "llm-task-job",
		EventPrefix:   "llm-task",
		SendsProgress: false,
	},
}

// Services lists the gateway's services in their documented order.
func Services() []Service {
	out := make([]Service, len(services))
	copy(out, services)
	return out
}

// LookupService finds a service by id.
func LookupService(id string) (Service, bool) {
	for _, s := range services {
		if string(s.ID) == id {
			return s, true
		}
	}
	return Service{}, false
}

// MustService returns the service with the given id and panics for an
// unknown one; use it only with the constants above.
func MustService(id ServiceID) Service {
	s, ok := LookupService(string(id))
	if !ok {
		panic("jobs: unknown service " + string(id))
	}
	return s
}

// Features a provider can offer, per service.
var (
	TranscriptionFeatures = []string{"language_detection", "diarization", "timestamps"}
	TranslationFeatures   = []string{"language_detection", "formality"}
	VideoAnalysisFeatures = []string{"labels", "scenes", "faces", "speech_to_text", "ocr", "content_moderation", "sentiment", "topics", "brands", "summary"}
)

// Spec is one service's part of the job model.
type Spec interface {
	Service() Service
	// Parse decodes a new job's input and options strictly and validates
	// them. A non-nil error is a *FieldError whose pointer starts with
	// /input or /options.
	Parse(input, options json.RawMessage) (Request, error)
	// Load decodes a recorded job's input and options, which Parse
	// accepted when the job was created: members it does not know are
	// ignored and nothing is validated again. On an error the request
	// holds what did decode.
	Load(input, options json.RawMessage) (Request, error)
}

// Request is a job's typed input and options.
type Request interface {
	// Requirements is what the job asks of a provider's capability.
	Requirements() Requirements
	// Priority is the job's Temporal task priority: 1 (high), 3
	// (standard, the default) or 5 (low).
	Priority() int
	// ResultTypes lists the media types the job's result can be served
	// as, and the one served when the client does not choose.
	ResultTypes() (offered []string, preferred string)
	// Render writes the job's result (its JSON object) as one of the
	// offered media types.
	Render(mediaType string, result []byte) ([]byte, error)
}

// FieldError is an input or option that breaks a rule: its JSON pointer
// (relative to the job's attributes, e.g. /input/url) and the rule.
type FieldError struct {
	Pointer string
	Message string
}

func (e *FieldError) Error() string { return e.Pointer + ": " + e.Message }

func invalid(pointer, format string, args ...any) *FieldError {
	return &FieldError{Pointer: pointer, Message: fmt.Sprintf(format, args...)}
}

// Where a job's input and options are, for error pointers.
const (
	ptrInput   = "/input"
	ptrOptions = "/options"
)

// Temporal task priorities (1 is served first).
const (
	priorityHigh     = 1
	priorityStandard = 3
	priorityLow      = 5
)

// taskPriority maps an options.priority value onto a task priority.
func taskPriority(option string) int {
	switch option {
	case "high":
		return priorityHigh
	case "low":
		return priorityLow
	}
	return priorityStandard
}

var specs = map[ServiceID]Spec{}

// SpecOf finds the spec of a service.
func SpecOf(id ServiceID) (Spec, bool) {
	s, ok := specs[id]
	return s, ok
}

// request is what a service's request type implements besides Request.
type request interface {
	Request
	// parts are where the input and options decode to.
	parts() (input, options any)
	validate() error
}

// register makes *T the request type of a service; each service's file
// calls it from init.
func register[T any, P interface {
	*T
	request
}](id ServiceID) {
	if _, ok := LookupService(string(id)); !ok {
		panic("jobs: no service " + string(id) + " in the service table")
	}
	specs[id] = spec[T, P]{id: id}
}

// spec is the Spec of a service whose request type is *T.
type spec[T any, P interface {
	*T
	request
}] struct {
	id ServiceID
}

func (s spec[T, P]) Service() Service { return MustService(s.id) }

func (s spec[T, P]) Parse(input, options json.RawMessage) (Request, error) {
	if strictjson.Absent(input) {
		return nil, invalid(ptrInput, "is required")
	}
	r := P(new(T))
	in, opts := r.parts()
	if err := decodeStrict(input, ptrInput, in); err != nil {
		return nil, err
	}
	if err := decodeStrict(options, ptrOptions, opts); err != nil {
		return nil, err
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	return r, nil
}

func (s spec[T, P]) Load(input, options json.RawMessage) (Request, error) {
	r := P(new(T))
	in, opts := r.parts()
	return r, errors.Join(decodeLenient(input, in), decodeLenient(options, opts))
}

func decodeStrict(raw json.RawMessage, pointer string, v any) error {
	var err *strictjson.Error
	if errors.As(strictjson.Decode(raw, pointer, v), &err) {
		return &FieldError{Pointer: err.Pointer, Message: err.Message}
	}
	return nil
}

func decodeLenient(raw json.RawMessage, v any) error {
	if strictjson.Absent(raw) {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// jsonOnly is the result types of a service whose result is served as its
// JSON object only.
func jsonOnly() (offered []string, preferred string) {
	return []string{MediaJSON}, MediaJSON
}

// notOffered is Render's error for a media type the job does not offer.
func notOffered(service ServiceID, mediaType string) error {
	return fmt.Errorf("jobs: a %s result is not served as %q", service, mediaType)
}
