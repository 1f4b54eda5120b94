package jobs

import (
	"slices"
	"strconv"
	"strings"
)

func init() { register[VideoAnalysis](VideoAnalyses) }

// VideoAnalysis is a video-analysis job's input and options.
type VideoAnalysis struct {
	Input   VideoAnalysisInput
	Options VideoAnalysisOptions
}

func (v *VideoAnalysis) parts() (input, options any) { return &v.Input, &v.Options }

func (v *VideoAnalysis) validate() error {
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
