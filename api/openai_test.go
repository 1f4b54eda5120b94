package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// openAIClient is the official OpenAI Go SDK pointed at b's
// OpenAI-compatible surface with apiKey, retrying nothing
// (docs/openai.md).
func (b *bundle) openAIClient(apiKey string) *openai.Client {
	client := openai.NewClient(option.WithBaseURL(b.server.URL+api.OpenAIPath+"/"), option.WithAPIKey(apiKey),
		option.WithHTTPClient(b.server.Client()), option.WithMaxRetries(0))
	return &client
}

// answerFirstJob records the first job started, once started, as its
// workflow would on finishing: completed with result and usage.
func (b *bundle) answerFirstJob(t *testing.T, result jobs.LLMTaskResult, usage jobs.JobUsage) {
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(wg.Wait)
	go func() {
		defer wg.Done()
		id := b.firstJobID()
		ctx := context.Background()
		job, err := b.store.Jobs.GetJob(ctx, id)
		if !assert.NoError(t, err) {
			return
		}
		resultJSON, _ := json.Marshal(result)
		usageJSON, _ := json.Marshal(usage)
		completed := time.Now()
		job.Status, job.Provider, job.ProcessedAt, job.CompletedAt = jobs.StatusCompleted, "alpha", &completed, &completed
		job.Result, job.Usage, job.Revision = string(resultJSON), string(usageJSON), job.Revision+1
		assert.NoError(t, b.store.Jobs.SaveJob(ctx, job))
	}()
}

// firstJobID waits up to 10 s for the first job started, and is its id
// ("" when none started).
func (b *bundle) firstJobID() string {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b.mu.Lock()
		started := len(b.starts) > 0
		id := ""
		if started {
			id = b.starts[0].Input.JobID
		}
		b.mu.Unlock()
		if started {
			return id
		}
	}
	return ""
}

// openAIErrorOf is err as the SDK's API error.
func openAIErrorOf(t *testing.T, err error) *openai.Error {
	t.Helper()
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "an API error, not %v", err)
	return apiErr
}

func TestOpenAIModels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	client := b.openAIClient(b.token(t, "llm-tasks:read"))
	page, err := client.Models.List(context.Background())
	require.NoError(t, err)
	owners := map[string]string{}
	for _, m := range page.Data {
		require.Equal(t, "model", string(m.Object))
		owners[m.ID] = m.OwnedBy
	}
	// model-a is listed by two providers: the first in the catalog owns it.
	require.Equal(t, map[string]string{"auto": "ai-job-gateway", "model-a": "alpha", "model-b": "llm-only"}, owners)

	_, err = b.openAIClient(b.token(t, "llm-tasks:write")).Models.List(context.Background())
	apiErr := openAIErrorOf(t, err)
	require.Equal(t, http.StatusForbidden, apiErr.StatusCode)
	require.Equal(t, "insufficient_scope", apiErr.Code)

	// A gateway API key is an API key as good as a token.
	_, secret := issueKey(t, b, b.token(t, "keys:write", "llm-tasks:read"), map[string]any{"name": "sdk", "scopes": []string{"llm-tasks:read"}})
	page, err = b.openAIClient(secret).Models.List(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, page.Data)
}

func TestOpenAIChatCompletion(t *testing.T) {
	t.Parallel()
	b := setupWaiting(t)
	token := b.token(t, "llm-tasks:write", "llm-tasks:read")
	in, out := int64(12), int64(1)
	b.answerFirstJob(t, jobs.LLMTaskResult{Content: "Oslo", FinishReason: "max_tokens"},
		jobs.JobUsage{Unit: "token", Quantity: 13, Native: jobs.NativeUsage{InputTokens: &in, OutputTokens: &out}})

	var raw *http.Response
	completion, err := b.openAIClient(token).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "model-a",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Answer in one word."),
			openai.UserMessage("The capital of Norway?"),
		},
		MaxTokens:   openai.Int(5),
		Temperature: openai.Float(0.5),
	}, option.WithResponseInto(&raw))
	require.NoError(t, err)

	id := raw.Header.Get(api.JobIDHeader)
	require.NotEmpty(t, id)
	require.Equal(t, "chatcmpl-"+id, completion.ID)
	require.Equal(t, "model-a", completion.Model)
	require.Len(t, completion.Choices, 1)
	require.Equal(t, "assistant", string(completion.Choices[0].Message.Role))
	require.Equal(t, "Oslo", completion.Choices[0].Message.Content)
	require.Equal(t, "length", completion.Choices[0].FinishReason)
	require.Equal(t, int64(12), completion.Usage.PromptTokens)
	require.Equal(t, int64(1), completion.Usage.CompletionTokens)
	require.Equal(t, int64(13), completion.Usage.TotalTokens)

	// The job is the tenant's llm-task, as the request asked for it.
	listed := b.do(t, http.MethodGet, "/v1/jobs", token, nil)
	listed.requireStatus(t, http.StatusOK)
	var ids []string
	for _, job := range listed.object(t)["data"].([]any) {
		ids = append(ids, job.(map[string]any)["id"].(string))
	}
	require.Contains(t, ids, id)
	got := b.do(t, http.MethodGet, "/v1/llm-tasks/"+id, token, nil)
	got.requireStatus(t, http.StatusOK)
	attrs := got.data(t)["attributes"].(map[string]any)
	require.Equal(t, map[string]any{"type": "messages", "messages": []any{
		map[string]any{"role": "system", "content": "Answer in one word."},
		map[string]any{"role": "user", "content": "The capital of Norway?"},
	}}, attrs["input"])
	require.Equal(t, map[string]any{"model": "model-a", "max_tokens": 5.0, "temperature": 0.5}, attrs["options"])
}

func TestOpenAIChatCompletionOfAFailedJob(t *testing.T) {
	t.Parallel()
	b := setupWaiting(t)
	b.finishAfter(t, "", jobs.StatusFailed, 0)
	var raw *http.Response
	_, err := b.openAIClient(b.token(t, "llm-tasks:write")).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "auto",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
	}, option.WithResponseInto(&raw))
	apiErr := openAIErrorOf(t, err)
	require.Equal(t, http.StatusBadGateway, apiErr.StatusCode)
	require.Equal(t, "server_error", apiErr.Type)
	require.Equal(t, "providers_exhausted", apiErr.Code)
	id := apiErr.Response.Header.Get(api.JobIDHeader)
	require.NotEmpty(t, id)
	require.Contains(t, apiErr.Message, id)
}

func TestOpenAIChatCompletionRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	user := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}

	t.Run("a bad key is an authentication error", func(t *testing.T) {
		t.Parallel()
		_, err := b.openAIClient("not-a-token").Chat.Completions.New(context.Background(),
			openai.ChatCompletionNewParams{Model: "auto", Messages: user})
		apiErr := openAIErrorOf(t, err)
		require.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
		require.Equal(t, "invalid_request_error", apiErr.Type)
		require.Equal(t, "invalid_api_key", apiErr.Code)
	})

	client := b.openAIClient(b.token(t, "llm-tasks:write"))
	cases := []struct {
		name   string
		params openai.ChatCompletionNewParams
		param  string
	}{
		{"more than one choice", openai.ChatCompletionNewParams{Model: "auto", Messages: user, N: openai.Int(2)}, "n"},
		{"no messages", openai.ChatCompletionNewParams{Model: "auto", Messages: []openai.ChatCompletionMessageParamUnion{}}, "messages"},
		{"an empty message", openai.ChatCompletionNewParams{Model: "auto", Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("Hello"), openai.AssistantMessage("")}}, "messages[1].content"},
		{"a temperature over 2", openai.ChatCompletionNewParams{Model: "auto", Messages: user, Temperature: openai.Float(3)}, "temperature"},
		{"a model no provider lists", openai.ChatCompletionNewParams{Model: "gpt-nonexistent", Messages: user}, "model"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := client.Chat.Completions.New(context.Background(), tc.params)
			apiErr := openAIErrorOf(t, err)
			require.Equal(t, http.StatusBadRequest, apiErr.StatusCode, apiErr.RawJSON())
			require.Equal(t, "invalid_request_error", apiErr.Type)
			require.Equal(t, tc.param, apiErr.Param, apiErr.RawJSON())
		})
	}
	b.assertNoStarts(t)
}

// TestOpenAIErrorShape: every error under /openai/v1 is OpenAI's
// {"error": {"message", "type", "param", "code"}}, /v1's unchanged.
func TestOpenAIErrorShape(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.token(t, "llm-tasks:write")
	hello := []any{map[string]any{"role": "user", "content": "Hello"}}
	cases := []struct {
		name          string
		method, path  string
		token         string
		body          any
		status        int
		param         any
		errorCodeLike any
	}{
		{"streaming", http.MethodPost, "/openai/v1/chat/completions", token,
			map[string]any{"model": "auto", "messages": hello, "stream": true}, http.StatusBadRequest, "stream", "unsupported_value"},
		{"tools", http.MethodPost, "/openai/v1/chat/completions", token,
			map[string]any{"model": "auto", "messages": hello, "tools": []any{map[string]any{"type": "function"}}}, http.StatusBadRequest, "tools", "unsupported_parameter"},
		{"an image part", http.MethodPost, "/openai/v1/chat/completions", token,
			map[string]any{"model": "auto", "messages": []any{map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/a.png"}}}}}},
			http.StatusBadRequest, "messages[0].content[0].type", "unsupported_parameter"},
		{"not JSON", http.MethodPost, "/openai/v1/chat/completions", token, "{", http.StatusBadRequest, nil, nil},
		{"no token", http.MethodGet, "/openai/v1/models", "", nil, http.StatusUnauthorized, nil, "invalid_api_key"},
		{"an unknown path", http.MethodGet, "/openai/v1/embeddings", token, nil, http.StatusNotFound, nil, "not_found"},
		{"a wrong method", http.MethodDelete, "/openai/v1/models", token, nil, http.StatusMethodNotAllowed, nil, "method_not_allowed"},
		{"a body over the limit", http.MethodPost, "/openai/v1/chat/completions", token,
			map[string]any{"model": "auto", "messages": []any{map[string]any{"role": "user", "content": strings.Repeat("x", api.MaxBodyBytes)}}},
			http.StatusRequestEntityTooLarge, nil, "payload_too_large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := b.do(t, tc.method, tc.path, tc.token, tc.body)
			r.requireStatus(t, tc.status)
			e, ok := r.object(t)["error"].(map[string]any)
			require.True(t, ok, "body: %s", r.Body)
			require.Len(t, e, 4, "body: %s", r.Body)
			require.NotEmpty(t, e["message"])
			require.NotEmpty(t, e["type"])
			require.Equal(t, tc.param, e["param"])
			require.Equal(t, tc.errorCodeLike, e["code"])
		})
	}
	t.Run("/v1 keeps its shape", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodGet, "/v1/nothing", token, nil)
		r.requireStatus(t, http.StatusNotFound)
		require.Equal(t, "NOT_FOUND", r.object(t)["error"].(map[string]any)["code"])
	})
}

// TestOpenAIModelNamesAPolicy: a routing policy of llm-tasks the tenant
// may use is a model by its name: listed, and a chat naming it is a job
// routed by it.
func TestOpenAIModelNamesAPolicy(t *testing.T) {
	t.Parallel()
	b := setupWaiting(t)
	token := b.token(t, "llm-tasks:write", "llm-tasks:read", "policies:write")
	pol := b.polCreate(t, token, polAttrs(t, set("/name", "llm-first"), set("/service", "llm-tasks"),
		set("/providers", []any{map[string]any{"provider_id": "llm-only", "priority": 1}})))
	page, err := b.openAIClient(token).Models.List(context.Background())
	require.NoError(t, err)
	owners := map[string]string{}
	for _, m := range page.Data {
		owners[m.ID] = m.OwnedBy
	}
	require.Equal(t, "policy", owners["llm-first"])
	other, err := b.openAIClient(b.tokenFor(t, tenantB, userB, "llm-tasks:read")).Models.List(context.Background())
	require.NoError(t, err)
	for _, m := range other.Data {
		require.NotEqual(t, "llm-first", m.ID, "another tenant's policy is not its model")
	}

	b.answerFirstJob(t, jobs.LLMTaskResult{Content: "ok", FinishReason: "completed"}, jobs.JobUsage{Unit: "token", Quantity: 2})
	var raw *http.Response
	_, err = b.openAIClient(token).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "llm-first", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
	}, option.WithResponseInto(&raw))
	require.NoError(t, err)
	got := b.do(t, http.MethodGet, "/v1/llm-tasks/"+raw.Header.Get(api.JobIDHeader), token, nil)
	got.requireStatus(t, http.StatusOK)
	attrs := got.data(t)["attributes"].(map[string]any)
	require.Equal(t, pol["id"], attrs["policy_id"])
	require.Nil(t, attrs["options"], "the policy is not a model option")
}
