package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// getData GETs path, requires 200 OK and returns the document's data
// member as a D: []json.RawMessage for a list, json.RawMessage for one.
func getData[D any](t *testing.T, b *bundle, path, token string) D {
	t.Helper()
	r := b.do(t, http.MethodGet, path, token, nil)
	r.requireStatus(t, http.StatusOK)
	var doc struct {
		Data D `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	return doc.Data
}

func TestServices(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.token(t) // any valid token, no scope needed

	want := map[string]string{
		"transcriptions": `{"id":"transcriptions","type":"service","attributes":{"endpoint":"/v1/transcriptions","job_type":"transcription-job","status":"active"}}`,
		"translations":   `{"id":"translations","type":"service","attributes":{"endpoint":"/v1/translations","job_type":"translation-job","status":"active"}}`,
		"video-analyses": `{"id":"video-analyses","type":"service","attributes":{"endpoint":"/v1/video-analyses","job_type":"video-analysis-job","status":"active"}}`,
		"llm-tasks":      `{"id":"llm-tasks","type":"service","attributes":{"endpoint":"/v1/llm-tasks","job_type":"llm-task-job","status":"active"}}`,
	}
	// withoutTexts drops name and description, checked separately.
	withoutTexts := func(t *testing.T, raw json.RawMessage) string {
		var svc map[string]any
		require.NoError(t, json.Unmarshal(raw, &svc))
		attrs := svc["attributes"].(map[string]any)
		require.NotEmpty(t, attrs["name"])
		require.NotEmpty(t, attrs["description"])
		delete(attrs, "name")
		delete(attrs, "description")
		out, err := json.Marshal(svc)
		require.NoError(t, err)
		return string(out)
	}

	t.Run("list", func(t *testing.T) {
		t.Parallel()
		list := getData[[]json.RawMessage](t, b, "/v1/services", token)
		require.Len(t, list, 4)
		for i, res := range resources {
			require.JSONEq(t, want[res.id], withoutTexts(t, list[i]), "services are listed in documented order")
		}
	})
	for _, res := range resources {
		t.Run("get "+res.id, func(t *testing.T) {
			t.Parallel()
			require.JSONEq(t, want[res.id], withoutTexts(t, getData[json.RawMessage](t, b, "/v1/services/"+res.id, token)))
		})
	}
	for _, id := range []string{"transcription", "Transcriptions", "jobs", "x"} {
		t.Run("unknown "+id, func(t *testing.T) {
			t.Parallel()
			requireError(t, b.do(t, http.MethodGet, "/v1/services/"+id, token, nil), http.StatusNotFound, "NOT_FOUND")
		})
	}
}

// wantProviders is the test catalog as the API must show it: default
// statuses filled in, languages and models only where listed.
var wantProviders = map[string]string{
	"alpha": `{"id":"alpha","type":"provider","attributes":{"name":"Alpha","status":"active","services":{
		"transcriptions":{"features":["language_detection","diarization","timestamps"],
			"limits":{"requests_per_minute":600,"requests_per_day":100000,"max_file_size_mb":500,"max_duration_seconds":14400},
			"pricing":{"unit":"per_minute","amount":0.006,"currency":"USD"},"status":"active"},
		"translations":{"features":["language_detection","formality"],
			"limits":{"requests_per_minute":300,"requests_per_day":50000,"max_file_size_mb":20,"max_duration_seconds":600},
			"pricing":{"unit":"per_character","amount":0.00002,"currency":"EUR"},"status":"active"},
		"video-analyses":{"features":["labels","scenes","faces","speech_to_text","ocr","content_moderation","sentiment","topics","brands","summary"],
			"limits":{"requests_per_minute":60,"requests_per_day":5000,"max_file_size_mb":5000,"max_duration_seconds":7200},
			"pricing":{"unit":"per_minute","amount":0.1,"currency":"USD"},"status":"active"},
		"llm-tasks":{"models":["model-a"],
			"limits":{"requests_per_minute":600,"requests_per_day":100000,"max_file_size_mb":10,"max_duration_seconds":600},
			"pricing":{"unit":"per_token","amount":0.000002,"currency":"USD"},"status":"active"}}}}`,
	"narrow": `{"id":"narrow","type":"provider","attributes":{"name":"Narrow","status":"active","services":{
		"transcriptions":{"features":["language_detection","timestamps"],"languages":["en","de"],
			"limits":{"requests_per_minute":60,"requests_per_day":1000,"max_file_size_mb":100,"max_duration_seconds":3600},
			"pricing":{"unit":"per_minute","amount":0.002,"currency":"USD"},"status":"active"},
		"translations":{"features":["language_detection"],"source_languages":["en"],"target_languages":["de","fr"],
			"limits":{"requests_per_minute":60,"requests_per_day":1000,"max_file_size_mb":5,"max_duration_seconds":60},
			"pricing":{"unit":"per_character","amount":0.00001,"currency":"USD"},"status":"active"},
		"video-analyses":{"features":["labels","scenes"],
			"limits":{"requests_per_minute":10,"requests_per_day":100,"max_file_size_mb":1000,"max_duration_seconds":600},
			"pricing":{"unit":"per_minute","amount":0.02,"currency":"USD"},"status":"active"}}}}`,
	"half-off": `{"id":"half-off","type":"provider","attributes":{"name":"Half off","status":"active","services":{
		"transcriptions":{"features":["language_detection","diarization","timestamps"],
			"limits":{"requests_per_minute":60,"requests_per_day":1000,"max_file_size_mb":100,"max_duration_seconds":3600},
			"pricing":{"unit":"per_minute","amount":0.003,"currency":"USD"},"status":"disabled"},
		"translations":{"features":["language_detection","formality"],
			"limits":{"requests_per_minute":60,"requests_per_day":1000,"max_file_size_mb":5,"max_duration_seconds":60},
			"pricing":{"unit":"per_character","amount":0.00003,"currency":"USD"},"status":"active"}}}}`,
	"llm-only": `{"id":"llm-only","type":"provider","attributes":{"name":"LLM only","status":"degraded","services":{
		"llm-tasks":{"models":["model-a","model-b"],
			"limits":{"requests_per_minute":30,"requests_per_day":500,"max_file_size_mb":2,"max_duration_seconds":120},
			"pricing":{"unit":"per_token","amount":0.0000005,"currency":"USD"},"status":"active"}}}}`,
}

func TestProviders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.token(t)

	t.Run("list", func(t *testing.T) {
		t.Parallel()
		var ids []string
		for _, raw := range getData[[]json.RawMessage](t, b, "/v1/providers", token) {
			var p struct {
				ID         string `json:"id"`
				Attributes struct {
					Status string `json:"status"`
				} `json:"attributes"`
			}
			require.NoError(t, json.Unmarshal(raw, &p))
			ids = append(ids, p.ID)
			if want, ok := wantProviders[p.ID]; ok {
				require.JSONEq(t, want, string(raw))
			}
			if p.ID == "switched-off" {
				require.Equal(t, "disabled", p.Attributes.Status)
			}
		}
		require.Equal(t, []string{"alpha", "narrow", "switched-off", "half-off", "llm-only"}, ids, "the catalog in file order")
	})
	for id, want := range wantProviders {
		t.Run("get "+id, func(t *testing.T) {
			t.Parallel()
			require.JSONEq(t, want, string(getData[json.RawMessage](t, b, "/v1/providers/"+id, token)))
		})
	}
	t.Run("get disabled provider", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodGet, "/v1/providers/switched-off", token, nil)
		r.requireStatus(t, http.StatusOK)
		attrs := r.data(t)["attributes"].(map[string]any)
		require.Equal(t, "disabled", attrs["status"])
		services := attrs["services"].(map[string]any)
		require.ElementsMatch(t, []string{"transcriptions", "translations", "video-analyses", "llm-tasks"}, keys(services))
		for id, c := range services {
			require.Equal(t, "active", c.(map[string]any)["status"], "capability %s keeps its own status", id)
		}
	})
	for _, id := range []string{"sandbox-fast", "ALPHA", "beta"} {
		t.Run("unknown "+id, func(t *testing.T) {
			t.Parallel()
			requireError(t, b.do(t, http.MethodGet, "/v1/providers/"+id, token, nil), http.StatusNotFound, "NOT_FOUND")
		})
	}
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.token(t, allScopes()...)
	job := "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f"

	for _, path := range []string{"/", "/v1", "/v2/transcriptions", "/v1/transcription", "/v1/jobs/" + job + "/x", "/v1/transcriptions/" + job + "/result/srt"} {
		t.Run("GET "+path, func(t *testing.T) {
			t.Parallel()
			requireError(t, b.do(t, http.MethodGet, path, token, nil), http.StatusNotFound, "NOT_FOUND")
		})
	}
	for _, tc := range []struct{ method, path string }{
		{http.MethodDelete, "/v1/transcriptions"},
		{http.MethodGet, "/v1/llm-tasks"},
		{http.MethodPut, "/v1/translations/" + job},
		{http.MethodPatch, "/v1/video-analyses/" + job},
		{http.MethodPost, "/v1/llm-tasks/" + job + "/result"},
		{http.MethodGet, "/v1/transcriptions/" + job + "/cancel"},
		{http.MethodPost, "/v1/services"},
		{http.MethodDelete, "/v1/providers/alpha"},
		{http.MethodPost, "/healthz"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			t.Parallel()
			r := b.do(t, tc.method, tc.path, token, nil)
			requireError(t, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", tc.method)
		})
	}
}
