package jobs

// The request and result shapes of each service (docs/api.md, Jobs). The
// API validates requests into these types; adapters read them and
// produce the results.

// TranscriptionInput is the input of a transcription job.
type TranscriptionInput struct {
	Type       string `json:"type"` // video or audio
	URL        string `json:"url"`
	AudioTrack *int   `json:"audio_track,omitempty"`
}

// TranscriptionOptions are the options of a transcription job.
type TranscriptionOptions struct {
	Language     string `json:"language,omitempty"`
	Timestamps   *bool  `json:"timestamps,omitempty"`
	Format       string `json:"format,omitempty"` // srt, vtt or json (the default)
	Diarization  *bool  `json:"diarization,omitempty"`
	Priority     string `json:"priority,omitempty"`
	IncludeUsage bool   `json:"include_usage,omitempty"`
}

// WantsTimestamps reports the effective timestamps option (default true).
func (o TranscriptionOptions) WantsTimestamps() bool { return o.Timestamps == nil || *o.Timestamps }

// WantsDiarization reports the effective diarization option (default false).
func (o TranscriptionOptions) WantsDiarization() bool { return o.Diarization != nil && *o.Diarization }

// EffectiveFormat is the result format, json unless the job asked otherwise.
func (o TranscriptionOptions) EffectiveFormat() string {
	if o.Format == "" {
		return "json"
	}
	return o.Format
}

// TranscriptionResult is the result of a transcription job.
type TranscriptionResult struct {
	Format      string  `json:"format"`
	Duration    float64 `json:"duration"`
	Language    string  `json:"language,omitempty"`
	DownloadURL string  `json:"download_url,omitempty"`
	// Text is the whole transcript (an extension, docs/api.md, Extensions:
	// a transcript without timestamps still carries its text).
	Text     string    `json:"text,omitempty"`
	Segments []Segment `json:"segments,omitempty"`
	Usage    *Usage    `json:"usage,omitempty"`
}

// Segment is one time-aligned piece of a transcript.
type Segment struct {
	Start      float64  `json:"start"`
	End        float64  `json:"end"`
	Text       string   `json:"text"`
	Confidence *float64 `json:"confidence,omitempty"`
	// Speaker is set when diarization was requested (an extension,
	// docs/api.md, Extensions; SRT and WebVTT render it as a voice).
	Speaker string `json:"speaker,omitempty"`
}

// TranslationInput is the input of a translation job.
type TranslationInput struct {
	Type           string `json:"type"` // text or document
	Content        string `json:"content,omitempty"`
	URL            string `json:"url,omitempty"`
	TargetLanguage string `json:"target_language"`
}

// TranslationOptions are the options of a translation job.
type TranslationOptions struct {
	SourceLanguage string `json:"source_language,omitempty"` // a language code or "auto"
	Formality      string `json:"formality,omitempty"`
	Priority       string `json:"priority,omitempty"`
	IncludeUsage   bool   `json:"include_usage,omitempty"`
}

// TranslationResult is the result of a translation job.
type TranslationResult struct {
	SourceLanguage string `json:"source_language"`
	TargetLanguage string `json:"target_language"`
	Content        string `json:"content,omitempty"`
	DownloadURL    string `json:"download_url,omitempty"`
	CharacterCount int    `json:"character_count"`
	Usage          *Usage `json:"usage,omitempty"`
}

// VideoAnalysisInput is the input of a video-analysis job.
type VideoAnalysisInput struct {
	URL        string   `json:"url"`
	Features   []string `json:"features"`
	AudioTrack *int     `json:"audio_track,omitempty"`
}

// VideoAnalysisOptions are the options of a video-analysis job.
type VideoAnalysisOptions struct {
	Language            string   `json:"language,omitempty"` // a language code or "auto"
	ConfidenceThreshold *float64 `json:"confidence_threshold,omitempty"`
	Priority            string   `json:"priority,omitempty"`
	IncludeUsage        bool     `json:"include_usage,omitempty"`
}

// EffectiveConfidenceThreshold is the threshold in force (default 0.5).
func (o VideoAnalysisOptions) EffectiveConfidenceThreshold() float64 {
	if o.ConfidenceThreshold == nil {
		return 0.5
	}
	return *o.ConfidenceThreshold
}

// VideoAnalysisResult is the result of a video-analysis job; each section is
// present when its feature was requested.
type VideoAnalysisResult struct {
	VideoMetadata     *VideoMetadata     `json:"video_metadata,omitempty"`
	Labels            []Detection        `json:"labels,omitempty"`
	Scenes            []Scene            `json:"scenes,omitempty"`
	Faces             []Face             `json:"faces,omitempty"`
	SpeechToText      []SpeechSegment    `json:"speech_to_text,omitempty"`
	OCR               []TextDetection    `json:"ocr,omitempty"`
	ContentModeration *ContentModeration `json:"content_moderation,omitempty"`
	Sentiment         *Sentiment         `json:"sentiment,omitempty"`
	Topics            []Detection        `json:"topics,omitempty"`
	Brands            []Detection        `json:"brands,omitempty"`
	Summary           string             `json:"summary,omitempty"`
	Usage             *Usage             `json:"usage,omitempty"`
}

// VideoMetadata describes the analysed video.
type VideoMetadata struct {
	Duration  float64 `json:"duration"`
	Width     int     `json:"width"`
	Height    int     `json:"height"`
	FrameRate float64 `json:"frame_rate"`
	Format    string  `json:"format"`
	Codec     string  `json:"codec"`
}

// TimedInstance is a stretch of the video where a detection holds.
type TimedInstance struct {
	Start      float64 `json:"start"`
	End        float64 `json:"end"`
	Confidence float64 `json:"confidence"`
}

// Detection is a named label, topic or brand.
type Detection struct {
	Name       string          `json:"name"`
	Confidence float64         `json:"confidence"`
	Instances  []TimedInstance `json:"instances"`
}

// Scene is one scene of the video.
type Scene struct {
	Index int     `json:"index"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// Face is one tracked face.
type Face struct {
	TrackID     int             `json:"track_id"`
	Fingerprint string          `json:"fingerprint,omitempty"`
	Instances   []TimedInstance `json:"instances"`
}

// SpeechSegment is a piece of recognised speech.
type SpeechSegment struct {
	Start      float64 `json:"start"`
	End        float64 `json:"end"`
	Text       string  `json:"text"`
	SpeakerID  int     `json:"speaker_id"`
	Language   string  `json:"language"`
	Confidence float64 `json:"confidence"`
}

// TextDetection is text found on screen.
type TextDetection struct {
	Text       string          `json:"text"`
	Confidence float64         `json:"confidence"`
	Language   string          `json:"language"`
	Instances  []TimedInstance `json:"instances"`
}

// ContentModeration is the moderation verdict.
type ContentModeration struct {
	IsSafe  bool               `json:"is_safe"`
	Signals []ModerationSignal `json:"signals"`
}

// ModerationSignal is one moderation finding.
type ModerationSignal struct {
	Label      string          `json:"label"`
	Confidence float64         `json:"confidence"`
	Instances  []TimedInstance `json:"instances"`
}

// ModerationLabels are the allowed ModerationSignal labels.
var ModerationLabels = []string{"explicit_nudity", "suggestive", "violence", "visually_disturbing", "hate_symbols", "tobacco", "alcohol", "gambling"}

// Sentiment is the overall and timed sentiment.
type Sentiment struct {
	Overall   string              `json:"overall"` // positive, neutral or negative
	Score     float64             `json:"score"`   // -1..1
	Instances []SentimentInstance `json:"instances"`
}

// SentimentInstance is the sentiment over one stretch of the video.
type SentimentInstance struct {
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Label string  `json:"label"`
	Score float64 `json:"score"`
}

// LLMTaskInput is the input of an llm-task job.
type LLMTaskInput struct {
	Type         string `json:"type"` // text or document
	Text         string `json:"text,omitempty"`
	URL          string `json:"url,omitempty"` // the document variant (see docs/api.md)
	Prompt       string `json:"prompt"`
	SystemPrompt string `json:"system_prompt,omitempty"`
}

// LLMTaskOptions are the options of an llm-task job.
type LLMTaskOptions struct {
	Creativity   string `json:"creativity,omitempty"` // precise, balanced or creative
	IncludeUsage bool   `json:"include_usage,omitempty"`
	// Model pins a model the provider lists (an extension; see docs/api.md).
	Model string `json:"model,omitempty"`
}

// LLMTaskResult is the result of an llm-task job.
type LLMTaskResult struct {
	Content      string `json:"content"`
	FinishReason string `json:"finish_reason"` // completed or max_tokens
	Usage        *Usage `json:"usage,omitempty"`
}

// Usage is what a provider reports it consumed.
type Usage struct {
	InputTokens  *int     `json:"input_tokens,omitempty"`
	OutputTokens *int     `json:"output_tokens,omitempty"`
	Cost         *float64 `json:"cost,omitempty"`
}
