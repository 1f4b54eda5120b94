package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/providertest"
)

// chunk is a chat.completion.chunk as chat completions stream it with
// stream_options.include_usage: usage null until the last chunk.
func chunk(delta, finish string) string {
	d := map[string]any{}
	if delta != "" {
		d["content"] = delta
	}
	var f any
	if finish != "" {
		f = finish
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1694268190, "model": "gpt-test",
		"choices": []any{map[string]any{"index": 0, "delta": d, "logprobs": nil, "finish_reason": f}},
		"usage":   nil,
	})
	return string(b)
}

// usageChunk is the last chunk of an answer streamed with include_usage.
const usageChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-test","choices":[],` +
	`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`

// sse answers with events, each a data line and a blank line, flushed one
// by one.
func sse(t *testing.T, events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			_, err := fmt.Fprintf(w, "data: %s\n\n", e)
			assert.NoError(t, err)
			w.(http.Flusher).Flush()
		}
	}
}

// helloStream streams "Hello, world" in three pieces, stopped by length.
func helloStream(t *testing.T) http.HandlerFunc {
	role := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1694268190,"model":"gpt-test",` +
		`"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`
	return sse(t, role, chunk("Hel", ""), chunk("lo, ", ""), chunk("world", ""), chunk("", "length"), usageChunk, "[DONE]")
}

// runStreamed runs an llm-task with a Stream function and returns the
// pieces it got.
func (b *bundle) runStreamed(ctx context.Context, input, options string) (map[string]any, []string, error) {
	call := providertest.Call(b.provider, jobs.LLMTasks, input, options)
	call.JobID = "job-1"
	var pieces []string
	call.Stream = func(text string) { pieces = append(pieces, text) }
	res, _, err := providertest.Run[map[string]any](ctx, b.t, b.adapter, call)
	return res, pieces, err
}

// recordBody makes the server record each request's body and headers
// before h answers.
func (b *bundle) recordBody(t *testing.T, h http.HandlerFunc) (*map[string]any, *http.Header) {
	body, header := &map[string]any{}, &http.Header{}
	b.handle(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/v1/chat/completions", r.URL.Path)
		data, err := io.ReadAll(r.Body)
		assert.NoError(t, err)
		*body = map[string]any{}
		assert.NoError(t, json.Unmarshal(data, body))
		*header = r.Header.Clone()
		h(w, r)
	})
	return body, header
}

func TestLLMTaskStreamsTheSameAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	input, options := `{"type":"text","prompt":"Greet."}`, `{"max_tokens":3}`

	plain := b.chat(t, "Hello, world", "length")
	want, err := b.run(context.Background(), jobs.LLMTasks, input, options)
	require.NoError(t, err)
	require.NotContains(t, plain.raw, "stream", "without Stream, no stream field")
	require.NotContains(t, plain.raw, "stream_options")

	body, header := b.recordBody(t, helloStream(t))
	res, pieces, err := b.runStreamed(context.Background(), input, options)
	require.NoError(t, err)
	require.Equal(t, []string{"Hel", "lo, ", "world"}, pieces, "each non-empty delta, in order")
	require.Equal(t, want, res, "the same result, usage and finish reason as unstreamed")
	require.Equal(t, map[string]any{"content": "Hello, world", "finish_reason": "max_tokens",
		"usage": map[string]any{"input_tokens": 10.0, "output_tokens": 5.0, "cost": 0.015}}, res)

	wantBody := plain.raw
	wantBody["stream"] = true
	wantBody["stream_options"] = map[string]any{"include_usage": true}
	require.Equal(t, wantBody, *body, "the same request, streamed")
	require.Equal(t, "Bearer sk-test", header.Get("Authorization"))
	require.Equal(t, "text/event-stream", header.Get("Accept"))
}

func TestLLMTaskStreamWithoutUsage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A server that ignores include_usage, and sends [DONE] without its
	// blank line.
	b.handle(func(w http.ResponseWriter, r *http.Request) {
		sse(t, chunk("Hi", ""), chunk("", "stop"))(w, r)
		_, _ = io.WriteString(w, ": keep-alive\n\ndata:[DONE]")
	})
	res, pieces, err := b.runStreamed(context.Background(), `{"type":"text","prompt":"Greet."}`, ``)
	require.NoError(t, err)
	require.Equal(t, []string{"Hi"}, pieces)
	require.Equal(t, map[string]any{"content": "Hi", "finish_reason": "completed", "usage": map[string]any{}}, res,
		"no token counts when the server sends none, as unstreamed")
}

func TestLLMTaskStreamAnsweredWhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.chat(t, "Hello, world", "stop")
	res, pieces, err := b.runStreamed(context.Background(), `{"type":"text","prompt":"Greet."}`, ``)
	require.NoError(t, err)
	require.Equal(t, []string{"Hello, world"}, pieces, "a server that does not stream: its answer in one piece")
	require.Equal(t, "Hello, world", res["content"])
}

func TestLLMTaskStreamFailures(t *testing.T) {
	t.Parallel()
	retryable := providertest.Failure{Kind: providers.KindRetryable, Code: jobs.CodeProviderUnavailable}
	tests := []struct {
		name    string
		handler func(t *testing.T) http.HandlerFunc
		want    providertest.Failure
		pieces  []string
	}{
		{name: "ended before [DONE]", handler: func(t *testing.T) http.HandlerFunc {
			return sse(t, chunk("Hel", ""), chunk("lo", ""))
		}, want: retryable, pieces: []string{"Hel", "lo"}},
		{name: "connection cut mid-event", handler: func(t *testing.T) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				sse(t, chunk("Hel", ""))(w, r)
				_, _ = io.WriteString(w, `data: {"id":"chatcmpl-1","choi`)
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if assert.NoError(t, err) {
					_ = conn.Close()
				}
			}
		}, want: retryable, pieces: []string{"Hel"}},
		{name: "error event", handler: func(t *testing.T) http.HandlerFunc {
			return sse(t, chunk("Hel", ""),
				`{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
		}, want: providertest.Failure{Kind: providers.KindRetryable, Code: jobs.CodeProviderUnavailable,
			Says: "The server had an error while processing your request."}, pieces: []string{"Hel"}},
		{name: "not a chunk", handler: func(t *testing.T) http.HandlerFunc {
			return sse(t, `not json`, "[DONE]")
		}, want: providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeBadResponse}},
		{name: "no choices", handler: func(t *testing.T) http.HandlerFunc {
			return sse(t, usageChunk, "[DONE]")
		}, want: providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeBadResponse, Says: "not a valid OpenAI API response"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.handle(tt.handler(t))
			_, pieces, err := b.runStreamed(context.Background(), `{"type":"text","prompt":"Hi"}`, ``)
			providertest.RequireError(t, err, tt.want)
			require.Equal(t, tt.pieces, pieces)
		})
	}
}

func TestLLMTaskStreamHTTPErrorsAsUnstreamed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		status int
		body   string
	}{
		{"bad key", 401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`},
		{"bad request", 400, `{"error":{"message":"context too long"}}`},
		{"rate limited", 429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`},
		{"quota exhausted", 429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`},
		{"server error", 500, `{"error":{"message":"The server had an error"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.vendor.Answer(tt.status, tt.body, "Content-Type", "application/json")
			_, want := b.run(context.Background(), jobs.LLMTasks, `{"type":"text","prompt":"Hi"}`, ``)
			require.Error(t, want)
			_, pieces, got := b.runStreamed(context.Background(), `{"type":"text","prompt":"Hi"}`, ``)
			require.Equal(t, want, got, "classified as without streaming")
			require.Empty(t, pieces)
			require.Equal(t, tt.status, providertest.RequireError(t, got, providertest.Failure{
				Kind: want.(*providers.Error).Kind, Status: tt.status}).StatusCode)
		})
	}
}

func TestLLMTaskStreamCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.handle(func(w http.ResponseWriter, r *http.Request) {
		sse(t, chunk("Hel", ""))(w, r)
		<-release
	})
	call := providertest.Call(b.provider, jobs.LLMTasks, `{"type":"text","prompt":"Hi"}`, ``)
	call.Stream = func(text string) {
		require.Equal(t, "Hel", text)
		cancel()
	}
	_, err := b.adapter.Run(ctx, call)
	require.ErrorIs(t, err, context.Canceled)
}
