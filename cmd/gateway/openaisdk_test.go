package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
)

// devKeyOf is the API key gateway dev printed and wrote to its data dir.
func devKeyOf(t *testing.T, g *gateway) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(g.dataDir, "dev-api-key"))
	require.NoError(t, err)
	return strings.TrimSpace(string(raw))
}

// requireCompletedJob checks that job id is a completed job of the key's
// tenant, in GET /v1/jobs and in Temporal.
func requireCompletedJob(t *testing.T, g *gateway, key, id string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.url("/v1/jobs?filter[service]=llm-tasks&page[size]=100"), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var list struct {
		Data []struct {
			ID         string `json:"id"`
			Attributes struct {
				Status string `json:"status"`
			} `json:"attributes"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	found := false
	for _, j := range list.Data {
		if j.ID == id {
			found = true
			require.Equal(t, "completed", j.Attributes.Status, "job %s", id)
		}
	}
	require.True(t, found, "job %s in GET /v1/jobs", id)
	tc := temporalClient(t, g.temporal)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		desc, err := tc.DescribeWorkflowExecution(ctx, id, "")
		return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}, 20*time.Second, 100*time.Millisecond, "job %s's workflow completed", id)
}

// TestOpenAIGoSDK: the official Go SDK, pointed at gateway dev with its
// base URL and a gateway API key, completes a chat plain and streamed, the
// streamed one in several pieces with its usage, a transcription upload
// and a 3-line batch through files, each chat a completed job in GET
// /v1/jobs and in Temporal, and raises its error for a bad key
// (docs/openai.md).
func TestOpenAIGoSDK(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t) // the transcription probes its upload
	g := newGateway(t, "")
	key := devKeyOf(t, g)
	client := openai.NewClient(option.WithBaseURL(g.url("/openai/v1/")), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    "auto",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Say hello to the whole team.")},
	}

	var raw *http.Response
	chat, err := client.Chat.Completions.New(ctx, params, option.WithResponseInto(&raw))
	require.NoError(t, err)
	require.NotEmpty(t, chat.Choices[0].Message.Content)
	requireCompletedJob(t, g, key, raw.Header.Get("X-Gateway-Job-Id"))

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx, params, option.WithResponseInto(&raw))
	var (
		acc    openai.ChatCompletionAccumulator
		pieces int
	)
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		if len(chunk.Choices) == 1 && chunk.Choices[0].Delta.Content != "" {
			pieces++
		}
	}
	require.NoError(t, stream.Err())
	require.Greater(t, pieces, 1, "the answer came in pieces as the provider wrote it")
	require.Equal(t, chat.Choices[0].Message.Content, acc.Choices[0].Message.Content, "the sandbox answers the same prompt the same way")
	require.Equal(t, "stop", acc.Choices[0].FinishReason)
	require.Positive(t, acc.Usage.TotalTokens, "usage in the last chunk")
	requireCompletedJob(t, g, key, raw.Header.Get("X-Gateway-Job-Id"))

	// A transcription upload.
	resp, err := http.Get(g.url("/dev/samples/tone.wav"))
	require.NoError(t, err)
	audio, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	transcription, err := client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		File: openai.File(bytes.NewReader(audio), "tone.wav", "audio/wav"), Model: "auto"})
	require.NoError(t, err)
	require.NotEmpty(t, transcription.Text)

	// A 3-line batch through files.
	var lines bytes.Buffer
	for _, q := range []string{"one", "two", "three"} {
		line, err := json.Marshal(map[string]any{"custom_id": "q-" + q, "method": "POST", "url": "/v1/chat/completions",
			"body": map[string]any{"model": "auto", "messages": []map[string]string{{"role": "user", "content": "Count to " + q + "."}}}})
		require.NoError(t, err)
		lines.Write(append(line, '\n'))
	}
	file, err := client.Files.New(ctx, openai.FileNewParams{File: openai.File(&lines, "batch.jsonl", "application/jsonl"),
		Purpose: openai.FilePurposeBatch})
	require.NoError(t, err)
	batch, err := client.Batches.New(ctx, openai.BatchNewParams{InputFileID: file.ID,
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		batch, err = client.Batches.Get(ctx, batch.ID)
		require.NoError(t, err)
		return batch.Status == openai.BatchStatusCompleted
	}, 60*time.Second, 250*time.Millisecond, "the batch completes")
	require.EqualValues(t, 3, batch.RequestCounts.Completed)
	output, err := client.Files.Content(ctx, batch.OutputFileID)
	require.NoError(t, err)
	answers := bufio.NewScanner(output.Body)
	seen := map[string]bool{}
	for answers.Scan() {
		var line struct {
			CustomID string `json:"custom_id"`
			Response struct {
				StatusCode int                   `json:"status_code"`
				Body       openai.ChatCompletion `json:"body"`
			} `json:"response"`
		}
		require.NoError(t, json.Unmarshal(answers.Bytes(), &line))
		require.Equal(t, http.StatusOK, line.Response.StatusCode)
		require.NotEmpty(t, line.Response.Body.Choices[0].Message.Content)
		seen[line.CustomID] = true
		requireCompletedJob(t, g, key, strings.TrimPrefix(line.Response.Body.ID, "chatcmpl-"))
	}
	require.NoError(t, output.Body.Close())
	require.Equal(t, map[string]bool{"q-one": true, "q-two": true, "q-three": true}, seen)

	madeUp := openai.NewClient(option.WithBaseURL(g.url("/openai/v1/")), option.WithAPIKey("gwk_made_up"), option.WithMaxRetries(0))
	_, err = madeUp.Models.List(ctx)
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
}

// TestStreamedLLMTaskEvents: a native llm-task that asks for a stream has
// llm-task.delta events in its event stream, in order, before its
// completed event, and they make up its answer (docs/api.md, Streamed
// answers).
func TestStreamedLLMTaskEvents(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "")
	status, body, _ := g.do(http.MethodPost, "/v1/llm-tasks", `{"data":{"type":"llm-task-job","attributes":{
		"input":{"type":"messages","messages":[{"role":"user","content":"Tell the team that the durable jobs stream now."}]},
		"options":{"stream":true}}}}`)
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	var job jobDoc
	require.NoError(t, json.Unmarshal(body, &job))

	req, err := http.NewRequest(http.MethodGet, g.url("/v1/llm-tasks/"+job.Data.ID+"/events"), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+g.token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var (
		names []string
		text  strings.Builder
		final string
	)
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		data, ok := strings.CutPrefix(lines.Text(), "data: ")
		if !ok {
			continue
		}
		var event struct {
			Event string `json:"event"`
			Data  struct {
				Attributes struct {
					Text   string `json:"text"`
					Result struct {
						Content string `json:"content"`
					} `json:"result"`
				} `json:"attributes"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &event))
		names = append(names, event.Event)
		text.WriteString(event.Data.Attributes.Text)
		if event.Event == "llm-task.completed" {
			final = event.Data.Attributes.Result.Content
		}
	}
	require.GreaterOrEqual(t, len(names), 3, "%v", names)
	require.Equal(t, "llm-task.completed", names[len(names)-1], "%v", names)
	for _, n := range names[:len(names)-1] {
		require.Equal(t, "llm-task.delta", n, "%v", names)
	}
	require.NotEmpty(t, final)
	require.Equal(t, final, text.String(), "the deltas make up the answer")
}
