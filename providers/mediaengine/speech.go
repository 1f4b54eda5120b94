package mediaengine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// speech extracts the video's audio and hands it to the speech provider
// as a transcription (docs/providers.md, media): its segments become the
// speech_to_text section. A video without audio has no speech.
func (a *Adapter) speech(ctx context.Context, call providers.Call, in jobs.VideoAnalysisInput, opts jobs.VideoAnalysisOptions) ([]jobs.SpeechSegment, error) {
	if call.Delegate == nil {
		return nil, providers.Permanent(jobs.CodeUnsupportedOption,
			"speech_to_text needs the gateway's worker to hand the audio to "+a.settings.SpeechProvider, nil)
	}
	probe, err := a.tools.Probe(ctx, jobs.VideoAnalyses, call.Media.Path)
	if err != nil {
		return nil, providers.MediaError(err)
	}
	if len(probe.AudioStreams()) == 0 {
		return []jobs.SpeechSegment{}, nil
	}
	dir, err := os.MkdirTemp("", "speech-*")
	if err != nil {
		return nil, fmt.Errorf("media: %w", err)
	}
	defer os.RemoveAll(dir)
	wav := filepath.Join(dir, "audio.wav")
	track := 0
	if in.AudioTrack != nil {
		track = *in.AudioTrack
	}
	if err := a.tools.ExtractAudio(ctx, probe, call.Media.Path, track, wav); err != nil {
		return nil, providers.MediaError(err)
	}
	info, err := os.Stat(wav)
	if err != nil {
		return nil, fmt.Errorf("media: %w", err)
	}
	language := opts.Language
	if language == "auto" {
		language = ""
	}
	input, _ := json.Marshal(jobs.TranscriptionInput{Type: "video", URL: in.URL})
	options, _ := json.Marshal(jobs.TranscriptionOptions{Language: language})
	out, err := call.Delegate(ctx, a.settings.SpeechProvider, providers.Call{
		JobID: call.JobID, Service: jobs.Transcriptions, Input: input, Options: options,
		Media: &providers.Media{Path: wav, ContentType: "audio/wav", Size: info.Size(), Duration: probe.Duration},
	})
	if err != nil {
		return nil, err
	}
	var transcript jobs.TranscriptionResult
	if err := json.Unmarshal(out, &transcript); err != nil {
		return nil, providers.Retryable(jobs.CodeBadResponse,
			fmt.Sprintf("speech provider %q sent a transcript that does not decode", a.settings.SpeechProvider), err)
	}
	threshold := opts.EffectiveConfidenceThreshold()
	segments := []jobs.SpeechSegment{}
	for _, s := range transcript.Segments {
		confidence := 1.0
		if s.Confidence != nil {
			confidence = *s.Confidence
		}
		if confidence < threshold {
			continue
		}
		seg := jobs.SpeechSegment{Start: s.Start, End: s.End, Text: s.Text, Language: transcript.Language, Confidence: confidence}
		var n int
		if _, err := fmt.Sscanf(s.Speaker, "speaker_%d", &n); err == nil && n > 0 {
			seg.SpeakerID = n - 1
		}
		segments = append(segments, seg)
	}
	return segments, nil
}
