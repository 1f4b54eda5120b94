package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/anthropic"
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
	b := &bench{requests: make(chan *http.Request, 4), bodies: make(chan map[string]any, 4)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var m map[string]any
		assert.NoError(t, json.Unmarshal(data, &m))
		b.requests <- r
		b.bodies <- m
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	b.provider = &providers.Provider{ID: "claude", Adapter: "anthropic",
		Settings: map[string]any{"base_url": srv.URL + "/v1", "api_key_env": "ANTHROPIC_KEY", "model": "claude-sonnet-4-5", "max_tokens": 2048},
		Services: map[jobs.ServiceID]*providers.Capability{jobs.LLMTasks: {
			Models:  []string{"claude-sonnet-4-5", "claude-haiku-4-5"},
			Pricing: providers.Pricing{Unit: providers.PerToken, Amount: 0.000003, Currency: "USD"},
		}}}
	a, err := anthropic.New(b.provider, providers.WithLookupEnv(func(name string) (string, bool) {
		return secret, name == "ANTHROPIC_KEY"
	}))
	require.NoError(t, err)
	b.adapter = a
	return b
}

func (b *bench) run(input, options string) (jobs.LLMTaskResult, error) {
	out, err := b.adapter.Run(context.Background(), providers.Call{JobID: "j", Service: jobs.LLMTasks, Provider: b.provider,
		Input: json.RawMessage(input), Options: json.RawMessage(options)})
	var res jobs.LLMTaskResult
	if err == nil {
		err = json.Unmarshal(out, &res)
	}
	return res, err
}

func TestMessagesRequestAndAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t, 200, strings.Replace(exampleResponse, "%s", "end_turn", 1))
	res, err := b.run(`{"type":"text","text":"The gateway routes jobs.","prompt":"Summarise.","system_prompt":"Be brief."}`,
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
			res, err := b.run(`{"type":"text","prompt":"Hello"}`, ``)
			require.NoError(t, err)
			require.Equal(t, want, res.FinishReason)
			require.Nil(t, res.Usage, "usage only when asked for")
			body := <-b.bodies
			require.Equal(t, "claude-sonnet-4-5", body["model"], "the settings' model")
			require.NotContains(t, body, "temperature", "the API's default")
			require.NotContains(t, body, "system")
		})
	}
	b := setup(t, 200, strings.Replace(exampleResponse, "%s", "refusal", 1))
	_, err := b.run(`{"type":"text","prompt":"Hello"}`, ``)
	requireKind(t, err, providers.KindPermanent, 0)
}

func requireKind(t *testing.T, err error, kind providers.ErrorKind, status int) *providers.Error {
	t.Helper()
	var perr *providers.Error
	require.True(t, errors.As(err, &perr), "%v", err)
	require.Equal(t, kind, perr.Kind, "%v", err)
	require.Equal(t, status, perr.StatusCode)
	require.NotContains(t, perr.Error(), secret)
	return perr
}

func TestErrorsAreClassified(t *testing.T) {
	t.Parallel()
	errBody := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`
	}
	tests := []struct {
		name   string
		status int
		body   string
		header []string
		kind   providers.ErrorKind
		after  time.Duration
		want   string
	}{
		{"rate limited", 429, errBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), []string{"retry-after", "12"}, providers.KindRetryable, 12 * time.Second, "rate_limit_error"},
		{"overloaded", 529, errBody("overloaded_error", "Overloaded"), nil, providers.KindRetryable, 0, "overloaded_error: Overloaded"},
		{"server error", 500, errBody("api_error", "Internal server error"), nil, providers.KindRetryable, 0, "api_error"},
		{"bad key", 401, errBody("authentication_error", "invalid x-api-key"), nil, providers.KindPermanent, 0, "authentication_error: invalid x-api-key"},
		{"bad request", 400, errBody("invalid_request_error", "max_tokens: Field required"), nil, providers.KindPermanent, 0, "invalid_request_error: max_tokens: Field required"},
		{"not found", 404, errBody("not_found_error", "model: claude-x"), nil, providers.KindPermanent, 0, "not_found_error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.status, tc.body, tc.header...)
			_, err := b.run(`{"type":"text","prompt":"Hello"}`, ``)
			perr := requireKind(t, err, tc.kind, tc.status)
			require.Contains(t, perr.Message, tc.want)
			require.Equal(t, tc.after, perr.RetryAfter)
		})
	}

	b := setup(t, 200, `{"not":"a message"`)
	_, err := b.run(`{"type":"text","prompt":"Hello"}`, ``)
	perr := requireKind(t, err, providers.KindPermanent, 0)
	require.Equal(t, jobs.CodeBadResponse, perr.Code)
}

func TestOnlyTextTasks(t *testing.T) {
	t.Parallel()
	b := setup(t, 200, strings.Replace(exampleResponse, "%s", "end_turn", 1))
	_, err := b.run(`{"type":"document","prompt":"Hello"}`, ``)
	require.Equal(t, jobs.CodeUnsupportedInput, requireKind(t, err, providers.KindPermanent, 0).Code)
	_, err = b.run(`{"type":"text","prompt":"Hello"}`, `{"creativity":"wild"}`)
	require.Equal(t, jobs.CodeInvalidInput, requireKind(t, err, providers.KindInput, 0).Code)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.adapter.Run(ctx, providers.Call{Service: jobs.LLMTasks, Provider: b.provider, Input: json.RawMessage(`{"type":"text","prompt":"x"}`)})
	require.ErrorIs(t, err, context.Canceled)
}

func TestSettingsAreChecked(t *testing.T) {
	t.Parallel()
	_, err := anthropic.New(&providers.Provider{ID: "c", Settings: map[string]any{"base_url": "ftp://x", "api_key_env": "MISSING"}},
		providers.WithLookupEnv(func(string) (string, bool) { return "", false }))
	require.ErrorContains(t, err, `base_url "ftp://x"`)
	require.ErrorContains(t, err, "model is missing")
	require.ErrorContains(t, err, "MISSING, but that environment variable is not set")
}
