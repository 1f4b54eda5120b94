// Package mediaengine is the "media" adapter: video analyses done on the
// worker itself with ffmpeg and tesseract, no account and no network
// (docs/providers.md, media). It finds scene changes (`scenes`) and text on
// sampled frames (`ocr`); video_metadata comes from the gateway's probe.
// Nothing else is claimed: a job asking for another feature is refused.
package mediaengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"slices"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/settings"
	"github.com/ai-job-gateway/gateway/providers/internal/usage"
)

// Features are the video-analysis features the adapter does itself;
// speech_to_text comes on top when speech_provider is set.
var Features = []string{"scenes", "ocr"}

// SpeechToText is the feature the adapter hands to a transcription
// provider.
const SpeechToText = "speech_to_text"

// Settings are the media adapter's provider settings.
type Settings struct {
	// SceneThreshold is ffmpeg's scene score (0..1) above which a frame
	// starts a new scene (default 0.3).
	SceneThreshold float64 `json:"scene_threshold"`
	// OCREverySeconds is how often a frame is read for text (default 1).
	OCREverySeconds float64 `json:"ocr_every_seconds"`
	// OCRLanguages are tesseract's languages, e.g. "eng" or "eng+deu"
	// (default "eng"; each needs its tesseract-ocr-<lang> package).
	OCRLanguages string `json:"ocr_languages"`
	// SpeechProvider is the id of a transcriptions provider of the
	// catalog that speech_to_text hands the video's audio to; empty: no
	// speech_to_text.
	SpeechProvider string `json:"speech_provider"`
	// SpeechProviderKeepsNothing says the speech provider keeps nothing of
	// a call (a local engine such as sphinx), so a job has nothing left
	// with it to delete.
	SpeechProviderKeepsNothing bool `json:"speech_provider_keeps_nothing"`
}

// Adapter analyses videos with local programs.
type Adapter struct {
	provider  *providers.Provider
	settings  Settings
	tools     media.Tools
	tesseract string
}

// Find reports whether the programs the adapter runs are installed: nil,
// or an error that says what is missing and how to install it.
func Find() (media.Tools, string, error) {
	tools, err := media.FindTools()
	if err != nil {
		return tools, "", err
	}
	tesseract, err := exec.LookPath("tesseract")
	if err != nil {
		return tools, "", errors.New("tesseract not found on PATH: install it (Debian or Ubuntu: apt-get install tesseract-ocr tesseract-ocr-eng, or make engines)")
	}
	return tools, tesseract, nil
}

// New builds the adapter of p; it fails when ffmpeg or tesseract is
// missing. It calls no API, so it has no use for options
// (providers.Option).
func New(p *providers.Provider, _ ...providers.Option) (*Adapter, error) {
	s := Settings{SceneThreshold: 0.3, OCREverySeconds: 1, OCRLanguages: "eng"}
	if err := settings.Decode(p.Settings, &s); err != nil {
		return nil, err
	}
	if s.SceneThreshold <= 0 || s.SceneThreshold >= 1 {
		return nil, fmt.Errorf("settings: scene_threshold %g must be between 0 and 1", s.SceneThreshold)
	}
	if s.OCREverySeconds <= 0 {
		return nil, fmt.Errorf("settings: ocr_every_seconds %g must be more than 0", s.OCREverySeconds)
	}
	a := &Adapter{provider: p, settings: s}
	if capab := p.Services[jobs.VideoAnalyses]; capab != nil {
		for _, f := range capab.Features {
			if f == SpeechToText && s.SpeechProvider == "" {
				return nil, errors.New("services: video-analyses lists speech_to_text, which needs settings.speech_provider: the id of a transcriptions provider to hand the audio to")
			}
			if !slices.Contains(a.features(), f) {
				return nil, fmt.Errorf("services: video-analyses lists %q, which the media adapter cannot do; it does %v", f, a.features())
			}
		}
	}
	tools, tesseract, err := Find()
	if err != nil {
		return nil, err
	}
	a.tools, a.tesseract = tools, tesseract
	return a, nil
}

// Services are video-analyses.
func (a *Adapter) Services() []jobs.ServiceID { return []jobs.ServiceID{jobs.VideoAnalyses} }

// VendorRetention is PurgeNotRetained: the worker's programs keep nothing
// of a call. With a speech_provider it is PurgeNoAPI, unless that provider
// keeps nothing: it may keep the audio it was handed, under a handle the
// job does not keep, so nothing can delete it (docs/providers.md, Deleting
// a job's vendor copy).
func (a *Adapter) VendorRetention() providers.PurgeOutcome {
	if a.settings.SpeechProvider != "" && !a.settings.SpeechProviderKeepsNothing {
		return providers.PurgeNoAPI
	}
	return providers.PurgeNotRetained
}

// Run analyses the video the media stage fetched.
func (a *Adapter) Run(ctx context.Context, call providers.Call) (json.RawMessage, error) {
	var in jobs.VideoAnalysisInput
	var opts jobs.VideoAnalysisOptions
	if err := call.Decode(&in, &opts); err != nil {
		return nil, err
	}
	features := a.features()
	for _, f := range in.Features {
		if !slices.Contains(features, f) {
			return nil, providers.Permanent(jobs.CodeUnsupportedOption,
				fmt.Sprintf("provider %q cannot do %q; it does %v", a.provider.ID, f, features), nil)
		}
	}
	if call.Media == nil {
		return nil, providers.Permanent(jobs.CodeUnsupportedInput,
			"the media adapter reads the video the gateway's media stage fetched, and this job has none", nil)
	}
	res := jobs.VideoAnalysisResult{VideoMetadata: call.Media.VideoMetadata}
	duration := call.Media.Duration
	threshold := opts.EffectiveConfidenceThreshold()
	call.Progress(0)
	if slices.Contains(in.Features, "scenes") {
		cuts, err := a.sceneCuts(ctx, call.Media.Path)
		if err != nil {
			return nil, err
		}
		res.Scenes = scenes(cuts, duration)
		call.Progress(30)
	}
	if slices.Contains(in.Features, "ocr") {
		texts, err := a.readText(ctx, call.Media.Path, duration, threshold, call.Progress)
		if err != nil {
			return nil, err
		}
		res.OCR = texts
	}
	if slices.Contains(in.Features, SpeechToText) {
		speech, err := a.speech(ctx, call, in, opts)
		if err != nil {
			return nil, err
		}
		res.SpeechToText = speech
	}
	if opts.IncludeUsage {
		res.Usage = usage.New(-1, -1, usage.Cost(call.Capability().Pricing, usage.Metered{Minutes: duration / 60}))
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("media: encode result: %w", err)
	}
	return out, nil
}

// features are what the adapter does with its settings.
func (a *Adapter) features() []string {
	if a.settings.SpeechProvider == "" {
		return Features
	}
	return append(slices.Clone(Features), SpeechToText)
}

// scenes turns cut times into scenes covering the whole video.
func scenes(cuts []float64, duration float64) []jobs.Scene {
	out := []jobs.Scene{}
	start := 0.0
	for _, cut := range cuts {
		if cut <= start {
			continue
		}
		out = append(out, jobs.Scene{Index: len(out), Start: start, End: round(cut)})
		start = round(cut)
	}
	end := round(duration)
	if end <= start {
		end = start
	}
	return append(out, jobs.Scene{Index: len(out), Start: start, End: end})
}

func round(s float64) float64 { return math.Round(s*1000) / 1000 }
