package providers_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// catalogExample is a catalog in the form docs/providers.md (The catalog
// file) describes.
const catalogExample = `
providers:
  - id: sandbox-fast
    name: Sandbox (fast)
    adapter: sandbox
    quality: 0.8
    latency_ms_hint: 200
    settings: {latency_ms: 200, fail_rate: 0}
    services:
      transcriptions:
        features: [language_detection, diarization, timestamps]
        languages: [en, de]
        translates_to_english: true
        limits: {requests_per_minute: 600, requests_per_day: 100000, max_file_size_mb: 500, max_duration_seconds: 14400}
        pricing: {unit: per_minute, amount: 0.006, currency: USD}
      llm-tasks:
        models: [sandbox-model]
        limits: {requests_per_minute: 600, requests_per_day: 100000, max_file_size_mb: 10, max_duration_seconds: 600}
        pricing: {unit: per_token, amount: 0.000002, currency: USD}
`

func TestParseCatalogExample(t *testing.T) {
	t.Parallel()

	c, err := providers.ParseCatalog([]byte(catalogExample))
	require.NoError(t, err)
	require.Len(t, c.Providers, 1)

	p := c.Providers[0]
	require.Equal(t, "sandbox-fast", p.ID)
	require.Equal(t, "Sandbox (fast)", p.Name)
	require.Equal(t, "sandbox", p.Adapter)
	require.InDelta(t, 0.8, p.Quality, 1e-9)
	require.Equal(t, 200, p.LatencyMSHint)
	require.Equal(t, providers.StatusActive, p.Status, "status defaults to active")
	require.Equal(t, map[string]any{"latency_ms": 200, "fail_rate": 0}, p.Settings)
	require.Len(t, p.Services, 2)

	tr := p.Services[jobs.Transcriptions]
	require.NotNil(t, tr)
	require.Equal(t, []string{"language_detection", "diarization", "timestamps"}, tr.Features)
	require.Equal(t, []string{"en", "de"}, tr.Languages)
	require.True(t, tr.TranslatesToEnglish)
	require.Equal(t, providers.Limits{RequestsPerMinute: 600, RequestsPerDay: 100000, MaxFileSizeMB: 500, MaxDurationSeconds: 14400}, tr.Limits)
	require.Equal(t, providers.Pricing{Unit: "per_minute", Amount: 0.006, Currency: "USD"}, tr.Pricing)
	require.Equal(t, providers.StatusActive, tr.Status)

	llm := p.Services[jobs.LLMTasks]
	require.NotNil(t, llm)
	require.Equal(t, []string{"sandbox-model"}, llm.Models)
	require.False(t, llm.TranslatesToEnglish, "false unless listed")
	require.Equal(t, "per_token", llm.Pricing.Unit)

	got, ok := c.Lookup("sandbox-fast")
	require.True(t, ok)
	require.Same(t, p, got)
	_, ok = c.Lookup("nope")
	require.False(t, ok)
}

// provider renders a one-provider catalog; fields replace lines of a valid
// provider whose services are given by svc.
func provider(head, svc string) string {
	if head == "" {
		head = "id: p1\n    name: P1\n    adapter: sandbox"
	}
	if svc == "" {
		svc = "transcriptions:\n        pricing: {unit: per_minute, amount: 0.01, currency: USD}"
	}
	return "providers:\n  - " + head + "\n    services:\n      " + svc + "\n"
}

const okPricing = "\n        pricing: {unit: per_minute, amount: 0.01, currency: USD}"

func TestParseCatalogErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{"empty file", "", []string{"empty"}},
		{"no providers", "providers: []\n", []string{"no providers"}},
		{"missing id", provider("name: P1\n    adapter: sandbox", ""), []string{"provider #1", "id is missing"}},
		{"bad id", provider("id: a b\n    name: P1\n    adapter: sandbox", ""), []string{`id "a b"`}},
		{"duplicate id", provider("", "") + strings.TrimPrefix(provider("", ""), "providers:\n"),
			[]string{`provider "p1" (line 8)`, "already used by the provider on line 2"}},
		{"missing name", provider("id: p1\n    adapter: sandbox", ""), []string{`provider "p1"`, "name is missing"}},
		{"missing adapter", provider("id: p1\n    name: P1", ""), []string{`provider "p1"`, "adapter is missing"}},
		{"quality too high", provider("id: p1\n    name: P1\n    adapter: sandbox\n    quality: 1.5", ""), []string{`provider "p1"`, "quality 1.5"}},
		{"negative latency hint", provider("id: p1\n    name: P1\n    adapter: sandbox\n    latency_ms_hint: -1", ""), []string{"latency_ms_hint -1"}},
		{"bad provider status", provider("id: p1\n    name: P1\n    adapter: sandbox\n    status: broken", ""), []string{`status "broken"`, "active, degraded, disabled"}},
		{"no services", "providers:\n  - id: p1\n    name: P1\n    adapter: sandbox\n", []string{`provider "p1"`, "services is empty"}},
		{"unknown service", provider("", "transcription:"+okPricing), []string{`unknown service "transcription"`, "transcriptions, translations, video-analyses, llm-tasks"}},
		{"feature of another service", provider("", "transcriptions:\n        features: [formality]"+okPricing),
			[]string{"services.transcriptions.features", `"formality" is not a transcriptions feature`}},
		{"features on llm-tasks", provider("", "llm-tasks:\n        features: [timestamps]\n        pricing: {unit: per_token, amount: 0.01, currency: USD}"),
			[]string{"services.llm-tasks.features", "list models instead"}},
		{"models outside llm-tasks", provider("", "transcriptions:\n        models: [m]"+okPricing), []string{"services.transcriptions.models"}},
		{"translates_to_english outside transcriptions", provider("", "translations:\n        translates_to_english: true"+okPricing),
			[]string{"services.translations.translates_to_english", "only transcriptions"}},
		{"translates_to_english not a boolean", provider("", "transcriptions:\n        translates_to_english: sometimes"+okPricing),
			[]string{`(provider "p1")`, "cannot unmarshal"}},
		{"languages outside transcriptions", provider("", "translations:\n        languages: [en]"+okPricing), []string{"services.translations.languages", "only transcriptions"}},
		{"source languages outside translations", provider("", "transcriptions:\n        source_languages: [en]"+okPricing), []string{"services.transcriptions.source_languages"}},
		{"target languages outside translations", provider("", "llm-tasks:\n        target_languages: [en]"+okPricing), []string{"services.llm-tasks.target_languages"}},
		{"invalid language", provider("", "transcriptions:\n        languages: [en, english]"+okPricing), []string{"services.transcriptions.languages", `"english" is not a BCP 47`}},
		{"invalid target language", provider("", "translations:\n        target_languages: [xx]"+okPricing), []string{"services.translations.target_languages", `"xx"`}},
		{"missing pricing", provider("", "transcriptions:\n        features: [timestamps]"), []string{"services.transcriptions.pricing.unit is missing", "per_minute, per_character, per_page, per_request, per_token"}},
		{"bad pricing unit", provider("", "transcriptions:\n        pricing: {unit: per_hour, amount: 1, currency: USD}"), []string{"services.transcriptions.pricing.unit", `"per_hour"`}},
		{"bad currency", provider("", "transcriptions:\n        pricing: {unit: per_minute, amount: 1, currency: usd}"), []string{"services.transcriptions.pricing.currency", `"usd"`}},
		{"negative amount", provider("", "transcriptions:\n        pricing: {unit: per_minute, amount: -1, currency: USD}"), []string{"services.transcriptions.pricing.amount"}},
		{"negative limit", provider("", "transcriptions:\n        limits: {requests_per_minute: -5}"+okPricing), []string{"services.transcriptions.limits.requests_per_minute", "-5 is negative"}},
		{"bad capability status", provider("", "transcriptions:\n        status: paused"+okPricing), []string{"services.transcriptions.status", `"paused"`}},
		{"unknown provider key", provider("id: p1\n    name: P1\n    adapter: sandbox\n    qualty: 0.5", ""),
			[]string{`line 5 (provider "p1")`, `unknown key "qualty" in a provider`, "quality"}},
		{"unknown capability key", provider("", "transcriptions:\n        feature: [timestamps]"+okPricing),
			[]string{`(provider "p1")`, `unknown key "feature" in a service capability`, "features"}},
		{"unknown pricing key", provider("", "transcriptions:\n        pricing: {unit: per_minute, amount: 1, currency: USD, tax: 2}"),
			[]string{`unknown key "tax" in pricing`}},
		{"unknown top-level key", "provider: []\n", []string{`unknown key "provider" at the top level`}},
		{"wrong type", provider("id: p1\n    name: P1\n    adapter: sandbox\n    quality: high", ""), []string{`(provider "p1")`, "cannot unmarshal"}},
		{"syntax error", "providers: [\n", []string{"providers file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := providers.ParseCatalog([]byte(tt.yaml))
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), "providers file"), "error %q starts with providers file", err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestParseCatalogReportsEveryProblem(t *testing.T) {
	t.Parallel()

	yaml := provider("id: p1\n    name: P1\n    adapter: sandbox\n    quality: 2",
		"transcriptions:\n        features: [bogus]\n        pricing: {unit: per_minute, amount: 1, currency: EURO}")
	_, err := providers.ParseCatalog([]byte(yaml))
	require.Error(t, err)
	require.Contains(t, err.Error(), "quality 2")
	require.Contains(t, err.Error(), `"bogus"`)
	require.Contains(t, err.Error(), `"EURO"`)
}

func TestDefaultCatalog(t *testing.T) {
	t.Parallel()

	c := providers.DefaultCatalog()
	require.GreaterOrEqual(t, len(c.Providers), 3)

	covered := map[jobs.ServiceID]int{}
	for _, p := range c.Providers {
		require.Equal(t, "sandbox", p.Adapter, "the built-in catalog needs nothing outside the process")
		for id := range p.Services {
			covered[id]++
		}
	}
	for _, s := range jobs.Services() {
		require.GreaterOrEqual(t, covered[s.ID], 2, "service %s needs two providers so routing has a choice", s.ID)
	}

	// Each call is a fresh copy.
	c.Providers[0].Status = providers.StatusDisabled
	require.Equal(t, providers.StatusActive, providers.DefaultCatalog().Providers[0].Status)
}

func TestLoadCatalog(t *testing.T) {
	t.Parallel()

	c, err := providers.LoadCatalog("")
	require.NoError(t, err)
	require.Equal(t, providers.DefaultCatalog(), c)

	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(good, []byte(catalogExample), 0o600))
	c, err = providers.LoadCatalog(good)
	require.NoError(t, err)
	require.Len(t, c.Providers, 1)

	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(provider("id: p1\n    name: P1", "")), 0o600))
	_, err = providers.LoadCatalog(bad)
	require.ErrorContains(t, err, bad)
	require.ErrorContains(t, err, "adapter is missing")

	_, err = providers.LoadCatalog(filepath.Join(dir, "missing.yaml"))
	require.ErrorContains(t, err, "missing.yaml")
}
