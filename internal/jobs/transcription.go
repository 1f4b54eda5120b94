package jobs

import (
	"encoding/json"
)

func init() { register[Transcription](Transcriptions) }

// Transcription is a transcription job's input and options.
type Transcription struct {
	Input   TranscriptionInput
	Options TranscriptionOptions
}

func (t *Transcription) parts() (input, options any) { return &t.Input, &t.Options }

func (t *Transcription) validate() error {
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
// wanted, and for language detection when no language is given.
func (t *Transcription) Requirements() Requirements {
	req := Requirements{Service: Transcriptions, Language: t.Options.Language}
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
