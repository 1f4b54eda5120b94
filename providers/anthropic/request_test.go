package anthropic_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

func endTurn(t *testing.T) *bench {
	return setup(t, 200, strings.Replace(exampleResponse, "%s", "end_turn", 1))
}

func TestMessagesWithEveryOption(t *testing.T) {
	t.Parallel()
	b := endTurn(t)
	b.provider.Services[jobs.LLMTasks].Pricing = providers.Pricing{Unit: providers.PerCharacter, Amount: 0.01, Currency: "USD"}
	res, err := b.run(t,
		`{"type":"messages","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"2+2?"},`+
			`{"role":"assistant","content":"Four."},{"role":"user","content":"And as JSON?"}]}`,
		`{"model":"claude-haiku-4-5","max_tokens":300,"temperature":0.4,"stop":["END"],"response_format":{"type":"json_object"}}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"model": "claude-haiku-4-5", "max_tokens": 300.0, "temperature": 0.4, "stop_sequences": []any{"END"},
		"system": "Be brief.\n\nAnswer with one JSON object only, with no text, explanation or Markdown code fence around it.",
		"messages": []any{
			map[string]any{"role": "user", "content": "2+2?"},
			map[string]any{"role": "assistant", "content": "Four."},
			map[string]any{"role": "user", "content": "And as JSON?"},
		},
	}, <-b.bodies)
	require.InDelta(t, 0.30, *res.Usage.Cost, 1e-9, "30 characters (9 + 4 + 5 + 12), the job's messages, at 0.01")
}

func TestMessagesStartingWithAssistant(t *testing.T) {
	t.Parallel()
	b := endTurn(t)
	_, err := b.run(t, `{"type":"messages","messages":[{"role":"assistant","content":"How can I help?"},{"role":"user","content":"Hi."}]}`,
		`{"temperature":1.8}`)
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 2048.0, "temperature": 1.0,
		"messages": []any{
			map[string]any{"role": "assistant", "content": "How can I help?"},
			map[string]any{"role": "user", "content": "Hi."},
		},
	}, <-b.bodies, "the settings' max_tokens; a temperature over 1 is held to 1; the conversation as given")
}

func TestJSONSchemaGoesInTheSystemPrompt(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`
	options := `{"response_format":{"type":"json_schema","json_schema":{"name":"city","schema":` + schema + `}}}`
	for _, tt := range []struct {
		name, options, wantModel string
		schemaModels             []string
	}{
		{name: "the default model takes schemas", options: options, schemaModels: []string{"claude-haiku-4-5", "claude-sonnet-4-5"}, wantModel: "claude-sonnet-4-5"},
		{name: "else the first that does", options: options, schemaModels: []string{"claude-haiku-4-5"}, wantModel: "claude-haiku-4-5"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := endTurn(t)
			b.provider.Services[jobs.LLMTasks].JSONSchemaModels = tt.schemaModels
			_, err := b.run(t, `{"type":"text","prompt":"Capital of France?"}`, tt.options)
			require.NoError(t, err)
			require.Equal(t, map[string]any{
				"model": tt.wantModel, "max_tokens": 2048.0,
				"system": "Answer with one JSON value only, with no text, explanation or Markdown code fence around it. " +
					"It must match this JSON schema (draft 2020-12), named \"city\":\n" + schema,
				"messages": []any{map[string]any{"role": "user", "content": "Capital of France?"}},
			}, <-b.bodies)
		})
	}
}
