package jobs

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ai-job-gateway/gateway/internal/strictjson"
)

// Media types a job's result can be served as.
const (
	MediaJSON = "application/json"
	MediaSRT  = "text/srt"
	MediaVTT  = "text/vtt"
	MediaText = "text/plain"
)

// Extension is the file name extension of a result media type.
func Extension(mediaType string) string {
	switch mediaType {
	case MediaSRT:
		return ".srt"
	case MediaVTT:
		return ".vtt"
	case MediaText:
		return ".txt"
	}
	return ".json"
}

// ServiceID names one of the gateway's job services; it is also the URL
// segment jobs of that service are created under.
type ServiceID string

// Service describes one job service: everything that differs between
// services. Each service's file registers its descriptor (Register); the
// API, the catalog, the workflow and its activities ask it instead of
// naming a service.
type Service struct {
	ID          ServiceID
	Name        string
	Description string
	// Order is the service's place in listings (GET /v1/services).
	Order int
	// JobType is the data.type discriminator of the service's jobs.
	JobType string
	// EventPrefix starts the names of the service's webhook events
	// ("transcription" gives "transcription.completed"); it also names one
	// job of the service in summaries.
	EventPrefix string
	// SendsProgress tells whether the service emits *.progress events.
	SendsProgress bool
	// Features are the capability features defined for the service (none
	// for llm-tasks, whose capability lists models instead).
	Features []string
	// CapabilityLists are the lists besides features a capability of the
	// service may give in the catalog: "languages", "source_languages",
	// "target_languages" or "models".
	CapabilityLists []string
	// Media is what the media stage does for the service's jobs.
	Media MediaSteps
	// Results is what the gateway adds to a provider's result.
	Results ResultFinishing
	// Usage is the unit the service's usage is measured in (MeasureUsage;
	// docs/api.md, Usage and cost).
	Usage UsageUnit

	codec requestCodec
}

// Endpoint is the base path jobs of the service are created under.
func (s Service) Endpoint() string { return "/v1/" + string(s.ID) }

// Parse decodes a new job's input and options strictly and validates
// them. A non-nil error is a *FieldError whose pointer starts with /input
// or /options.
func (s Service) Parse(input, options json.RawMessage) (Request, error) {
	return s.codec.parse(input, options)
}

// Load decodes a recorded job's input and options, which Parse accepted
// when the job was created: members it does not know are ignored and
// nothing is validated again. On an error the request holds what did
// decode.
func (s Service) Load(input, options json.RawMessage) (Request, error) {
	return s.codec.load(input, options)
}

// MediaSteps is what the media stage does for a service's jobs
// (docs/media.md): fetch the input's url once, probe it, and extract the
// audio track adapters read.
type MediaSteps struct {
	// Fetch: a job whose input has a url has media.
	Fetch bool
	// DocumentsOnly: only inputs of type "document" have media.
	DocumentsOnly bool
	// Probe: the stage probes the media for its duration and video.
	Probe bool
	// ExtractAudio: the stage extracts input.audio_track (default the
	// first) as 16 kHz mono WAV, which adapters read instead of the file.
	ExtractAudio bool
	// UnreadableCode is the job error of media that cannot be decoded.
	UnreadableCode string
}

// HasMedia reports whether a job of the service with this input has media
// for the media stage.
func (s Service) HasMedia(input json.RawMessage) bool {
	if !s.Media.Fetch {
		return false
	}
	var ref mediaRef
	if json.Unmarshal(input, &ref) != nil || ref.URL == "" {
		return false
	}
	return !s.Media.DocumentsOnly || ref.Type == "document"
}

// MediaURL is the url of a job's input; "" when it has none.
func MediaURL(input json.RawMessage) string {
	var ref mediaRef
	_ = json.Unmarshal(input, &ref)
	return ref.URL
}

// AudioTrack is the audio track a job asks for (input.audio_track, default
// the first).
func AudioTrack(input json.RawMessage) int {
	var ref mediaRef
	if json.Unmarshal(input, &ref) != nil || ref.AudioTrack == nil {
		return 0
	}
	return *ref.AudioTrack
}

// mediaRef is what the media stage reads of a job's input.
type mediaRef struct {
	Type       string `json:"type"`
	URL        string `json:"url"`
	AudioTrack *int   `json:"audio_track"`
}

// ResultFinishing is what the gateway adds to a provider's result before
// the job completes (docs/media.md, Result files).
type ResultFinishing struct {
	// RenderedFile names the file the result is rendered into, in the
	// media type the job prefers, under the job's result prefix
	// ("transcript" gives transcript.srt); "" for none.
	RenderedFile string
	// WrittenFile names the file the provider writes for a job with media
	// (a translated document), completed with the media's extension; ""
	// for none. WrittenNoun says what it is, in errors.
	WrittenFile string
	WrittenNoun string
	// VideoMetadata: the probed video metadata replaces the result's
	// video_metadata member.
	VideoMetadata bool
}

// UsageUnit is what a service's usage is measured in.
type UsageUnit string

// The usage units.
const (
	UsageAudioSeconds UsageUnit = "audio_seconds"
	UsageVideoSeconds UsageUnit = "video_seconds"
	UsageCharacters   UsageUnit = "characters"
	UsageTokens       UsageUnit = "tokens"
)

var services = map[ServiceID]Service{}

// Services lists the gateway's services in their documented order.
func Services() []Service {
	out := make([]Service, 0, len(services))
	for _, s := range services {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Service) int { return cmp.Compare(a.Order, b.Order) })
	return out
}

// ServiceIDs lists the ids of the gateway's services in their documented
// order.
func ServiceIDs() []ServiceID {
	var ids []ServiceID
	for _, s := range Services() {
		ids = append(ids, s.ID)
	}
	return ids
}

// LookupService finds a service by id.
func LookupService(id string) (Service, bool) {
	s, ok := services[ServiceID(id)]
	return s, ok
}

// MustService returns the service with the given id and panics for an
// unknown one; use it only with the service constants.
func MustService(id ServiceID) Service {
	s, ok := services[id]
	if !ok {
		panic("jobs: unknown service " + string(id))
	}
	return s
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

// ServiceOf finds a service by id.
func ServiceOf(id ServiceID) (Service, bool) {
	s, ok := services[id]
	return s, ok
}

// RequestType is what a service's request type implements besides
// Request.
type RequestType interface {
	Request
	// Parts are where the job's input and options decode to.
	Parts() (input, options any)
	// Validate checks the decoded input and options; its error is a
	// *FieldError.
	Validate() error
}

// Register makes s a service whose request type is *T; each service's
// file calls it from init. It panics on a descriptor that lacks an id,
// a job type or an event prefix, or whose id or Order is taken.
func Register[T any, P interface {
	*T
	RequestType
}](s Service) {
	if s.ID == "" || s.JobType == "" || s.EventPrefix == "" {
		panic("jobs: a service needs an id, a job type and an event prefix")
	}
	if _, taken := services[s.ID]; taken {
		panic("jobs: service " + string(s.ID) + " registered twice")
	}
	for _, other := range services {
		if s.Order <= 0 || other.Order == s.Order {
			panic(fmt.Sprintf("jobs: service %s needs an Order of its own above 0", s.ID))
		}
	}
	s.codec = codec[T, P]{}
	services[s.ID] = s
}

// requestCodec decodes a service's input and options.
type requestCodec interface {
	parse(input, options json.RawMessage) (Request, error)
	load(input, options json.RawMessage) (Request, error)
}

// codec is the requestCodec of a service whose request type is *T.
type codec[T any, P interface {
	*T
	RequestType
}] struct{}

func (codec[T, P]) parse(input, options json.RawMessage) (Request, error) {
	if strictjson.Absent(input) {
		return nil, invalid(ptrInput, "is required")
	}
	r := P(new(T))
	in, opts := r.Parts()
	if err := decodeStrict(input, ptrInput, in); err != nil {
		return nil, err
	}
	if err := decodeStrict(options, ptrOptions, opts); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

func (codec[T, P]) load(input, options json.RawMessage) (Request, error) {
	r := P(new(T))
	in, opts := r.Parts()
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
