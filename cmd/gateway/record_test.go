package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
)

// recordCatalog makes failover happen: the cheapest provider always fails.
// sandbox-broken and sandbox-quick answer at once, so their calls run as
// local activities; sandbox-steady's are heartbeating activities.
var recordCatalog = "providers:\n" + sandboxLLMProvider("sandbox-quick", "Sandbox (quick)", 0, 0, "0.00001") +
	`  - id: sandbox-broken
    name: Sandbox (always fails)
    adapter: sandbox
    settings: {latency_ms: 0, fail_rate: 1}
    services:
      transcriptions:
        features: [language_detection, timestamps]
        pricing: {unit: per_minute, amount: 0.001, currency: USD}
  - id: sandbox-steady
    name: Sandbox (steady)
    adapter: sandbox
    settings: {latency_ms: 1500, fail_rate: 0}
    services:
      transcriptions:
        features: [language_detection, diarization, timestamps]
        pricing: {unit: per_minute, amount: 0.01, currency: USD}
      llm-tasks:
        models: [sandbox-model]
        pricing: {unit: per_token, amount: 0.000002, currency: USD}
      translations:
        features: [formality]
        pricing: {unit: per_character, amount: 0.00002, currency: USD}
      video-analyses:
        features: [labels]
        pricing: {unit: per_minute, amount: 0.1, currency: USD}
`

// TestRecordHistories records the job workflow's histories for the replay
// tests in workflows/. It runs only when GATEWAY_RECORD_HISTORIES names the
// directory to write to:
//
//	GATEWAY_RECORD_HISTORIES=$PWD/workflows/testdata go test ./cmd/gateway -run TestRecordHistories
//
// Record new histories whenever the workflow changes, and keep the old ones
// (rename the new files job-vN-*.json, N one more than the newest): the
// replay tests prove that running workflows survive the change.
func TestRecordHistories(t *testing.T) {
	dir := os.Getenv("GATEWAY_RECORD_HISTORIES")
	if dir == "" {
		t.Skip("set GATEWAY_RECORD_HISTORIES to record workflow histories")
	}
	vendor := newFakeAssemblyAI(t, true)
	deepgram := newFakeDeepgram(t)
	catalog := writeCatalog(t, recordCatalog+vendor.provider()+deepgram.provider())
	temporalAddr := freeAddr(t)
	// Payload encryption off: the replay tests in workflows/ decode the
	// recorded histories with the SDK's default data converter.
	g := newGatewayEnv(t, "", temporalAddr, []string{"FAKE_ASSEMBLYAI_KEY=" + fakeAssemblyAIKey, "FAKE_DEEPGRAM_KEY=" + fakeDeepgramKey, envPayloadKeys + "=" + payloadKeysOff},
		"--providers", catalog, "--callback-url", fakeDeepgramCallbackBase)
	tc := temporalClient(t, temporalAddr)

	wav := g.url("/dev/samples/tone.wav")
	jobs := map[string]string{}

	// Fails over from sandbox-broken to sandbox-steady, then completes.
	jobs["failover-completed"] = g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"audio","url":"`+wav+`"}}}}`).Data.ID
	// A short call, run as a local activity.
	jobs["short-completed"] = g.create("llm-tasks", `{"data":{"type":"llm-task-job","attributes":{"provider":"sandbox-quick","input":{"type":"text","text":"x","prompt":"y"}}}}`).Data.ID
	// The media answers 404: the job fails at once (MEDIA_UNAVAILABLE).
	jobs["audio-unreadable"] = g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"provider":"sandbox-steady","input":{"type":"audio","url":"`+g.url("/dev/samples/missing.wav")+`"}}}}`).Data.ID
	// Its application's policy lists no provider: NO_ELIGIBLE_PROVIDER.
	jobs["no-eligible-provider"] = g.createUnroutable().Data.ID
	// Cancelled while processing.
	cancelled := g.create("llm-tasks", `{"data":{"type":"llm-task-job","attributes":{"provider":"sandbox-steady","input":{"type":"text","text":"x","prompt":"y"}}}}`).Data.ID
	jobs["cancelled"] = cancelled
	g.waitFor("llm-tasks", cancelled, 30*time.Second, func(d jobDoc) bool { return d.Data.Attributes.Status == "processing" })
	status, body, _ := g.do(http.MethodPost, "/v1/llm-tasks/"+cancelled+"/cancel", "")
	require.Equal(t, http.StatusAccepted, status, "%s", body)

	// A webhook receiver that fails the first attempt: progress signals,
	// ordered deliveries and a retry after a backoff timer.
	recv := newHookReceiver(t, http.StatusInternalServerError, http.StatusOK)
	jobs["webhooks-retried"] = g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"provider":"sandbox-steady","input":{"type":"audio","url":"`+wav+`"},"webhook":{"url":"`+recv.URL+`"}}}}`).Data.ID

	// The media stage: a video fetched, probed and its audio extracted,
	// failing over from sandbox-broken; a text file sent as audio; a video
	// analysis; a document translation with its result file.
	video := g.url("/dev/samples/speech.mp4")
	jobs["media-video-transcription"] = g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"video","url":"`+video+`","audio_track":0},"options":{"format":"srt"}}}}`).Data.ID
	jobs["media-text-as-audio"] = g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"audio","url":"`+g.url("/dev/samples/document.txt")+`"}}}}`).Data.ID
	jobs["media-video-analysis"] = g.create("video-analyses", `{"data":{"type":"video-analysis-job","attributes":{"input":{"url":"`+video+`","features":["labels"]}}}}`).Data.ID
	jobs["media-document-translation"] = g.create("translations", `{"data":{"type":"translation-job","attributes":{"input":{"type":"document","url":"`+g.url("/dev/samples/document.txt")+`","target_language":"de"}}}}`).Data.ID

	// Failed on sandbox-broken, then retried by an operator: the second run
	// keeps the routing history and fails again (attempt 2).
	retried := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"provider":"sandbox-broken","input":{"type":"audio","url":"`+wav+`"}}}}`).Data.ID
	g.waitFor("transcriptions", retried, 90*time.Second, terminal)
	code, out := g.command("jobs", "retry", retried)
	require.Equal(t, 0, code, out)
	jobs["operator-retry"] = retried
	g.waitFor("transcriptions", retried, 90*time.Second, func(d jobDoc) bool {
		return terminal(d) && len(d.Data.Attributes.RoutingHistory) == 2
	})

	// An asynchronous vendor: submitted once, then checked on timers.
	jobs["async-completed"] = g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"provider":"assemblyai","input":{"type":"audio","url":"`+wav+`"}}}}`).Data.ID

	// A vendor that posts its result back: submitted, then woken by the
	// post during its first wait.
	posted := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"provider":"deepgram","input":{"type":"audio","url":"`+wav+`"}}}}`).Data.ID
	jobs["callback-completed"] = posted
	require.Eventually(t, func() bool { n, _ := deepgram.submitted(); return n == 1 }, 60*time.Second, 100*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // into the first 2 s wait
	_, callbacks := deepgram.submitted()
	require.Equal(t, http.StatusNoContent, deepgram.post(t, callbacks[0], g.url("")))

	// Completed, then cancelled while its completed event is retried: the
	// event is still delivered.
	late := newHookReceiver(t, http.StatusInternalServerError, http.StatusInternalServerError, http.StatusInternalServerError, http.StatusOK)
	delivering := g.create("llm-tasks", `{"data":{"type":"llm-task-job","attributes":{"provider":"sandbox-quick","input":{"type":"text","text":"x","prompt":"y"},"webhook":{"url":"`+late.URL+`"}}}}`).Data.ID
	jobs["cancelled-while-delivering"] = delivering
	g.waitFor("llm-tasks", delivering, 30*time.Second, func(d jobDoc) bool { return d.Data.Attributes.Status == "completed" })
	require.NoError(t, tc.CancelWorkflow(context.Background(), delivering, ""))

	writeJobHistories(t, tc, dir, jobs)
}

// writeJobHistories waits for each job's workflow to close and writes its
// history to dir as job-<name>.json.
func writeJobHistories(t *testing.T, tc client.Client, dir string, jobs map[string]string) {
	t.Helper()
	for name, id := range jobs {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_ = tc.GetWorkflow(ctx, id, "").Get(ctx, nil)
		cancel()
		history := &historypb.History{Events: historyOf(context.Background(), t, tc, id)}
		data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(history)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "job-"+name+".json"), data, 0o644))
	}
}

// TestRecordGenerationTwoHistories records the histories of jobs stamped
// with generation 2 (--job-generation 2) for the replay tests in
// workflows/, as TestRecordHistories does; it runs only when
// GATEWAY_RECORD_HISTORIES names the directory to write to:
//
//	GATEWAY_RECORD_HISTORIES=$PWD/workflows/testdata go test ./cmd/gateway -run TestRecordGenerationTwoHistories
//
// Rename the new files job-vN-gen2-*.json, N one more than the newest.
func TestRecordGenerationTwoHistories(t *testing.T) {
	recordGenerationHistories(t, 2, map[string]string{
		// Projected once, as completed.
		"short-completed": "sandbox-quick",
		// A long call: projected as processing, then completed.
		"long-completed": "sandbox-steady",
	})
}

// TestRecordGenerationThreeHistories records the histories of jobs
// stamped with generation 3 (--job-generation 3), as
// TestRecordGenerationTwoHistories does generation 2's:
//
//	GATEWAY_RECORD_HISTORIES=$PWD/workflows/testdata go test ./cmd/gateway -run TestRecordGenerationThreeHistories
//
// Rename the new files job-vN-gen3-*.json, N one more than the newest.
func TestRecordGenerationThreeHistories(t *testing.T) {
	recordGenerationHistories(t, 3, map[string]string{
		// The call projects the completion.
		"short-completed": "sandbox-quick",
		// The short call fails: processing is projected, the call is
		// tried again as an activity, and the job fails.
		"short-failed": "sandbox-quick-broken",
	})
}

// TestRecordGenerationFourHistories records the history of a job stamped
// with generation 4 (--job-generation 4), whose result leaves out its
// documents, as TestRecordGenerationTwoHistories does generation 2's:
//
//	GATEWAY_RECORD_HISTORIES=$PWD/workflows/testdata go test ./cmd/gateway -run TestRecordGenerationFourHistories
//
// Rename the new file job-vN-gen4-*.json, N one more than the newest.
func TestRecordGenerationFourHistories(t *testing.T) {
	recordGenerationHistories(t, 4, map[string]string{"short-completed": "sandbox-quick"})
}

// recordGenerationHistories records, for jobs stamped with generation,
// one LLM task on each provider of providers (by history name), as
// job-gen<generation>-<name>.json.
func recordGenerationHistories(t *testing.T, generation int, providers map[string]string) {
	dir := os.Getenv("GATEWAY_RECORD_HISTORIES")
	if dir == "" {
		t.Skip("set GATEWAY_RECORD_HISTORIES to record workflow histories")
	}
	catalog := writeCatalog(t, recordCatalog+sandboxLLMProvider("sandbox-quick-broken", "Sandbox (quick, always fails)", 0, 1, "0.00001"))
	temporalAddr := freeAddr(t)
	g := newGatewayEnv(t, "", temporalAddr, []string{envPayloadKeys + "=" + payloadKeysOff},
		"--providers", catalog, "--job-generation", strconv.Itoa(generation))
	tc := temporalClient(t, temporalAddr)
	jobs := map[string]string{}
	for name, provider := range providers {
		jobs[fmt.Sprintf("gen%d-%s", generation, name)] = g.create("llm-tasks",
			`{"data":{"type":"llm-task-job","attributes":{"provider":"`+provider+`","input":{"type":"text","text":"x","prompt":"y"}}}}`).Data.ID
	}
	writeJobHistories(t, tc, dir, jobs)
}

// TestRecordDeletionHistories records DeletionWorkflow's histories for the
// replay tests in workflows/, as TestRecordHistories does the job
// workflow's; it runs only when GATEWAY_RECORD_HISTORIES names the
// directory to write to:
//
//	GATEWAY_RECORD_HISTORIES=$PWD/workflows/testdata go test ./cmd/gateway -run TestRecordDeletionHistories
//
// Rename the new files deletion-vN-*.json, N one more than the newest.
func TestRecordDeletionHistories(t *testing.T) {
	dir := os.Getenv("GATEWAY_RECORD_HISTORIES")
	if dir == "" {
		t.Skip("set GATEWAY_RECORD_HISTORIES to record workflow histories")
	}
	vendor := newFakeAssemblyAI(t, true)
	catalog := writeCatalog(t, recordCatalog+vendor.provider())
	temporalAddr := freeAddr(t)
	// Payload encryption off: the replay tests decode the histories with
	// the SDK's default data converter.
	g := newGatewayEnv(t, "", temporalAddr, []string{"FAKE_ASSEMBLYAI_KEY=" + fakeAssemblyAIKey, envPayloadKeys + "=" + payloadKeysOff},
		"--providers", catalog)
	tc := temporalClient(t, temporalAddr)

	// A job submitted to an asynchronous vendor, with a webhook: the
	// vendor's copy is purged by its handle and the receiver gets
	// transcription.deleted.
	recv := newHookReceiver(t, http.StatusNoContent)
	id := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"provider":"assemblyai","input":{"type":"audio","url":"`+
		g.url("/dev/samples/tone.wav")+`"},"webhook":{"url":"`+recv.URL+`"}}}}`).Data.ID
	g.waitEnded("transcriptions", id, 60*time.Second, "completed")
	recv.waitForEvent(t, "transcription.completed", 30*time.Second)
	g.deleteJob("transcriptions", id)
	recv.waitForEvent(t, "transcription.deleted", 60*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, tc.GetWorkflow(ctx, "deletion-"+id, "").Get(ctx, nil))
	history := &historypb.History{Events: historyOf(context.Background(), t, tc, "deletion-"+id)}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(history)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deletion-purged-webhook-delivered.json"), data, 0o644))
}

// TestRecordOutageAndBudgetHistories records the histories of waiting out
// an outage and of budget reservations for the replay tests in workflows/
// (job-v13-*.json); it runs only when GATEWAY_RECORD_HISTORIES names the
// directory to write to:
//
//	GATEWAY_RECORD_HISTORIES=$PWD/workflows/testdata go test ./cmd/gateway -run TestRecordOutageAndBudgetHistories
func TestRecordOutageAndBudgetHistories(t *testing.T) {
	dir := os.Getenv("GATEWAY_RECORD_HISTORIES")
	if dir == "" {
		t.Skip("set GATEWAY_RECORD_HISTORIES to record workflow histories")
	}
	chat := newFakeChatVendor(t)
	chat.down.Store(true)
	catalog := writeCatalog(t, recordCatalog+`  - id: vendor-llm
    name: Vendor (chat)
    adapter: openai
    settings: {base_url: "`+chat.URL+`", model: chat-1}
    circuit_breaker: {minimum_calls: 2, window_seconds: 60, failure_rate_percent: 50, open_seconds: 3, max_open_seconds: 3, half_open_probes: 1, close_after_successes: 1}
    services:
      llm-tasks:
        models: [chat-1]
        pricing: {unit: per_token, amount: 0.000001, currency: USD}
`)
	temporalAddr := freeAddr(t)
	g := newGatewayEnv(t, "", temporalAddr, []string{envPayloadKeys + "=" + payloadKeysOff}, "--providers", catalog)
	tc := temporalClient(t, temporalAddr)
	jobs := map[string]string{}
	create := func(resource, application, body string) string {
		t.Helper()
		status, answer, _ := g.do(http.MethodPost, "/v1/"+resource, body, "X-Application", application)
		require.Equal(t, http.StatusAccepted, status, "%s", answer)
		var doc jobDoc
		require.NoError(t, json.Unmarshal(answer, &doc))
		return doc.Data.ID
	}

	// Its application's policy lists vendor-llm alone, which is down: the
	// job fails on it, waits for its open breaker, and completes on a probe
	// once it is back.
	auth := "Bearer " + g.mint("acme", "policies:write")
	status, body, _ := g.do(http.MethodPut, "/v1/services/llm-tasks/applications/outage/policy",
		`{"data":{"type":"policy","attributes":{"name":"outage","routing_strategy":"price","providers":[{"provider_id":"vendor-llm","priority":1}]}}}`,
		"Authorization", auth)
	require.Equal(t, http.StatusOK, status, "%s", body)
	waited := create("llm-tasks", "outage", llmTaskBody)
	jobs["outage-waited"] = waited
	g.waitFor("llm-tasks", waited, 60*time.Second, func(jobDoc) bool {
		_, body, _ := g.do(http.MethodGet, "/v1/llm-tasks/"+waited, "")
		return strings.Contains(string(body), `"waiting"`)
	})
	chat.down.Store(false)

	// Budgets per application: "metered" has room, "capped" has less than
	// the sample's duration.
	out, err := exec.Command(gatewayBin, "token", "--data-dir", g.dataDir, "--tenant", "ops", "--sub", "finance", "--super-admin").Output()
	require.NoError(t, err)
	status, body, _ = g.do(http.MethodPost, "/v1/tenants", `{"data":{"id":"acme","type":"tenant","attributes":{"budgets":[
		{"id":"metered","application":"metered","period":"day","limit":{"quantity":10,"unit":"minute"},"thresholds":[50]},
		{"id":"capped","application":"capped","period":"day","limit":{"quantity":0.001,"unit":"minute"}}]}}}`,
		"Authorization", "Bearer "+strings.TrimSpace(string(out)))
	require.Equal(t, http.StatusCreated, status, "%s", body)
	wav := `{"data":{"type":"transcription-job","attributes":{"provider":"sandbox-steady","input":{"type":"audio","url":"` + g.url("/dev/samples/tone.wav") + `"}}}}`
	jobs["budget-reserved-completed"] = create("transcriptions", "metered", wav)
	jobs["budget-exceeded"] = create("transcriptions", "capped", wav)

	for name, id := range jobs {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		require.NoError(t, tc.GetWorkflow(ctx, id, "").Get(ctx, nil), name)
		cancel()
		history := &historypb.History{Events: historyOf(context.Background(), t, tc, id)}
		data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(history)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "job-v13-"+name+".json"), data, 0o644))
	}
	status, body, _ = g.do(http.MethodGet, "/v1/transcriptions/"+jobs["budget-exceeded"], "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), "BUDGET_EXCEEDED")
	require.Contains(t, string(g.get("llm-tasks", waited).Data.Attributes.Status), "completed")
}

// TestRecordBatchFileHistories records a file batch's reading for the
// replay tests in workflows/ (batchfile-v1-*.json); it runs only when
// GATEWAY_RECORD_HISTORIES names the directory to write to:
//
//	GATEWAY_RECORD_HISTORIES=$PWD/workflows/testdata go test ./cmd/gateway -run TestRecordBatchFileHistories
func TestRecordBatchFileHistories(t *testing.T) {
	dir := os.Getenv("GATEWAY_RECORD_HISTORIES")
	if dir == "" {
		t.Skip("set GATEWAY_RECORD_HISTORIES to record workflow histories")
	}
	temporalAddr := freeAddr(t)
	g := newGatewayEnv(t, "", temporalAddr, []string{envPayloadKeys + "=" + payloadKeysOff}, "--providers", writeCatalog(t, recordCatalog))
	tc := temporalClient(t, temporalAddr)
	file := `{"custom_id": "a", "type": "llm-task-job", "attributes": {"input": {"type": "text", "text": "Hi", "prompt": "Summarise."}}}` + "\n{\n"
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(file)) }))
	defer files.Close()
	status, raw, _ := g.do(http.MethodPost, "/v1/batches", `{"data":{"type":"batch","attributes":{"input_file_url":"`+files.URL+`/b.jsonl"}}}`,
		"Idempotency-Key", "record-file")
	require.Equal(t, http.StatusAccepted, status, string(raw))
	var created batchState
	require.NoError(t, json.Unmarshal(raw, &created))
	id := "batch-file-" + created.Data.ID

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, tc.GetWorkflow(ctx, id, "").Get(ctx, nil))
	history := &historypb.History{Events: historyOf(context.Background(), t, tc, id)}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(history)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "batchfile-v1-read.json"), data, 0o644))
}
