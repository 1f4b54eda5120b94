package openai_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// schemaOptions asks for JSON matching a small schema, strictly.
const schemaOptions = `{"response_format":{"type":"json_schema","json_schema":{"name":"city","strict":true,` +
	`"schema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}}}}`

// wantSchemaFormat is schemaOptions' response_format as chat completions
// take it.
var wantSchemaFormat = map[string]any{"type": "json_schema", "json_schema": map[string]any{
	"name": "city", "strict": true,
	"schema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}},
		"required": []any{"name"}, "additionalProperties": false},
}}

func TestLLMTaskMessagesWithEveryOption(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.provider.Services[jobs.LLMTasks] = &providers.Capability{
		Models:  []string{"gpt-test", "gpt-big"},
		Pricing: providers.Pricing{Unit: providers.PerCharacter, Amount: 0.01, Currency: "USD"},
	}
	seen := b.chat(t, `{"answer":4}`, "length")

	res, err := b.run(context.Background(), jobs.LLMTasks,
		`{"type":"messages","messages":[{"role":"system","content":"Answer in JSON."},{"role":"user","content":"2+2?"},`+
			`{"role":"assistant","content":"Four."},{"role":"user","content":"As JSON, please."}]}`,
		`{"model":"gpt-big","max_tokens":50,"temperature":1.5,"stop":["END","\n\n"],"response_format":{"type":"json_object"}}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"model": "gpt-big",
		"messages": []any{
			map[string]any{"role": "system", "content": "Answer in JSON."},
			map[string]any{"role": "user", "content": "2+2?"},
			map[string]any{"role": "assistant", "content": "Four."},
			map[string]any{"role": "user", "content": "As JSON, please."},
		},
		"max_tokens": 50.0, "temperature": 1.5, "stop": []any{"END", "\n\n"},
		"response_format": map[string]any{"type": "json_object"},
	}, seen.raw, "the conversation as given: it mentions JSON, so nothing is added")
	require.Equal(t, "max_tokens", res["finish_reason"])
	require.InDelta(t, 0.40, res["usage"].(map[string]any)["cost"], 1e-9,
		"40 characters (15 + 4 + 5 + 16), every message's, at 0.01")
}

func TestLLMTaskJSONObjectSaysJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seen := b.chat(t, `{"city":"Paris"}`, "stop")
	_, err := b.run(context.Background(), jobs.LLMTasks,
		`{"type":"text","prompt":"Name the capital.","text":"France","system_prompt":"Be brief."}`, `{"response_format":{"type":"json_object"}}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"model": "gpt-test",
		"messages": []any{
			map[string]any{"role": "system", "content": "Be brief.\n\nAnswer with one JSON object only, with no text, explanation or Markdown code fence around it."},
			map[string]any{"role": "user", "content": "Name the capital.\n\nFrance"},
		},
		"response_format": map[string]any{"type": "json_object"},
	}, seen.raw, "JSON mode needs the word JSON in the conversation")
}

func TestLLMTaskTextFormatSendsNone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seen := b.chat(t, "Paris", "stop")
	_, err := b.run(context.Background(), jobs.LLMTasks, `{"type":"text","prompt":"Capital of France?"}`, `{"response_format":{"type":"text"}}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"model": "gpt-test", "messages": []any{map[string]any{"role": "user", "content": "Capital of France?"}}}, seen.raw)
}

func TestLLMTaskJSONSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, options, wantModel string
		schemaModels             []string
	}{
		{name: "the default model takes schemas", options: schemaOptions, schemaModels: []string{"gpt-big", "gpt-test"}, wantModel: "gpt-test"},
		{name: "else the first that does", options: schemaOptions, schemaModels: []string{"gpt-big", "gpt-other"}, wantModel: "gpt-big"},
		{name: "a pinned model stays", options: schemaOptions[:len(schemaOptions)-1] + `,"model":"gpt-other"}`,
			schemaModels: []string{"gpt-big", "gpt-other"}, wantModel: "gpt-other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.provider.Services[jobs.LLMTasks] = &providers.Capability{
				Models: []string{"gpt-test", "gpt-big", "gpt-other"}, JSONSchemaModels: tt.schemaModels,
				Pricing: providers.Pricing{Unit: providers.PerToken, Amount: 0.001, Currency: "USD"},
			}
			seen := b.chat(t, `{"name":"Paris"}`, "stop")
			res, err := b.run(context.Background(), jobs.LLMTasks,
				`{"type":"messages","messages":[{"role":"user","content":"Capital of France?"}]}`, tt.options)
			require.NoError(t, err)
			require.Equal(t, map[string]any{
				"model":           tt.wantModel,
				"messages":        []any{map[string]any{"role": "user", "content": "Capital of France?"}},
				"response_format": wantSchemaFormat,
			}, seen.raw, "the schema goes in response_format; no instruction is added")
			require.Equal(t, `{"name":"Paris"}`, res["content"])
		})
	}
}
