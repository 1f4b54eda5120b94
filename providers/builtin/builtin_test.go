package builtin_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/builtin"
)

func TestDefaultCatalogBuilds(t *testing.T) {
	t.Parallel()

	r, err := providers.NewRegistry(providers.DefaultCatalog(), builtin.Factories())
	require.NoError(t, err)
	for _, p := range r.Catalog().Providers {
		_, ok := r.Adapter(p.ID)
		require.True(t, ok, "adapter for %s", p.ID)
	}

	a, _ := r.Adapter("sandbox-fast")
	out, err := a.Run(context.Background(), providers.Call{
		Service: jobs.LLMTasks, Provider: r.Catalog().Providers[0],
		Input: json.RawMessage(`{"type":"text","text":"hello","prompt":"Say hi"}`),
	})
	require.NoError(t, err)
	require.Contains(t, string(out), "[sandbox]")
}

func TestCatalogErrorsNameTheProvider(t *testing.T) {
	t.Parallel()

	c, err := providers.ParseCatalog([]byte(`
providers:
  - id: gpt
    name: GPT
    adapter: openai
    settings: {base_url: "https://api.openai.com/v1"}
    services:
      llm-tasks: {pricing: {unit: per_token, amount: 0.000001, currency: USD}}
  - id: whisper
    name: Whisper
    adapter: whisper
    services:
      transcriptions: {pricing: {unit: per_minute, amount: 0.006, currency: USD}}
`))
	require.NoError(t, err)
	_, err = providers.NewRegistry(c, builtin.Factories())
	require.ErrorContains(t, err, `providers file: provider "gpt" (adapter openai): settings: model is missing`)
	known := slices.Sorted(maps.Keys(builtin.Factories()))
	require.Contains(t, known, "sandbox")
	require.ErrorContains(t, err, `providers file: provider "whisper" uses unknown adapter "whisper" (known adapters: `+strings.Join(known, ", ")+`)`)
}

func TestOptionsReachTheAdapters(t *testing.T) {
	t.Parallel()

	c, err := providers.ParseCatalog([]byte(`providers:
  - {id: dg, name: Deepgram, adapter: deepgram, settings: {api_key_env: DG_KEY}, services: {
      transcriptions: {pricing: {unit: per_minute, amount: 0.0043, currency: USD}}}}
`))
	require.NoError(t, err)
	env := providers.WithLookupEnv(func(name string) (string, bool) { return "k", name == "DG_KEY" })
	_, err = providers.NewRegistry(c, builtin.Factories())
	require.ErrorContains(t, err, "DG_KEY", "without the option, the key is read from the environment")

	r, err := providers.NewRegistry(c, builtin.Factories(env))
	require.NoError(t, err)
	_, async := r.Submitter("dg")
	require.False(t, async, "deepgram answers in the same exchange")

	r, err = providers.NewRegistry(c, builtin.Factories(env, providers.WithCallbacks()))
	require.NoError(t, err)
	_, async = r.Submitter("dg")
	require.True(t, async, "with callbacks, deepgram posts its result back")
}

// TestWhatEachAdapterRetains is docs/providers.md's table of what deleting
// a job does at each vendor (media, which needs ffmpeg, is checked in its
// own package).
func TestWhatEachAdapterRetains(t *testing.T) {
	t.Parallel()

	c, err := providers.ParseCatalog([]byte(`providers:
  - {id: sandbox, name: S, adapter: sandbox, services: {translations: {pricing: {unit: per_character, amount: 0, currency: USD}}}}
  - {id: apertium, name: A, adapter: apertium, settings: {base_url: "http://127.0.0.1:2737"}, services: {translations: {pricing: {unit: per_character, amount: 0, currency: USD}}}}
  - {id: deepl, name: D, adapter: deepl, settings: {api_key_env: KEY}, services: {translations: {pricing: {unit: per_character, amount: 0, currency: USD}}}}
  - {id: openai, name: O, adapter: openai, settings: {base_url: "https://api.openai.com/v1", api_key_env: KEY, model: m}, services: {llm-tasks: {pricing: {unit: per_token, amount: 0, currency: USD}}}}
  - {id: anthropic, name: C, adapter: anthropic, settings: {api_key_env: KEY, model: m}, services: {llm-tasks: {pricing: {unit: per_token, amount: 0, currency: USD}}}}
  - {id: deepgram, name: G, adapter: deepgram, settings: {api_key_env: KEY}, services: {transcriptions: {pricing: {unit: per_minute, amount: 0, currency: USD}}}}
  - {id: assemblyai, name: Y, adapter: assemblyai, settings: {api_key_env: KEY}, services: {transcriptions: {pricing: {unit: per_minute, amount: 0, currency: USD}}}}
`))
	require.NoError(t, err)
	env := providers.WithLookupEnv(func(name string) (string, bool) { return "k", name == "KEY" })
	for _, opts := range [][]providers.Option{{env}, {env, providers.WithCallbacks()}} {
		r, err := providers.NewRegistry(c, builtin.Factories(opts...))
		require.NoError(t, err)
		for id, want := range map[string]providers.PurgeOutcome{
			"sandbox": providers.PurgeNotRetained, "apertium": providers.PurgeNotRetained, "deepl": providers.PurgeNotRetained,
			"openai": providers.PurgeNoAPI, "anthropic": providers.PurgeNoAPI, "deepgram": providers.PurgeNoAPI,
		} {
			p, _ := c.Lookup(id)
			for svc := range p.Services {
				got, err := r.Purge(context.Background(), id, svc, "handle")
				require.NoError(t, err, id)
				require.Equal(t, want, got, id)
			}
		}
		// assemblyai deletes its transcripts (its own tests call the
		// API); without a handle it cannot name one.
		got, err := r.Purge(context.Background(), "assemblyai", jobs.Transcriptions, "")
		require.Equal(t, providers.PurgeFailed, got)
		require.ErrorContains(t, err, "none was given")
	}
}
