package main

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A fifth service, text-to-speech, is one descriptor and one adapter
// (texttospeech_fixture.go, compiled in by the fifthservice build tag) and
// a catalog entry: with nothing else of the gateway edited, its jobs are
// created, validated, routed, run and listed like any other service's.
func TestFifthServiceNeedsOneDescriptorAndOneAdapter(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test: runs the embedded Temporal server")
	}
	bin := filepath.Join(t.TempDir(), "gateway-tts")
	build := exec.Command("go", "build", "-tags", "fifthservice", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	catalog := writeCatalog(t, `providers:
  - id: speech-1
    name: Speech fixture
    adapter: speech-fixture
    services:
      text-to-speech:
        pricing: {unit: per_character, amount: 0.00001, currency: USD}
`)
	g := newGatewayBin(t, bin, "", "", nil, "--providers", catalog)
	g.token = g.mint("acme", "text-to-speech:read text-to-speech:write")

	status, body, _ := g.do(http.MethodGet, "/v1/services/text-to-speech", "")
	require.Equal(t, http.StatusOK, status, "%s", body)

	status, body, _ = g.do(http.MethodPost, "/v1/text-to-speech", `{"data":{"type":"text-to-speech-job","attributes":{"input":{"text":" "}}}}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%s", body)
	require.Contains(t, string(body), "/input/text", "the descriptor's validation names the field")

	created := g.create("text-to-speech", `{"data":{"type":"text-to-speech-job","attributes":{"input":{"text":"Hello from a fifth service","voice":"ada"}}}}`)
	require.Equal(t, "text-to-speech-job", created.Data.Type)
	done := g.waitEnded("text-to-speech", created.Data.ID, 60*time.Second, "completed")
	require.Equal(t, "speech-1", done.Data.Attributes.Provider)
	var result struct {
		Voice    string  `json:"voice"`
		Duration float64 `json:"duration"`
	}
	require.NoError(t, json.Unmarshal(done.Data.Attributes.Result, &result))
	require.Equal(t, "ada", result.Voice)
	require.InDelta(t, 26.0/15, result.Duration, 1e-9)

	status, body, _ = g.do(http.MethodGet, "/v1/jobs?filter[service]=text-to-speech", "")
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.True(t, strings.Contains(string(body), created.Data.ID), "%s", body)
}
