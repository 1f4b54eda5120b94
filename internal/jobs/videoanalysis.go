package jobs

import (
	"slices"
	"strconv"
	"strings"
)

// VideoAnalyses is the service id.
const VideoAnalyses ServiceID = "video-analyses"

// VideoAnalysisFeatures are the capability features of video analyses.
var VideoAnalysisFeatures = []string{"labels", "scenes", "faces", "speech_to_text", "ocr", "content_moderation", "sentiment", "topics", "brands", "summary"}

func init() {
	Register[VideoAnalysis](Service{
		ID:            VideoAnalyses,
		Order:         3,
		Name:          "Video analyses",
		Description:   "Structured metadata extracted from video.",
		JobType:       "video-analysis-job",
		EventPrefix:   "video-analysis",
		SendsProgress: true,
		Features:      VideoAnalysisFeatures,
		Media:         MediaSteps{Fetch: true, Probe: true, UnreadableCode: CodeInputUnreadable},
		Results:       ResultFinishing{VideoMetadata: true},
		Usage:         UsageVideoSeconds,
	})
}

// VideoAnalysis is a video-analysis job's input and options.
type VideoAnalysis struct {
	Input   VideoAnalysisInput
	Options VideoAnalysisOptions
}

func (v *VideoAnalysis) Parts() (input, options any) { return &v.Input, &v.Options }

func (v *VideoAnalysis) Validate() error {
	return firstError(
		mediaURL(v.Input.URL, ptrInput+"/url", true),
		videoFeatures(v.Input.Features),
		nonNegative(v.Input.AudioTrack, ptrInput+"/audio_track"),
		languageCode(v.Options.Language, ptrOptions+"/language", true),
		unitInterval(v.Options.ConfidenceThreshold, ptrOptions+"/confidence_threshold"),
		priority(v.Options.Priority),
	)
}

func videoFeatures(features []string) *FieldError {
	const pointer = ptrInput + "/features"
	all := VideoAnalysisFeatures
	if len(features) == 0 {
		return invalid(pointer, "is required and must list at least one of %s", strings.Join(all, ", "))
	}
	seen := map[string]bool{}
	for i, f := range features {
		if !slices.Contains(all, f) {
			return invalid(pointer+"/"+strconv.Itoa(i), "must be one of %s, not %q", strings.Join(all, ", "), f)
		}
		if seen[f] {
			return invalid(pointer+"/"+strconv.Itoa(i), "repeats %q", f)
		}
		seen[f] = true
	}
	return nil
}

// Requirements asks for the requested features; the video's language is
// for policy conditions only (capabilities list no video languages).
func (v *VideoAnalysis) Requirements() Requirements {
	return Requirements{
		Service:       VideoAnalyses,
		Features:      append([]string(nil), v.Input.Features...),
		VideoLanguage: v.Options.Language,
	}
}

func (v *VideoAnalysis) Priority() int { return taskPriority(v.Options.Priority) }

func (v *VideoAnalysis) ResultTypes() (offered []string, preferred string) { return jsonOnly() }

func (v *VideoAnalysis) Render(mediaType string, result []byte) ([]byte, error) {
	if mediaType == MediaJSON {
		return result, nil
	}
	return nil, notOffered(VideoAnalyses, mediaType)
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
