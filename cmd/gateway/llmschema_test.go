package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// TestLLMSchemaOutputFailsOver: a native llm-task with messages and a
// json_schema goes first to a cheap OpenAI-compatible vendor whose answer
// ("ok") is not JSON; the gateway's check fails that attempt, without a
// retry there, and the job fails over to the sandbox, whose answer matches
// the schema (docs/api.md, LLM tasks). Named to the vendor alone, the job
// fails OUTPUT_INVALID.
func TestLLMSchemaOutputFailsOver(t *testing.T) {
	t.Parallel()
	vendor := newFakeChatVendor(t)
	catalog := writeCatalog(t, `providers:
  - id: vendor-llm
    name: Vendor (chat)
    adapter: openai
    settings: {base_url: "`+vendor.URL+`", model: chat-1}
    services:
      llm-tasks:
        models: [chat-1]
        json_schema_models: [chat-1]
        pricing: {unit: per_token, amount: 0.000001, currency: USD}
  - id: sandbox-llm
    name: Sandbox (llm)
    adapter: sandbox
    settings: {latency_ms: 0, fail_rate: 0}
    services:
      llm-tasks:
        models: [sandbox-model]
        json_schema_models: [sandbox-model]
        pricing: {unit: per_token, amount: 0.00001, currency: USD}
`)
	g := newGateway(t, "", "--providers", catalog)

	const schema = `{"type":"object","additionalProperties":false,"required":["city","population","tags"],
		"properties":{"city":{"type":"string","minLength":1},"population":{"type":"integer","minimum":1},
			"tags":{"type":"array","minItems":1,"items":{"enum":["capital","port"]}}}}`
	body := func(provider string) string {
		return `{"data":{"type":"llm-task-job","attributes":{` + provider + `
			"input":{"type":"messages","messages":[{"role":"system","content":"Answer as JSON."},{"role":"user","content":"Describe Oslo"}]},
			"options":{"max_tokens":200,"temperature":0.2,"response_format":{"type":"json_schema","json_schema":{"name":"city","schema":` + schema + `}}}}}}`
	}

	done := g.waitEnded("llm-tasks", g.create("llm-tasks", body("")).Data.ID, 60*time.Second, "completed")
	require.Equal(t, "sandbox-llm", done.Data.Attributes.Provider)
	require.Len(t, done.Data.Attributes.RoutingHistory, 2, "the vendor's attempt, then the sandbox's")
	require.Contains(t, string(done.Data.Attributes.RoutingHistory[0]), `"provider_id":"vendor-llm"`)
	require.EqualValues(t, 1, vendor.calls.Load(), "an invalid answer is not asked for again")
	var result jobs.LLMTaskResult
	require.NoError(t, json.Unmarshal(done.Data.Attributes.Result, &result))
	format := jobs.LLMResponseFormat{Type: "json_schema", JSONSchema: &jobs.LLMJSONSchema{Name: "city", Schema: json.RawMessage(schema)}}
	require.NoError(t, format.CheckOutput(result.Content), "%s", result.Content)

	id := g.create("llm-tasks", body(`"provider":"vendor-llm",`)).Data.ID
	g.waitFailed("llm-tasks", id, 60*time.Second, jobs.CodeOutputInvalid)
	status, failed, _ := g.do(http.MethodGet, "/v1/llm-tasks/"+id, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(failed), "vendor-llm did not", "the message names the provider")
}
