package anthropic_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/providertest"
)

// Events of the Messages API's documented stream, each an event line and
// a data line.
const (
	messageStart = `message_start|{"type": "message_start", "message": {"id": "msg_013Zva2CMHLNnXjNJJKqJ2EF", "type": "message", ` +
		`"role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null, ` +
		`"usage": {"input_tokens": 2095, "output_tokens": 1}}}`
	blockStart  = `content_block_start|{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}`
	ping        = `ping|{"type": "ping"}`
	blockStop   = `content_block_stop|{"type": "content_block_stop", "index": 0}`
	messageStop = `message_stop|{"type": "message_stop"}`
)

func textDelta(text string) string {
	return fmt.Sprintf(`content_block_delta|{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": %q}}`, text)
}

func messageDelta(stop string) string {
	return `message_delta|{"type": "message_delta", "delta": {"stop_reason": "` + stop + `", "stop_sequence": null}, "usage": {"output_tokens": 503}}`
}

// claudeStream is "Hi! My name is Claude." streamed, stopped by stop.
func claudeStream(stop string) []string {
	return []string{messageStart, blockStart, ping, textDelta("Hi! "), textDelta("My name"), textDelta(" is Claude."), blockStop,
		// A tool_use block's JSON is no text.
		`content_block_start|{"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}`,
		`content_block_delta|{"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"location\": \"Paris\"}"}}`,
		`content_block_stop|{"type": "content_block_stop", "index": 1}`,
		messageDelta(stop), messageStop}
}

// streamer answers with events ("name|data"), flushed one by one.
func streamer(t *testing.T, events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			name, data, _ := strings.Cut(e, "|")
			_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
			assert.NoError(t, err)
			w.(http.Flusher).Flush()
		}
	}
}

// runStreamed runs an llm-task with a Stream function and returns the
// pieces it got.
func (b *bench) runStreamed(t *testing.T, input, options string) (jobs.LLMTaskResult, []string, error) {
	t.Helper()
	call := providertest.Call(b.provider, jobs.LLMTasks, input, options)
	call.JobID = "j"
	var pieces []string
	call.Stream = func(text string) { pieces = append(pieces, text) }
	res, _, err := providertest.Run[jobs.LLMTaskResult](context.Background(), t, b.adapter, call)
	return res, pieces, err
}

const (
	input   = `{"type":"text","text":"The gateway routes jobs.","prompt":"Summarise.","system_prompt":"Be brief."}`
	options = `{"creativity":"creative","include_usage":true}`
)

func TestStreamGivesTheSameAnswer(t *testing.T) {
	t.Parallel()
	plain := setup(t, 200, strings.Replace(exampleResponse, "%s", "end_turn", 1))
	want, err := plain.run(t, input, options)
	require.NoError(t, err)
	wantBody := <-plain.bodies
	require.NotContains(t, wantBody, "stream", "without Stream, no stream field")

	b := benchOf(t, providertest.NewVendor(t, streamer(t, claudeStream("end_turn")...)))
	res, pieces, err := b.runStreamed(t, input, options)
	require.NoError(t, err)
	require.Equal(t, []string{"Hi! ", "My name", " is Claude."}, pieces, "each text delta, in order")
	require.Equal(t, want, res, "content, finish reason and usage as unstreamed")
	require.Equal(t, "Hi! My name is Claude.", res.Content)
	require.Equal(t, 2095, *res.Usage.InputTokens, "from message_start")
	require.Equal(t, 503, *res.Usage.OutputTokens, "from message_delta")

	r := <-b.requests
	require.Equal(t, "/v1/messages", r.URL.Path)
	require.Equal(t, secret, r.Header.Get("x-api-key"))
	require.Equal(t, "2023-06-01", r.Header.Get("anthropic-version"))
	wantBody["stream"] = true
	require.Equal(t, wantBody, <-b.bodies, "the same request, streamed")
}

func TestStreamStopReasons(t *testing.T) {
	t.Parallel()
	b := benchOf(t, providertest.NewVendor(t, streamer(t, claudeStream("max_tokens")...)))
	res, _, err := b.runStreamed(t, input, ``)
	require.NoError(t, err)
	require.Equal(t, "max_tokens", res.FinishReason)

	b = benchOf(t, providertest.NewVendor(t, streamer(t, messageStart, messageDelta("refusal"), messageStop)))
	_, _, err = b.runStreamed(t, input, ``)
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeProviderRejected,
		Says: "refused", Secret: secret})
}

func TestStreamFailures(t *testing.T) {
	t.Parallel()
	retryable := providertest.Failure{Kind: providers.KindRetryable, Code: jobs.CodeProviderUnavailable, Secret: secret}
	tests := []struct {
		name    string
		handler func(t *testing.T) http.HandlerFunc
		want    providertest.Failure
		pieces  []string
	}{
		{name: "ended before message_stop", handler: func(t *testing.T) http.HandlerFunc {
			return streamer(t, messageStart, blockStart, textDelta("Hi! "), blockStop, messageDelta("end_turn"))
		}, want: retryable, pieces: []string{"Hi! "}},
		{name: "connection cut mid-event", handler: func(t *testing.T) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				streamer(t, messageStart, blockStart, textDelta("Hi! "))(w, r)
				_, _ = io.WriteString(w, "event: content_block_delta\ndata: {\"type\": \"content_bl")
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if assert.NoError(t, err) {
					_ = conn.Close()
				}
			}
		}, want: retryable, pieces: []string{"Hi! "}},
		{name: "overloaded error event", handler: func(t *testing.T) http.HandlerFunc {
			return streamer(t, messageStart, blockStart, textDelta("Hi! "),
				`error|{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`)
		}, want: providertest.Failure{Kind: providers.KindRetryable, Code: jobs.CodeProviderUnavailable,
			Says: "overloaded_error: Overloaded", Secret: secret}, pieces: []string{"Hi! "}},
		{name: "not an event", handler: func(t *testing.T) http.HandlerFunc {
			return streamer(t, messageStart, `content_block_delta|{"type": `)
		}, want: providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeBadResponse, Secret: secret}},
		{name: "no message_start", handler: func(t *testing.T) http.HandlerFunc {
			return streamer(t, messageStop)
		}, want: providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeBadResponse, Secret: secret}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := benchOf(t, providertest.NewVendor(t, tt.handler(t)))
			_, pieces, err := b.runStreamed(t, input, ``)
			providertest.RequireError(t, err, tt.want)
			require.Equal(t, tt.pieces, pieces)
		})
	}
}

func TestStreamHTTPErrorsAsUnstreamed(t *testing.T) {
	t.Parallel()
	errBody := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`
	}
	for _, tt := range []struct {
		name   string
		status int
		body   string
		header []string
	}{
		{"bad key", 401, errBody("authentication_error", "invalid x-api-key"), nil},
		{"bad request", 400, errBody("invalid_request_error", "max_tokens: Field required"), nil},
		{"overloaded", 529, errBody("overloaded_error", "Overloaded"), nil},
		{"rate limited", 429, errBody("rate_limit_error", "Slow down"), []string{"retry-after", "12"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.status, tt.body, tt.header...)
			_, want := b.run(t, input, ``)
			require.Error(t, want)
			_, pieces, got := b.runStreamed(t, input, ``)
			require.Equal(t, want, got, "classified as without streaming")
			require.Empty(t, pieces)
			require.Equal(t, tt.status, providertest.RequireError(t, got, providertest.Failure{
				Kind: want.(*providers.Error).Kind, Status: tt.status, RetryAfter: want.(*providers.Error).RetryAfter, Secret: secret}).StatusCode)
		})
	}
}
