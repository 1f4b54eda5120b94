// Package providers describes the four job services, the provider catalog,
// and the adapters that call a provider for a job.
package providers

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
		panic("providers: unknown service " + string(id))
	}
	return s
}

// Features a provider can offer, per service.
var (
	TranscriptionFeatures = []string{"language_detection", "diarization", "timestamps"}
	TranslationFeatures   = []string{"language_detection", "formality"}
	VideoAnalysisFeatures = []string{"labels", "scenes", "faces", "speech_to_text", "ocr", "content_moderation", "sentiment", "topics", "brands", "summary"}
)
