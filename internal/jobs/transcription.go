package jobs

import (
	"encoding/json"
)

// Transcriptions is the service id.
const Transcriptions ServiceID = "transcriptions"

// TranscriptionFeatures are the capability features of transcriptions.
var TranscriptionFeatures = []string{"language_detection", "diarization", "timestamps"}

func init() {
	Register[Transcription](Service{
		ID:              Transcriptions,
		Order:           1,
		Name:            "Transcriptions",
		Description:     "Audio or video to time-aligned text.",
		JobType:         "transcription-job",
		EventPrefix:     "transcription",
		SendsProgress:   true,
		Features:        TranscriptionFeatures,
		CapabilityLists: []string{"languages"},
		Media:           MediaSteps{Fetch: true, Probe: true, ExtractAudio: true, UnreadableCode: CodeAudioUnreadable},
		Results:         ResultFinishing{RenderedFile: "transcript"},
		Usage:           UsageAudioSeconds,
	})
}

// Transcription is a transcription job's input and options.
type Transcription struct {
	Input   TranscriptionInput
	Options TranscriptionOptions
}

func (t *Transcription) Parts() (input, options any) { return &t.Input, &t.Options }

func (t *Transcription) Validate() error {
	return firstError(
		oneOf(t.Input.Type, ptrInput+"/type", true, "video", "audio"),
		mediaURL(t.Input.URL, ptrInput+"/url", true),
		nonNegative(t.Input.AudioTrack, ptrInput+"/audio_track"),
		languageCode(t.Options.Language, ptrOptions+"/language", false),
		oneOf(t.Options.Format, ptrOptions+"/format", false, "srt", "vtt", "json"),
		priority(t.Options.Priority),
	)
}

// Requirements asks for timestamps (the default) and diarization when
// wanted, for language detection when no language is given, and for a
// provider that translates into English when the job asks it.
func (t *Transcription) Requirements() Requirements {
	req := Requirements{Service: Transcriptions, Language: t.Options.Language, TranslateToEnglish: t.Options.TranslateToEnglish}
	if t.Options.WantsTimestamps() {
		req.Features = append(req.Features, "timestamps")
	}
	if t.Options.WantsDiarization() {
		req.Features = append(req.Features, "diarization")
	}
	if t.Options.Language == "" {
		req.Features = append(req.Features, "language_detection")
	}
	return req
}

func (t *Transcription) Priority() int { return taskPriority(t.Options.Priority) }

// ResultTypes offers the transcript as JSON, SubRip and WebVTT, preferring
// the job's format.
func (t *Transcription) ResultTypes() (offered []string, preferred string) {
	preferred = MediaJSON
	switch t.Options.EffectiveFormat() {
	case "srt":
		preferred = MediaSRT
	case "vtt":
		preferred = MediaVTT
	}
	return []string{MediaJSON, MediaSRT, MediaVTT}, preferred
}

func (t *Transcription) Render(mediaType string, result []byte) ([]byte, error) {
	switch mediaType {
	case MediaJSON:
		return result, nil
	case MediaSRT, MediaVTT:
		var r TranscriptionResult
		if err := json.Unmarshal(result, &r); err != nil {
			return nil, err
		}
		if mediaType == MediaSRT {
			return []byte(renderSRT(r)), nil
		}
		return []byte(renderVTT(r)), nil
	}
	return nil, notOffered(Transcriptions, mediaType)
}

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
	// TranslateToEnglish asks for the transcript in English, whatever the
	// spoken language (an extension, docs/api.md, Extensions); language,
	// when given, is still the spoken one.
	TranslateToEnglish bool `json:"translate_to_english,omitempty"`
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
	// Words are the segment's words with their times, when timestamps
	// were asked and the provider gives them (an extension, docs/api.md,
	// Extensions); SRT and WebVTT do not render them.
	Words []Word `json:"words,omitempty"`
}

// Word is one word of a segment, timed in seconds from the start of the
// audio, within its segment.
type Word struct {
	Start      float64  `json:"start"`
	End        float64  `json:"end"`
	Text       string   `json:"text"`
	Confidence *float64 `json:"confidence,omitempty"`
}
