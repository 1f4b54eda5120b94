package main

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
)

// `gateway dev --local-engines` (make run) transcribes a flite sentence
// served over HTTP with sphinx-local, and a local video analysis has its
// transcript beside its scenes.
func TestLocalTranscriptionOfSpokenSentences(t *testing.T) {
	t.Parallel()
	requireEngines(t, "flite", "ffmpeg", "ffprobe", "tesseract")
	const sentence = "Thank you very much for your help. Please call me tomorrow morning."
	dir := t.TempDir()
	spoken := filepath.Join(dir, "spoken.wav")
	out, err := exec.Command("flite", "-voice", "awb", "-t", sentence, "-o", spoken).CombinedOutput()
	require.NoError(t, err, "%s", out)
	// A video of it: a blue screen, then a red one, with the voice.
	out, err = exec.Command("ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", spoken,
		"-f", "lavfi", "-i", "color=c=blue:s=320x240:r=10:d=2", "-f", "lavfi", "-i", "color=c=red:s=320x240:r=10:d=6",
		"-filter_complex", "[1:v][2:v]concat=n=2:v=1:a=0[v]", "-map", "[v]", "-map", "0:a", "-shortest",
		"-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", filepath.Join(dir, "spoken.mp4")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	media := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(media.Close)

	g := newGatewayEnv(t, "", "", nil, "--local-engines")
	listed := g.providers()
	require.Equal(t, "active", listed["sphinx-local"].Attributes.Status, listed["sphinx-local"].Attributes.StatusReason)
	require.Contains(t, listed["media-local"].Attributes.Services["video-analyses"].Features, "speech_to_text")

	// English only, as its capability says: refused before routing.
	status, body, _ := g.do(http.MethodPost, "/v1/transcriptions", `{"data":{"type":"transcription-job","attributes":{"provider":"sphinx-local",
		"input":{"type":"audio","url":"`+media.URL+`/spoken.wav"},"options":{"language":"de"}}}}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%s", body)
	require.Contains(t, string(body), "does not transcribe language de")

	// Named by no one: routing picks it for English, as make run does.
	job := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{
		"input":{"type":"audio","url":"`+media.URL+`/spoken.wav"},"options":{"language":"en","format":"srt","include_usage":true}}}}`)
	done := g.waitEnded("transcriptions", job.Data.ID, 2*time.Minute, "completed")
	require.Equal(t, "sphinx-local", done.Data.Attributes.Provider)
	var transcript struct {
		Language string `json:"language"`
		Text     string `json:"text"`
		Segments []struct {
			Start      float64  `json:"start"`
			End        float64  `json:"end"`
			Text       string   `json:"text"`
			Confidence *float64 `json:"confidence"`
		} `json:"segments"`
		Usage map[string]any `json:"usage"`
	}
	raw := decodeAs(t, done.Data.Attributes.Result, &transcript)
	require.Equal(t, "en", transcript.Language, "%s", raw)
	require.NotEmpty(t, transcript.Segments, "%s", raw)
	require.NotNil(t, transcript.Segments[0].Confidence)
	require.NotNil(t, transcript.Usage, "%s", raw)
	requireHeard(t, sentence, transcript.Text, raw)

	// The SubRip and WebVTT renderings come out of the same segments.
	status, srt, _ := g.do(http.MethodGet, "/v1/transcriptions/"+job.Data.ID+"/result", "", "Accept", "text/srt")
	require.Equal(t, http.StatusOK, status, "%s", srt)
	require.Contains(t, string(srt), "1\n00:00:0")
	require.Contains(t, string(srt), transcript.Segments[0].Text)
	status, vtt, _ := g.do(http.MethodGet, "/v1/transcriptions/"+job.Data.ID+"/result", "", "Accept", "text/vtt")
	require.Equal(t, http.StatusOK, status, "%s", vtt)
	require.True(t, strings.HasPrefix(string(vtt), "WEBVTT"), "%s", vtt)
	require.Contains(t, string(vtt), transcript.Segments[0].Text)

	// The local media engine hands the video's audio to sphinx-local.
	video := g.create("video-analyses", `{"data":{"type":"video-analysis-job","attributes":{"provider":"media-local",
		"input":{"url":"`+media.URL+`/spoken.mp4","features":["scenes","speech_to_text"]}}}}`)
	analysed := g.waitEnded("video-analyses", video.Data.ID, 2*time.Minute, "completed")
	var analysis struct {
		Scenes       []map[string]any `json:"scenes"`
		SpeechToText []struct {
			Start    float64 `json:"start"`
			Text     string  `json:"text"`
			Language string  `json:"language"`
		} `json:"speech_to_text"`
	}
	raw = decodeAs(t, analysed.Data.Attributes.Result, &analysis)
	require.Len(t, analysis.Scenes, 2, "%s", raw)
	require.NotEmpty(t, analysis.SpeechToText, "%s", raw)
	var heard []string
	for _, s := range analysis.SpeechToText {
		require.Equal(t, "en", s.Language)
		heard = append(heard, s.Text)
	}
	requireHeard(t, sentence, strings.Join(heard, " "), raw)
}

// requireHeard: text is the reference with at most a quarter of its
// words wrong.
func requireHeard(t *testing.T, reference, text string, raw []byte) {
	t.Helper()
	errs, words := mediatest.WordErrors(reference, text)
	require.LessOrEqual(t, float64(errs)/float64(words), 0.25, "%q in %s", text, raw)
}
