package anthropic_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/anthropic"
	"github.com/ai-job-gateway/gateway/providers/providertest"
)

const secret = "sk-ant-test-secret"

// exampleResponse is the Messages API's documented example answer.
const exampleResponse = `{
  "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5",
  "content": [{"type": "text", "text": "Hi! My name is Claude."}],
  "stop_reason": "%s",
  "stop_sequence": null,
  "usage": {"input_tokens": 2095, "output_tokens": 503}
}`

type bench struct {
	adapter  *anthropic.Adapter
	provider *providers.Provider
	requests chan *http.Request
	bodies   chan map[string]any
}

// setup serves answer (status, body, headers) for every request and
// records what the adapter sent.
func setup(t *testing.T, status int, body string, header ...string) *bench {
	t.Helper()
	return benchOf(t, providertest.NewVendor(t, nil).Answer(status, body, append(header, "Content-Type", "application/json")...))
}

func benchOf(t *testing.T, v *providertest.Vendor) *bench {
	t.Helper()
	b := &bench{requests: make(chan *http.Request, 4), bodies: make(chan map[string]any, 4)}
	v.Check(func(r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var m map[string]any
		assert.NoError(t, json.Unmarshal(data, &m))
		b.requests <- r
		b.bodies <- m
	})
	b.provider = providertest.Provider("claude",
		map[string]any{"base_url": v.URL + "/v1", "api_key_env": "ANTHROPIC_KEY", "model": "claude-sonnet-4-5", "max_tokens": 2048},
		jobs.LLMTasks, providers.Capability{
			Models:  []string{"claude-sonnet-4-5", "claude-haiku-4-5"},
			Pricing: providers.Pricing{Unit: providers.PerToken, Amount: 0.000003, Currency: "USD"},
		})
	b.provider.Adapter = "anthropic"
	a, err := anthropic.New(b.provider, providertest.Env("ANTHROPIC_KEY", secret))
	require.NoError(t, err)
	b.adapter = a
	return b
}

func (b *bench) run(t *testing.T, input, options string) (jobs.LLMTaskResult, error) {
	t.Helper()
	call := providertest.Call(b.provider, jobs.LLMTasks, input, options)
	call.JobID = "j"
	res, _, err := providertest.Run[jobs.LLMTaskResult](context.Background(), t, b.adapter, call)
	return res, err
}

func TestMessagesRequestAndAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t, 200, strings.Replace(exampleResponse, "%s", "end_turn", 1))
	res, err := b.run(t, `{"type":"text","text":"The gateway routes jobs.","prompt":"Summarise.","system_prompt":"Be brief."}`,
		`{"creativity":"creative","model":"claude-haiku-4-5","include_usage":true}`)
	require.NoError(t, err)

	r := <-b.requests
	require.Equal(t, http.MethodPost, r.Method)
	require.Equal(t, "/v1/messages", r.URL.Path)
	require.Equal(t, secret, r.Header.Get("x-api-key"))
	require.Equal(t, "2023-06-01", r.Header.Get("anthropic-version"))
	require.Equal(t, "application/json", r.Header.Get("content-type"))
	require.Empty(t, r.Header.Get("Authorization"), "the key goes in x-api-key only")
	require.Equal(t, map[string]any{
		"model": "claude-haiku-4-5", "max_tokens": 2048.0, "system": "Be brief.", "temperature": 1.0,
		"messages": []any{map[string]any{"role": "user", "content": "Summarise.\n\nThe gateway routes jobs."}},
	}, <-b.bodies)

	require.Equal(t, "Hi! My name is Claude.", res.Content)
	require.Equal(t, "completed", res.FinishReason)
	require.NotNil(t, res.Usage)
	require.Equal(t, 2095, *res.Usage.InputTokens)
	require.Equal(t, 503, *res.Usage.OutputTokens)
	require.InDelta(t, 0.007794, *res.Usage.Cost, 1e-9, "(2095 + 503) tokens at 0.000003")
}

func TestDefaultsAndStopReasons(t *testing.T) {
	t.Parallel()
	for stop, want := range map[string]string{"end_turn": "completed", "stop_sequence": "completed", "max_tokens": "max_tokens", "pause_turn": "completed"} {
		t.Run(stop, func(t *testing.T) {
			t.Parallel()
			b := setup(t, 200, strings.Replace(exampleResponse, "%s", stop, 1))
			res, err := b.run(t, `{"type":"text","prompt":"Hello"}`, ``)
			require.NoError(t, err)
			require.Equal(t, want, res.FinishReason)
			require.NotNil(t, res.Usage, "always: the gateway bills it and shows it only when asked for")
			body := <-b.bodies
			require.Equal(t, "claude-sonnet-4-5", body["model"], "the settings' model")
			require.NotContains(t, body, "temperature", "the API's default")
			require.NotContains(t, body, "system")
		})
	}
	b := setup(t, 200, strings.Replace(exampleResponse, "%s", "refusal", 1))
	_, err := b.run(t, `{"type":"text","prompt":"Hello"}`, ``)
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Secret: secret})
}

func TestErrorsAreClassified(t *testing.T) {
	t.Parallel()
	errBody := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`
	}
	providertest.RunStatusCases(t, secret, []providertest.StatusCase{
		{Name: "rate limited", Status: 429, Body: errBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), Header: []string{"retry-after", "12"},
			Kind: providers.KindRetryable, RetryAfter: 12 * time.Second, Says: "rate_limit_error"},
		{Name: "overloaded", Status: 529, Body: errBody("overloaded_error", "Overloaded"), Kind: providers.KindRetryable, Says: "overloaded_error: Overloaded"},
		{Name: "server error", Status: 500, Body: errBody("api_error", "Internal server error"), Kind: providers.KindRetryable, Says: "api_error"},
		{Name: "bad key", Status: 401, Body: errBody("authentication_error", "invalid x-api-key"), Kind: providers.KindPermanent, Says: "authentication_error: invalid x-api-key"},
		{Name: "bad request", Status: 400, Body: errBody("invalid_request_error", "max_tokens: Field required"), Kind: providers.KindPermanent, Says: "invalid_request_error: max_tokens: Field required"},
		{Name: "not found", Status: 404, Body: errBody("not_found_error", "model: claude-x"), Kind: providers.KindPermanent, Says: "not_found_error"},
		{Name: "not a message", Status: 200, Body: `{"not":"a message"`, Kind: providers.KindPermanent, Code: jobs.CodeBadResponse},
	}, func(t *testing.T, v *providertest.Vendor) []error {
		_, err := benchOf(t, v).run(t, `{"type":"text","prompt":"Hello"}`, ``)
		return []error{err}
	})
}

func TestOnlyTextTasks(t *testing.T) {
	t.Parallel()
	b := setup(t, 200, strings.Replace(exampleResponse, "%s", "end_turn", 1))
	_, err := b.run(t, `{"type":"document","prompt":"Hello"}`, ``)
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeUnsupportedInput, Secret: secret})
	_, err = b.run(t, `{"type":"text","prompt":"Hello"}`, `{"creativity":"wild"}`)
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindInput, Code: jobs.CodeInvalidInput, Secret: secret})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.adapter.Run(ctx, providers.Call{Service: jobs.LLMTasks, Provider: b.provider, Input: json.RawMessage(`{"type":"text","prompt":"x"}`)})
	require.ErrorIs(t, err, context.Canceled)
}

func TestSettingsAreChecked(t *testing.T) {
	t.Parallel()
	_, err := anthropic.New(&providers.Provider{ID: "c", Settings: map[string]any{"base_url": "ftp://x", "api_key_env": "MISSING"}},
		providertest.NoEnv())
	require.ErrorContains(t, err, `base_url "ftp://x"`)
	require.ErrorContains(t, err, "model is missing")
	require.ErrorContains(t, err, "MISSING, but that environment variable is not set")
}
