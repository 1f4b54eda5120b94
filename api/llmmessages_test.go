package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLLMTaskWithMessages: an llm-task of a conversation, with an output
// limit, a temperature, stop sequences and a JSON schema, is accepted and
// shown as sent (docs/api.md, LLM tasks).
func TestLLMTaskWithMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.token(t, "llm-tasks:write", "llm-tasks:read")
	messages := []any{
		map[string]any{"role": "system", "content": "Answer in JSON."},
		map[string]any{"role": "user", "content": "Name a colour."},
	}
	options := map[string]any{"max_tokens": 50, "temperature": 0.2, "stop": []any{"\n\n"},
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "colour",
			"schema": map[string]any{"type": "object", "properties": map[string]any{"colour": map[string]any{"type": "string"}}, "required": []any{"colour"}}}}}
	job := b.create(t, "llm-tasks", token, map[string]any{"data": map[string]any{"type": "llm-task-job", "attributes": map[string]any{
		"input": map[string]any{"type": "messages", "messages": messages}, "options": options}}})
	got := b.do(t, http.MethodGet, "/v1/llm-tasks/"+job["id"].(string), token, nil)
	got.requireStatus(t, http.StatusOK)
	attrs := got.data(t)["attributes"].(map[string]any)
	require.Equal(t, map[string]any{"type": "messages", "messages": messages}, attrs["input"])
	require.Equal(t, "colour", attrs["options"].(map[string]any)["response_format"].(map[string]any)["json_schema"].(map[string]any)["name"])
}
