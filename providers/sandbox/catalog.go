package sandbox

import "fmt"

// Catalog is a catalog file with one sandbox provider offering every
// feature of all four services, taking latencyMS per job, with limits far
// above any rate a test or benchmark reaches, so routing reserves rate
// slots as in production but never refuses.
func Catalog(id string, latencyMS int64) string {
	return fmt.Sprintf(`providers:
  - id: %[1]s
    name: Sandbox (%[2]d ms)
    adapter: sandbox
    settings: {latency_ms: %[2]d, fail_rate: 0}
    services:
      transcriptions:
        translates_to_english: true
        features: [language_detection, diarization, timestamps]
        limits: {requests_per_minute: 10000000, requests_per_day: 1000000000, max_file_size_mb: 500, max_duration_seconds: 14400}
        pricing: {unit: per_minute, amount: 0.006, currency: USD}
      translations:
        features: [language_detection, formality]
        limits: {requests_per_minute: 10000000, requests_per_day: 1000000000, max_file_size_mb: 50, max_duration_seconds: 600}
        pricing: {unit: per_character, amount: 0.00002, currency: USD}
      video-analyses:
        features: [labels, scenes, faces, speech_to_text, ocr, content_moderation, sentiment, topics, brands, summary]
        limits: {requests_per_minute: 10000000, requests_per_day: 1000000000, max_file_size_mb: 2000, max_duration_seconds: 14400}
        pricing: {unit: per_minute, amount: 0.1, currency: USD}
      llm-tasks:
        models: [sandbox-model]
        json_schema_models: [sandbox-model]
        limits: {requests_per_minute: 10000000, requests_per_day: 1000000000, max_file_size_mb: 10, max_duration_seconds: 600}
        pricing: {unit: per_token, amount: 0.000002, currency: USD}
`, id, latencyMS)
}
