package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
)

// openAINodeVersion is the official openai npm package the test installs
// in its own folder (docs/openai.md).
const openAINodeVersion = "7.60.0"

// openAINodeScript calls gateway dev through the official openai npm
// package with only the base URL and the key changed, and prints what it
// got as JSON.
const openAINodeScript = `
import OpenAI from "openai";
import fs from "node:fs";

const [baseURL, apiKey, audio] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const out = {};

const models = await client.models.list();
out.models = models.data.map((m) => m.id);

const { data: chat, response } = await client.chat.completions
  .create({ model: "auto", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello." }] })
  .withResponse();
out.chat = { id: chat.id, content: chat.choices[0].message.content, finish: chat.choices[0].finish_reason,
  job: response.headers.get("x-gateway-job-id") };

const { data: stream, response: streamed } = await client.chat.completions
  .create({ model: "auto", messages: [{ role: "user", content: "Say hello to the whole team." }], stream: true,
    stream_options: { include_usage: true } })
  .withResponse();
out.stream = { pieces: 0, content: "", job: streamed.headers.get("x-gateway-job-id") };
for await (const chunk of stream) {
  const piece = chunk.choices[0]?.delta?.content;
  if (piece) {
    out.stream.pieces++;
    out.stream.content += piece;
  }
  if (chunk.choices[0]?.finish_reason) out.stream.finish = chunk.choices[0].finish_reason;
  if (chunk.usage) out.stream.totalTokens = chunk.usage.total_tokens;
}

const lines = ["one", "two", "three"].map((q) => JSON.stringify({ custom_id: "q-" + q, method: "POST",
  url: "/v1/chat/completions", body: { model: "auto", messages: [{ role: "user", content: "Count to " + q + "." }] } }));
const file = await client.files.create({ file: await OpenAI.toFile(Buffer.from(lines.join("\n") + "\n"), "batch.jsonl"), purpose: "batch" });
let batch = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
for (let i = 0; i < 240 && !["completed", "failed", "cancelled"].includes(batch.status); i++) {
  await new Promise((r) => setTimeout(r, 250));
  batch = await client.batches.retrieve(batch.id);
}
const output = await (await client.files.content(batch.output_file_id)).text();
out.batch = { status: batch.status, completed: batch.request_counts.completed,
  answers: output.trim().split("\n").map((l) => JSON.parse(l)).map((l) => ({ custom_id: l.custom_id,
    status: l.response.status_code, job: l.response.body.id.replace("chatcmpl-", ""), content: l.response.body.choices[0].message.content })) };

const transcription = await client.audio.transcriptions.create({ file: fs.createReadStream(audio), model: "auto" });
out.transcription = { text: transcription.text };

try {
  await new OpenAI({ baseURL, apiKey: "gwk_made_up", maxRetries: 0 }).models.list();
} catch (e) {
  out.badKey = { auth: e instanceof OpenAI.AuthenticationError, status: e.status };
}
try {
  await client.chat.completions.create({ model: "auto", n: 2, messages: [{ role: "user", content: "Hi" }] });
} catch (e) {
  out.badInput = { badRequest: e instanceof OpenAI.BadRequestError, status: e.status, param: e.param };
}
console.log(JSON.stringify(out));
`

// TestOpenAINodeSDK: the official openai npm package, pointed at gateway
// dev with its base URL and a gateway API key, lists the models, completes
// a chat and a transcription upload, each a job of the key's tenant, and
// raises its own error classes for a bad key and bad input (docs/openai.md).
func TestOpenAINodeSDK(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t) // the transcription probes its upload
	node, npm := requireNode(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"openai-sdk-test","private":true,"type":"module"}`), 0o644))
	install := exec.Command(npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "openai@"+openAINodeVersion)
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install openai@%s: %v\n%s", openAINodeVersion, err, out)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "calls.mjs"), []byte(openAINodeScript), 0o644))

	g := newGateway(t, "")
	raw, err := os.ReadFile(filepath.Join(g.dataDir, "dev-api-key"))
	require.NoError(t, err)
	key := strings.TrimSpace(string(raw))
	resp, err := http.Get(g.url("/dev/samples/tone.wav"))
	require.NoError(t, err)
	audio, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	wav := filepath.Join(dir, "tone.wav")
	require.NoError(t, os.WriteFile(wav, audio, 0o644))

	run := exec.Command(node, "calls.mjs", g.url("/openai/v1"), key, wav)
	run.Dir = dir
	out, err := run.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("node: %v\n%s", err, exit.Stderr)
	}
	require.NoError(t, err)
	var got struct {
		Models []string `json:"models"`
		Chat   struct {
			ID, Content, Finish, Job string
		} `json:"chat"`
		Stream struct {
			Pieces      int    `json:"pieces"`
			Content     string `json:"content"`
			Job         string `json:"job"`
			Finish      string `json:"finish"`
			TotalTokens int    `json:"totalTokens"`
		} `json:"stream"`
		Batch struct {
			Status    string `json:"status"`
			Completed int    `json:"completed"`
			Answers   []struct {
				CustomID string `json:"custom_id"`
				Status   int    `json:"status"`
				Job      string `json:"job"`
				Content  string `json:"content"`
			} `json:"answers"`
		} `json:"batch"`
		Transcription struct{ Text string } `json:"transcription"`
		BadKey        struct {
			Auth   bool `json:"auth"`
			Status int  `json:"status"`
		} `json:"badKey"`
		BadInput struct {
			BadRequest bool   `json:"badRequest"`
			Status     int    `json:"status"`
			Param      string `json:"param"`
		} `json:"badInput"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Contains(t, got.Models, "auto")
	require.NotEmpty(t, got.Chat.Content)
	require.Equal(t, "stop", got.Chat.Finish)
	require.Equal(t, "chatcmpl-"+got.Chat.Job, got.Chat.ID)
	require.NotEmpty(t, got.Transcription.Text)
	require.True(t, got.BadKey.Auth, "a bad key raises AuthenticationError")
	require.Equal(t, http.StatusUnauthorized, got.BadKey.Status)
	require.True(t, got.BadInput.BadRequest, "n=2 raises BadRequestError")
	require.Equal(t, "n", got.BadInput.Param)

	require.Greater(t, got.Stream.Pieces, 1, "the streamed answer came in pieces")
	require.NotEmpty(t, got.Stream.Content)
	require.Equal(t, "stop", got.Stream.Finish)
	require.Positive(t, got.Stream.TotalTokens, "usage in the last chunk")
	require.Equal(t, "completed", got.Batch.Status)
	require.Equal(t, 3, got.Batch.Completed)
	require.Len(t, got.Batch.Answers, 3)
	ids := []string{got.Chat.Job, got.Stream.Job}
	for _, a := range got.Batch.Answers {
		require.Equal(t, http.StatusOK, a.Status, a.CustomID)
		require.NotEmpty(t, a.Content, a.CustomID)
		ids = append(ids, a.Job)
	}

	// Each chat is a completed job of the key's tenant, in GET /v1/jobs
	// and in Temporal.
	for _, id := range ids {
		requireCompletedJob(t, g, key, id)
	}
}
