package openai_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/providertest"
)

// analyse runs a video analysis of a real 4-second video through the
// adapter, the fake answering with answer as the model's content.
func analyse(t *testing.T, features, options, answer string) (map[string]any, *visionCall, error) {
	t.Helper()
	mediatest.RequireTools(t)
	b := setup(t)
	b.provider.Services[jobs.VideoAnalyses] = &providers.Capability{Pricing: providers.Pricing{Unit: providers.PerMinute, Amount: 0.6, Currency: "USD"}}
	seen := &visionCall{}
	b.handle(func(w http.ResponseWriter, r *http.Request) {
		if !assert.Equal(t, "/v1/chat/completions", r.URL.Path) {
			return
		}
		assert.Equal(t, "Bearer sk-test", r.Header.Get("Authorization"))
		assert.NoError(t, json.NewDecoder(r.Body).Decode(&seen.req))
		w.Header().Set("Content-Type", "application/json")
		content, _ := json.Marshal(answer)
		_, _ = w.Write([]byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":` +
			string(content) + `},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":60,"total_tokens":960}}`))
	})
	video := mediatest.Video(t, t.TempDir(), 4, 1)
	tools, err := media.FindTools()
	require.NoError(t, err)
	probe, err := tools.Probe(t.Context(), jobs.VideoAnalyses, video)
	require.NoError(t, err)
	meta, _ := probe.VideoMetadata()
	out, err := b.adapter.Run(context.Background(), providers.Call{
		JobID: "j", Service: jobs.VideoAnalyses, Provider: b.provider,
		Input:   json.RawMessage(`{"url":"https://media.test/v.mp4","features":` + features + `}`),
		Options: json.RawMessage(options),
		Media:   &providers.Media{Path: video, ContentType: "video/mp4", Duration: probe.Duration, VideoMetadata: meta},
	})
	var res map[string]any
	if err == nil {
		require.NoError(t, json.Unmarshal(out, &res))
	}
	return res, seen, err
}

type visionCall struct {
	req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			} `json:"content"`
		} `json:"messages"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string         `json:"name"`
				Strict bool           `json:"strict"`
				Schema map[string]any `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
}

func TestVideoAnalysisFromFrames(t *testing.T) {
	t.Parallel()
	answer := `{"labels":[{"name":"test pattern","confidence":0.93,"frames":[0,1,7]},{"name":"cat","confidence":0.2,"frames":[3]}],
		"summary":"A colour test pattern with a moving counter.",
		"content_moderation":{"is_safe":true,"signals":[{"label":"violence","confidence":0.01,"frames":[]}]}}`
	res, seen, err := analyse(t, `["labels","summary","content_moderation"]`, `{"confidence_threshold":0.5,"include_usage":true}`, answer)
	require.NoError(t, err)

	require.Equal(t, "gpt-test", seen.req.Model)
	parts := seen.req.Messages[0].Content
	require.Equal(t, "text", parts[0].Type)
	require.Contains(t, parts[0].Text, "labels, summary, content_moderation")
	require.Len(t, parts, 9, "the instruction and 8 frames")
	for _, p := range parts[1:] {
		require.Equal(t, "image_url", p.Type)
		jpeg, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(p.ImageURL.URL, "data:image/jpeg;base64,"))
		require.NoError(t, err)
		require.Equal(t, []byte{0xFF, 0xD8}, jpeg[:2], "a real JPEG frame")
	}
	require.Equal(t, "json_schema", seen.req.ResponseFormat.Type)
	require.True(t, seen.req.ResponseFormat.JSONSchema.Strict)
	require.ElementsMatch(t, []any{"labels", "summary", "content_moderation"}, seen.req.ResponseFormat.JSONSchema.Schema["required"])

	labels := res["labels"].([]any)
	require.Len(t, labels, 1, "cat is under the confidence threshold")
	label := labels[0].(map[string]any)
	require.Equal(t, "test pattern", label["name"])
	require.Len(t, label["instances"], 3, "one instance per frame it was seen on")
	first := label["instances"].([]any)[0].(map[string]any)
	require.InDelta(t, 0, first["start"], 0.01)
	require.InDelta(t, 0.5, first["end"], 0.05, "a frame stands for its eighth of the video")
	require.Equal(t, "A colour test pattern with a moving counter.", res["summary"])
	moderation := res["content_moderation"].(map[string]any)
	require.Equal(t, true, moderation["is_safe"])
	require.Empty(t, moderation["signals"])
	require.Equal(t, 160.0, res["video_metadata"].(map[string]any)["width"])
	require.Equal(t, 900.0, res["usage"].(map[string]any)["input_tokens"])
}

func TestVisionAnswersAreChecked(t *testing.T) {
	t.Parallel()
	for name, answer := range map[string]string{
		"not JSON":              `The video shows a test pattern.`,
		"a feature missing":     `{"labels":[]}`,
		"confidence over 1":     `{"labels":[{"name":"x","confidence":7,"frames":[0]}],"summary":"s"}`,
		"a frame that is not":   `{"labels":[{"name":"x","confidence":0.9,"frames":[12]}],"summary":"s"}`,
		"an empty summary":      `{"labels":[],"summary":" "}`,
		"an unknown moderation": `{"labels":[],"summary":"s","content_moderation":{"is_safe":false,"signals":[{"label":"spicy","confidence":0.9,"frames":[0]}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			features := `["labels","summary"]`
			if strings.Contains(answer, "content_moderation") {
				features = `["labels","summary","content_moderation"]`
			}
			_, _, err := analyse(t, features, ``, answer)
			providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeBadResponse})
		})
	}
	_, _, err := analyse(t, `["labels","faces"]`, ``, `{}`)
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeUnsupportedOption})
}
