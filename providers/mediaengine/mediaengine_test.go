package mediaengine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/mediaengine"
)

// requireEngine skips without tesseract, unless GATEWAY_REQUIRE_MEDIA_TOOLS=1.
func requireEngine(t *testing.T) {
	t.Helper()
	mediatest.RequireTools(t)
	if _, err := exec.LookPath("tesseract"); err != nil {
		msg := "tesseract is not installed: apt-get install tesseract-ocr tesseract-ocr-eng (or make engines)"
		if os.Getenv("GATEWAY_REQUIRE_MEDIA_TOOLS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

func newAdapter(t *testing.T) *mediaengine.Adapter {
	t.Helper()
	requireEngine(t)
	a, err := mediaengine.New(&providers.Provider{ID: "media-local", Services: map[jobs.ServiceID]*providers.Capability{
		jobs.VideoAnalyses: {Features: mediaengine.Features, Pricing: providers.Pricing{Unit: providers.PerMinute, Amount: 0.5, Currency: "USD"}},
	}})
	require.NoError(t, err)
	return a
}

// analyse runs a video analysis of the video at path as the media stage
// would hand it over.
func analyse(t *testing.T, a *mediaengine.Adapter, path, input, options string) (jobs.VideoAnalysisResult, []int, error) {
	t.Helper()
	tools, err := media.FindTools()
	require.NoError(t, err)
	probe, err := tools.Probe(t.Context(), jobs.VideoAnalyses, path)
	require.NoError(t, err)
	meta, _ := probe.VideoMetadata()
	var progress []int
	out, err := a.Run(context.Background(), providers.Call{
		JobID: "job-1", Service: jobs.VideoAnalyses,
		Provider: &providers.Provider{ID: "media-local", Services: map[jobs.ServiceID]*providers.Capability{
			jobs.VideoAnalyses: {Pricing: providers.Pricing{Unit: providers.PerMinute, Amount: 0.5, Currency: "USD"}},
		}},
		Input: json.RawMessage(input), Options: json.RawMessage(options),
		Media:  &providers.Media{Path: path, ContentType: "video/mp4", Duration: probe.Duration, VideoMetadata: meta},
		Report: func(p int) { progress = append(progress, p) },
	})
	var res jobs.VideoAnalysisResult
	if err == nil {
		require.NoError(t, json.Unmarshal(out, &res))
	}
	return res, progress, err
}

func TestScenesAndTextOfARealVideo(t *testing.T) {
	t.Parallel()
	a := newAdapter(t)
	video := mediatest.SceneVideo(t, t.TempDir(), "GATEWAY 42")
	res, progress, err := analyse(t, a, video, `{"url":"https://media.test/v.mp4","features":["scenes","ocr"]}`, `{"include_usage":true}`)
	require.NoError(t, err)

	require.Len(t, res.Scenes, 3, "two hard cuts: %+v", res.Scenes)
	for i, want := range [][2]float64{{0, 2}, {2, 4}, {4, 6}} {
		require.Equal(t, i, res.Scenes[i].Index)
		require.InDelta(t, want[0], res.Scenes[i].Start, 0.1, "scene %d", i)
		require.InDelta(t, want[1], res.Scenes[i].End, 0.1, "scene %d", i)
	}

	require.Len(t, res.OCR, 1, "the text on every frame is one detection: %+v", res.OCR)
	text := res.OCR[0]
	require.Equal(t, "GATEWAY 42", text.Text)
	require.Equal(t, "en", text.Language)
	require.Greater(t, text.Confidence, 0.8)
	require.Len(t, text.Instances, 1, "on screen the whole time")
	require.InDelta(t, 0, text.Instances[0].Start, 0.01)
	require.InDelta(t, 6, text.Instances[0].End, 0.1)

	require.NotNil(t, res.VideoMetadata)
	require.Equal(t, 320, res.VideoMetadata.Width)
	require.NotNil(t, res.Usage)
	require.InDelta(t, 0.05, *res.Usage.Cost, 0.005, "six seconds at 0.5 USD a minute")
	require.IsIncreasing(t, progress)
}

func TestConfidenceThresholdDropsText(t *testing.T) {
	t.Parallel()
	a := newAdapter(t)
	video := mediatest.SceneVideo(t, t.TempDir(), "GATEWAY 42")
	res, _, err := analyse(t, a, video, `{"url":"https://media.test/v.mp4","features":["ocr"]}`, `{"confidence_threshold":1}`)
	require.NoError(t, err)
	require.Empty(t, res.OCR, "no read is certain")
	require.Empty(t, res.Scenes, "scenes were not asked for")
}

func TestOnlyWhatItCanDo(t *testing.T) {
	t.Parallel()
	a := newAdapter(t)
	video := mediatest.SceneVideo(t, t.TempDir(), "X")
	_, _, err := analyse(t, a, video, `{"url":"https://media.test/v.mp4","features":["scenes","labels"]}`, ``)
	var perr *providers.Error
	require.True(t, errors.As(err, &perr), "%v", err)
	require.Equal(t, providers.KindPermanent, perr.Kind)
	require.Equal(t, jobs.CodeUnsupportedOption, perr.Code)

	_, err = a.Run(context.Background(), providers.Call{Service: jobs.VideoAnalyses,
		Input: json.RawMessage(`{"url":"https://media.test/v.mp4","features":["scenes"]}`)})
	require.True(t, errors.As(err, &perr))
	require.Equal(t, jobs.CodeUnsupportedInput, perr.Code, "no media from the media stage")
}

func TestSpeechIsHandedToATranscriptionProvider(t *testing.T) {
	t.Parallel()
	requireEngine(t)
	_, err := mediaengine.New(&providers.Provider{ID: "m", Services: map[jobs.ServiceID]*providers.Capability{
		jobs.VideoAnalyses: {Features: []string{"scenes", "speech_to_text"}}}})
	require.ErrorContains(t, err, "needs settings.speech_provider")
	_, err = mediaengine.New(&providers.Provider{ID: "m", Services: map[jobs.ServiceID]*providers.Capability{
		jobs.VideoAnalyses: {Features: []string{"labels"}}}})
	require.ErrorContains(t, err, `"labels", which the media adapter cannot do`)

	a, err := mediaengine.New(&providers.Provider{ID: "m", Settings: map[string]any{"speech_provider": "whisper"},
		Services: map[jobs.ServiceID]*providers.Capability{jobs.VideoAnalyses: {Features: []string{"scenes", "speech_to_text"}}}})
	require.NoError(t, err)
	require.Equal(t, providers.PurgeNoAPI, a.VendorRetention(), "the speech provider may keep the audio, and the job has no handle of it")
	require.Equal(t, providers.PurgeNotRetained, newAdapter(t).VendorRetention(), "ffmpeg and tesseract keep nothing")
	local, err := mediaengine.New(&providers.Provider{ID: "m", Settings: map[string]any{"speech_provider": "sphinx-local", "speech_provider_keeps_nothing": true},
		Services: map[jobs.ServiceID]*providers.Capability{jobs.VideoAnalyses: {Features: []string{"scenes", "speech_to_text"}}}})
	require.NoError(t, err)
	require.Equal(t, providers.PurgeNotRetained, local.VendorRetention(), "a local speech engine keeps nothing either")
	var handed []providers.Call
	delegate := func(_ context.Context, id string, call providers.Call) (json.RawMessage, error) {
		require.Equal(t, "whisper", id)
		wav, err := os.ReadFile(call.Media.Path)
		require.NoError(t, err)
		require.Equal(t, "RIFF", string(wav[:4]), "the extracted audio is a WAV file")
		require.Equal(t, int64(len(wav)), call.Media.Size)
		handed = append(handed, call)
		return json.RawMessage(`{"format":"json","duration":2,"language":"en","segments":[
			{"start":0,"end":1,"text":"hello","confidence":0.9,"speaker":"speaker_2"},
			{"start":1,"end":2,"text":"mumble","confidence":0.2}]}`), nil
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		tracks int
		want   []jobs.SpeechSegment
	}{
		{1, []jobs.SpeechSegment{{Start: 0, End: 1, Text: "hello", SpeakerID: 1, Language: "en", Confidence: 0.9}}},
		{0, nil},
	} {
		video := mediatest.Video(t, dir, 2, tc.tracks)
		handed = nil
		out, err := a.Run(context.Background(), providers.Call{Service: jobs.VideoAnalyses, Delegate: delegate,
			Input:   json.RawMessage(`{"url":"https://media.test/v.mp4","features":["speech_to_text"]}`),
			Options: json.RawMessage(`{"language":"en-US"}`),
			Media:   &providers.Media{Path: video, ContentType: "video/mp4", Duration: 2}})
		require.NoError(t, err)
		var res jobs.VideoAnalysisResult
		require.NoError(t, json.Unmarshal(out, &res))
		require.Equal(t, tc.want, res.SpeechToText, "%d audio tracks", tc.tracks) // none: absent, like an empty ocr
		if tc.tracks == 0 {
			require.Empty(t, handed, "no audio, no transcription")
			continue
		}
		require.Len(t, handed, 1)
		require.Equal(t, jobs.Transcriptions, handed[0].Service)
		require.JSONEq(t, `{"language":"en-US"}`, string(handed[0].Options))
		require.JSONEq(t, `{"type":"video","url":"https://media.test/v.mp4"}`, string(handed[0].Input))
	}
}
