package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/providers/sphinx"
)

// requireEngines skips a test that needs tools and sphinx-local's
// recognizer and model when they are not installed (or fails it:
// mediatest.Installed).
func requireEngines(t *testing.T, tools ...string) {
	t.Helper()
	mediatest.Require(t, tools...)
	_, err := sphinx.Find(sphinx.DefaultModelDir)
	mediatest.Installed(t, err)
}

type providerDoc struct {
	ID         string `json:"id"`
	Attributes struct {
		Status       string `json:"status"`
		StatusReason string `json:"status_reason"`
		Services     map[string]struct {
			Features        []string `json:"features"`
			SourceLanguages []string `json:"source_languages"`
			TargetLanguages []string `json:"target_languages"`
		} `json:"services"`
	} `json:"attributes"`
}

func (g *gateway) providers() map[string]providerDoc {
	g.t.Helper()
	status, body, _ := g.do(http.MethodGet, "/v1/providers", "")
	require.Equal(g.t, http.StatusOK, status, "%s", body)
	var list struct {
		Data []providerDoc `json:"data"`
	}
	require.NoError(g.t, json.Unmarshal(body, &list))
	out := map[string]providerDoc{}
	for _, p := range list.Data {
		out[p.ID] = p
	}
	return out
}

// A policy puts a broken DeepL first and the local Apertium second: the
// job fails over to Apertium, which really translates.
func TestLocalEnginesAndFailoverFromAVendor(t *testing.T) {
	t.Parallel()
	requireEngines(t, "apertium-apy", "ffmpeg", "ffprobe", "tesseract")
	deepl := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"message":"Wrong endpoint. Use https://api.deepl.com"}`)
	}))
	t.Cleanup(deepl.Close)
	catalog := writeCatalog(t, `providers:
  - id: deepl
    name: DeepL (broken)
    adapter: deepl
    quality: 0.95
    settings: {base_url: "`+deepl.URL+`/v2", api_key_env: FAKE_DEEPL_KEY}
    services:
      translations:
        features: [formality]
        pricing: {unit: per_character, amount: 0.00002, currency: USD}
  - id: media-speech
    name: Local media engine, speech by the sandbox
    adapter: media
    settings: {speech_provider: sandbox-voice}
    services:
      video-analyses:
        features: [scenes, speech_to_text]
        pricing: {unit: per_minute, amount: 0, currency: USD}
  - id: sandbox-voice
    name: Sandbox transcriptions
    adapter: sandbox
    settings: {latency_ms: 0}
    services:
      transcriptions:
        features: [timestamps]
        pricing: {unit: per_minute, amount: 0.01, currency: USD}
`)
	g := newGatewayEnv(t, "", "", []string{"FAKE_DEEPL_KEY=k"}, "--providers", catalog, "--local-engines")

	listed := g.providers()
	require.Equal(t, "active", listed["apertium-local"].Attributes.Status)
	apy := listed["apertium-local"].Attributes.Services["translations"]
	require.Contains(t, apy.SourceLanguages, "en", "from the server's pairs")
	require.Contains(t, apy.TargetLanguages, "es")
	require.Equal(t, "active", listed["media-local"].Attributes.Status)
	require.ElementsMatch(t, []string{"scenes", "ocr", "speech_to_text"}, listed["media-local"].Attributes.Services["video-analyses"].Features,
		"speech_to_text by sphinx-local")
	require.Contains(t, g.logs.String(), "local engines")

	g.createPolicy(`{
		"name":"vendor first","routing_strategy":"quality","service":"translations",
		"providers":[{"provider_id":"deepl","priority":1},{"provider_id":"apertium-local","priority":2}]}`)

	job := g.create("translations", `{"data":{"type":"translation-job","attributes":{"input":{"type":"text",
		"content":"Hello world. The house is big.","target_language":"es"},"options":{"source_language":"en"}}}}`)
	done := g.waitEnded("translations", job.Data.ID, 60*time.Second, "completed")
	require.Equal(t, "apertium-local", done.Data.Attributes.Provider)
	var result struct {
		Content string `json:"content"`
	}
	decodeAs(t, done.Data.Attributes.Result, &result)
	require.Equal(t, "Hola Mundo. La casa es grande.", strings.TrimSpace(result.Content))

	// The README's video analysis: the local media engine finds the three
	// slides and their text.
	video := g.create("video-analyses", `{"data":{"type":"video-analysis-job","attributes":{"provider":"media-local",
		"input":{"url":"`+g.url("/dev/samples/slides.mp4")+`","features":["scenes","ocr"]}}}}`)
	analysed := g.waitEnded("video-analyses", video.Data.ID, 60*time.Second, "completed")
	var analysis struct {
		Scenes []struct {
			Start float64 `json:"start_time"`
		} `json:"scenes"`
		OCR []struct {
			Text string `json:"text"`
		} `json:"ocr"`
	}
	raw := decodeAs(t, analysed.Data.Attributes.Result, &analysis)
	require.Len(t, analysis.Scenes, 3, "%s", raw)
	var texts []string
	for _, d := range analysis.OCR {
		texts = append(texts, d.Text)
	}
	require.Contains(t, strings.Join(texts, " | "), "GATEWAY", "%s", raw)
	require.Contains(t, strings.Join(texts, " | "), "THE END", "%s", raw)

	// speech_to_text: the media engine hands the video's audio to the
	// catalog's transcription provider.
	spoken := g.create("video-analyses", `{"data":{"type":"video-analysis-job","attributes":{"provider":"media-speech",
		"input":{"url":"`+g.url("/dev/samples/speech.mp4")+`","features":["speech_to_text"]},"options":{"confidence_threshold":0}}}}`)
	spokenDone := g.waitEnded("video-analyses", spoken.Data.ID, 60*time.Second, "completed")
	var speech struct {
		SpeechToText []struct {
			Text string `json:"text"`
		} `json:"speech_to_text"`
	}
	raw = decodeAs(t, spokenDone.Data.Attributes.Result, &speech)
	require.NotEmpty(t, speech.SpeechToText, "%s", raw)

	require.Equal(t, []string{"deepl policy_rule", "apertium-local failover"}, routes(t, done))
}

// On a machine without the engines, dev still starts, and lists them as
// disabled with what is missing.
func TestMissingLocalEnginesAreListedDisabled(t *testing.T) {
	t.Parallel()
	g := newGatewayEnv(t, "", "", []string{"PATH=" + t.TempDir()}, "--local-engines")
	listed := g.providers()
	for id, missing := range map[string]string{
		"apertium-local": "apertium-apy not found", "media-local": "not found on PATH", "sphinx-local": "pocketsphinx_continuous not found",
	} {
		require.Equal(t, "disabled", listed[id].Attributes.Status, id)
		require.Contains(t, listed[id].Attributes.StatusReason, missing, id)
		require.Contains(t, listed[id].Attributes.StatusReason, "make engines", id)
	}
	require.NotContains(t, listed["media-local"].Attributes.Services["video-analyses"].Features, "speech_to_text",
		"no speech_to_text without sphinx-local")
	require.Equal(t, "active", listed["sandbox-fast"].Attributes.Status, "the built-in catalog is still there")
	require.Empty(t, listed["sandbox-fast"].Attributes.StatusReason)

	status, body, _ := g.do(http.MethodPost, "/v1/translations", `{"data":{"type":"translation-job","attributes":{"provider":"apertium-local",
		"input":{"type":"text","content":"Hello","target_language":"es"},"options":{"source_language":"en"}}}}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%s", body)
	require.Contains(t, string(body), "PROVIDER_DISABLED")
}

// scripts/install-engines (make run's and make test's tool step) checks
// again after apt-get and says what is still missing, rather than
// trusting that the packages brought it.
func TestInstallEnginesSaysWhatIsStillMissing(t *testing.T) {
	t.Parallel()
	bin := t.TempDir() // nothing on PATH but an apt-get that installs nothing, as root
	require.NoError(t, os.WriteFile(filepath.Join(bin, "apt-get"), []byte("#!/bin/sh\nexit 0\n"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "id"), []byte("#!/bin/sh\necho 0\n"), 0o700))
	run := func(args ...string) (string, error) {
		cmd := exec.Command("/bin/bash", append([]string{filepath.Join("..", "..", "scripts", "install-engines")}, args...)...)
		cmd.Env = []string{"PATH=" + bin}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("flite")
	require.Error(t, err, out)
	require.Contains(t, out, "installing flite")
	require.Contains(t, out, "error: still missing after apt-get: flite (from flite)")

	out, err = run("--if-possible", "pocketsphinx_continuous")
	require.NoError(t, err, out, "make run goes on")
	require.Contains(t, out, "note: still missing after apt-get: pocketsphinx_continuous")
}
