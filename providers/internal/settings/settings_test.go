package settings_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/providers/internal/settings"
)

type sample struct {
	LatencyMS int     `json:"latency_ms"`
	FailRate  float64 `json:"fail_rate"`
	Name      string  `json:"name"`
}

func TestDecode(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      map[string]any
		want    sample
		wantErr string
	}{
		{"nil", nil, sample{}, ""},
		{"values", map[string]any{"latency_ms": 200, "fail_rate": 0.5, "name": "x"}, sample{200, 0.5, "x"}, ""},
		{"whole float for int", map[string]any{"latency_ms": 200.0}, sample{LatencyMS: 200}, ""},
		{"unknown key", map[string]any{"latncy_ms": 1, "zz": 2}, sample{}, `settings: unknown key(s) "latncy_ms", "zz"; known keys: latency_ms, fail_rate, name`},
		{"wrong type", map[string]any{"latency_ms": "fast"}, sample{}, "settings: latency_ms must be a whole number, not string"},
		{"fraction for int", map[string]any{"latency_ms": 1.5}, sample{}, "latency_ms must be a whole number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got sample
			err := settings.Decode(tt.in, &got)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestBaseURL(t *testing.T) {
	t.Parallel()

	got, err := settings.BaseURL("https://api.example.com/v1/", "https://x")
	require.NoError(t, err)
	require.Equal(t, "https://api.example.com/v1", got)
	_, err = settings.BaseURL("", "https://api.example.com/v1")
	require.EqualError(t, err, "settings: base_url is missing; set the API root, e.g. https://api.example.com/v1")
	_, err = settings.BaseURL("ftp://x", "https://x")
	require.EqualError(t, err, `settings: base_url "ftp://x" is not an absolute http or https URL`)
}

type vendor struct {
	settings.API
	Model string `json:"model"`
}

func TestDecodeEmbeddedAPI(t *testing.T) {
	t.Parallel()
	got := vendor{API: settings.API{BaseURL: "https://default"}}
	require.NoError(t, settings.Decode(map[string]any{"api_key_env": "K", "model": "m"}, &got))
	require.Equal(t, vendor{API: settings.API{BaseURL: "https://default", APIKeyEnv: "K"}, Model: "m"}, got)
	require.EqualError(t, settings.Decode(map[string]any{"api_key": "x"}, &got),
		`settings: unknown key(s) "api_key"; known keys: base_url, api_key_env, model`)
	require.EqualError(t, settings.Decode(map[string]any{"base_url": 1}, &got), "settings: base_url must be a string, not number")

	env := func(name string) (string, bool) { return "secret", name == "K" }
	url, key, err := got.Open("https://x", "KEY", env)
	require.NoError(t, err)
	require.Equal(t, "https://default", url)
	require.Equal(t, "secret", key)
	_, _, err = settings.API{BaseURL: "ftp://x"}.Open("https://x", "VENDOR_KEY", env)
	require.ErrorContains(t, err, `base_url "ftp://x" is not an absolute http or https URL`)
	require.ErrorContains(t, err, "api_key_env is missing; name the environment variable that holds the API key, e.g. VENDOR_KEY")
}
