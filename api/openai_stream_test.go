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
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/app/jobwatch"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// setupOpenAIStreaming is setup with a job watcher as waiter and the
// store's job events, so that chat completions stream.
func setupOpenAIStreaming(t *testing.T) *bundle {
	t.Helper()
	return setupWatching(t, func(cfg *api.Config, w *jobwatch.Watcher, st *store.Store) {
		cfg.Waiter, cfg.Watcher, cfg.Events = w, w, st.Jobs
	})
}

// streamStep is what a provider does to the first job, in order: write a
// piece of the answer of a call, or end the job.
type streamStep struct {
	call, text string
	end        *jobs.Record // status, result, usage and error of the end
}

// playFirstJob plays steps on the first job started, a few ms apart.
func (b *bundle) playFirstJob(t *testing.T, steps ...streamStep) {
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(wg.Wait)
	go func() {
		defer wg.Done()
		id := b.firstJobID()
		ctx := context.Background()
		for _, s := range steps {
			time.Sleep(20 * time.Millisecond)
			if s.end == nil {
				if !assert.NoError(t, b.store.Jobs.AppendJobDelta(ctx, store.JobDelta{JobID: id, CallID: s.call, Provider: "alpha", Text: s.text})) {
					return
				}
				continue
			}
			job, err := b.store.Jobs.GetJob(ctx, id)
			if !assert.NoError(t, err) {
				return
			}
			now := time.Now()
			job.Status, job.Provider, job.ProcessedAt, job.CompletedAt = s.end.Status, "alpha", &now, &now
			job.Result, job.Usage, job.ErrorCode, job.ErrorMessage = s.end.Result, s.end.Usage, s.end.ErrorCode, s.end.ErrorMessage
			job.Revision++
			assert.NoError(t, b.store.Jobs.SaveJob(ctx, job))
		}
	}()
}

func completedWith(content string, in, out int64) *jobs.Record {
	result, _ := json.Marshal(jobs.LLMTaskResult{Content: content, FinishReason: "completed"})
	usage, _ := json.Marshal(jobs.JobUsage{Unit: "token", Quantity: float64(in + out), Native: jobs.NativeUsage{InputTokens: &in, OutputTokens: &out}})
	return &jobs.Record{Status: jobs.StatusCompleted, Result: string(result), Usage: string(usage)}
}

var helloParams = openai.ChatCompletionNewParams{
	Model:    "model-a",
	Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")},
}

// streamed reads a chat stream through the SDK: the content of its
// chunks, the chunks, and the stream's error.
func streamed(t *testing.T, client *openai.Client, params openai.ChatCompletionNewParams, opts ...option.RequestOption) (string, []openai.ChatCompletionChunk, error) {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(context.Background(), params, opts...)
	defer func() { _ = stream.Close() }()
	var (
		content strings.Builder
		chunks  []openai.ChatCompletionChunk
	)
	for stream.Next() {
		chunk := stream.Current()
		chunks = append(chunks, chunk)
		for _, c := range chunk.Choices {
			content.WriteString(c.Delta.Content)
		}
	}
	return content.String(), chunks, stream.Err()
}

// The official SDK streams a chat: the pieces of the answer as the
// provider writes them, the rest of the answer the job completed with,
// the finish reason, and the usage in a last chunk when asked for; the
// job asked its provider for a stream.
func TestOpenAIChatStreams(t *testing.T) {
	t.Parallel()
	b := setupOpenAIStreaming(t)
	b.playFirstJob(t, streamStep{call: "c1", text: "Hel"}, streamStep{call: "c1", text: "lo"},
		streamStep{end: completedWith("Hello there.", 5, 3)})
	var raw *http.Response
	params := helloParams
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	content, chunks, err := streamed(t, b.openAIClient(b.token(t, "llm-tasks:write")), params, option.WithResponseInto(&raw))
	require.NoError(t, err)
	require.Equal(t, "Hello there.", content)
	id := raw.Header.Get(api.JobIDHeader)
	require.NotEmpty(t, id)
	require.Equal(t, "text/event-stream", raw.Header.Get("Content-Type"))

	var pieces []string
	for _, c := range chunks {
		require.Equal(t, "chatcmpl-"+id, c.ID)
		require.Equal(t, "chat.completion.chunk", string(c.Object))
		require.Equal(t, "model-a", c.Model)
		if len(c.Choices) == 1 && c.Choices[0].Delta.Content != "" {
			pieces = append(pieces, c.Choices[0].Delta.Content)
		}
	}
	require.Equal(t, []string{"Hel", "lo", " there."}, pieces, "each piece as written, then the rest")
	require.Equal(t, "assistant", chunks[0].Choices[0].Delta.Role)
	finish := chunks[len(chunks)-2]
	require.Equal(t, "stop", finish.Choices[0].FinishReason)
	last := chunks[len(chunks)-1]
	require.Empty(t, last.Choices, "the usage chunk has no choice")
	require.EqualValues(t, 5, last.Usage.PromptTokens)
	require.EqualValues(t, 3, last.Usage.CompletionTokens)
	require.EqualValues(t, 8, last.Usage.TotalTokens)

	job, err := b.store.Jobs.GetJob(context.Background(), id)
	require.NoError(t, err)
	require.JSONEq(t, `{"model":"model-a","stream":true}`, job.Options)
}

// A provider call that starts the answer again with the same text (a
// retry) continues the stream; one that writes another answer ends it
// with an error the SDK raises, naming the job, which goes on.
func TestOpenAIChatStreamAcrossProviderCalls(t *testing.T) {
	t.Parallel()
	t.Run("the same answer again", func(t *testing.T) {
		t.Parallel()
		b := setupOpenAIStreaming(t)
		b.playFirstJob(t, streamStep{call: "c1", text: "Hel"}, streamStep{call: "c2", text: "He"},
			streamStep{call: "c2", text: "llo"}, streamStep{end: completedWith("Hello", 1, 1)})
		content, chunks, err := streamed(t, b.openAIClient(b.token(t, "llm-tasks:write")), helloParams)
		require.NoError(t, err)
		require.Equal(t, "Hello", content)
		require.Equal(t, "stop", chunks[len(chunks)-1].Choices[0].FinishReason, "no usage chunk unless asked")
	})
	t.Run("an abandoned attempt still writing", func(t *testing.T) {
		t.Parallel()
		b := setupOpenAIStreaming(t)
		b.playFirstJob(t, streamStep{call: "c1", text: "Hel"}, streamStep{call: "c2", text: "Hel"},
			streamStep{call: "c1", text: "p me"}, streamStep{call: "c2", text: "lo"}, streamStep{end: completedWith("Hello", 1, 1)})
		content, _, err := streamed(t, b.openAIClient(b.token(t, "llm-tasks:write")), helloParams)
		require.NoError(t, err)
		require.Equal(t, "Hello", content, "the replaced call's late piece is left out")
	})
	t.Run("another answer", func(t *testing.T) {
		t.Parallel()
		b := setupOpenAIStreaming(t)
		b.playFirstJob(t, streamStep{call: "c1", text: "Yes"}, streamStep{call: "c2", text: "No"},
			streamStep{end: completedWith("No", 1, 1)})
		content, _, err := streamed(t, b.openAIClient(b.token(t, "llm-tasks:write")), helloParams)
		require.Equal(t, "Yes", content)
		var streamErr *ssestream.StreamError
		require.True(t, errors.As(err, &streamErr), "%v", err)
		require.Contains(t, streamErr.Message, "stream_restarted")
		require.Contains(t, streamErr.Message, "/v1/llm-tasks/")
	})
	t.Run("a failed job", func(t *testing.T) {
		t.Parallel()
		b := setupOpenAIStreaming(t)
		b.playFirstJob(t, streamStep{end: &jobs.Record{Status: jobs.StatusFailed, ErrorCode: jobs.CodeProvidersExhausted, ErrorMessage: "every eligible provider failed"}})
		_, _, err := streamed(t, b.openAIClient(b.token(t, "llm-tasks:write")), helloParams)
		var streamErr *ssestream.StreamError
		require.True(t, errors.As(err, &streamErr), "%v", err)
		require.Contains(t, streamErr.Message, "PROVIDERS_EXHAUSTED")
	})
}

func TestOpenAIStreamOptionsNeedStream(t *testing.T) {
	t.Parallel()
	b := setupOpenAIStreaming(t)
	params := helloParams
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	_, err := b.openAIClient(b.token(t, "llm-tasks:write")).Chat.Completions.New(context.Background(), params)
	apiErr := openAIErrorOf(t, err)
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, "stream_options", apiErr.Param)
}
