package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// setupFiles is setup with a directory blob store, which keeps the
// OpenAI-compatible files and batches (docs/openai.md, Files and
// batches).
func setupFiles(t *testing.T) *bundle {
	t.Helper()
	files := openTestFiles(t)
	return setupConfigured(t, storetest.SQLite, func(cfg *api.Config) { cfg.Files = files })
}

// chatLine is a line of a batch's input file asking model-a question.
func chatLine(customID, question string) string {
	line, _ := json.Marshal(map[string]any{"custom_id": customID, "method": "POST", "url": "/v1/chat/completions",
		"body": map[string]any{"model": "model-a", "messages": []map[string]string{{"role": "user", "content": question}}}})
	return string(line)
}

// uploadBatchFile uploads lines as a file of purpose batch.
func uploadBatchFile(t *testing.T, client *openai.Client, lines ...string) *openai.FileObject {
	t.Helper()
	f, err := client.Files.New(context.Background(), openai.FileNewParams{
		File:    openai.File(strings.NewReader(strings.Join(lines, "\n")+"\n"), "batch.jsonl", "application/jsonl"),
		Purpose: openai.FilePurposeBatch,
	})
	require.NoError(t, err)
	return f
}

func newBatch(t *testing.T, client *openai.Client, fileID string) *openai.Batch {
	t.Helper()
	batch, err := client.Batches.New(context.Background(), openai.BatchNewParams{InputFileID: fileID,
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	require.NoError(t, err)
	return batch
}

// finishBatchJobs records each job of gateway batch id, once all want of
// them started, as its workflow would on finishing: finish says how.
func (b *bundle) finishBatchJobs(t *testing.T, id string, want int, finish func(job *jobs.Record)) {
	t.Helper()
	require.Eventually(t, func() bool { return len(b.started()) == want }, 5*time.Second, 10*time.Millisecond, "the dispatcher starts them")
	ctx := context.Background()
	page, _, err := b.store.Jobs.ListJobs(ctx, store.JobFilter{Batch: id}, 0, 100)
	require.NoError(t, err)
	require.Len(t, page, want)
	for _, listed := range page {
		job, err := b.store.Jobs.GetJob(ctx, listed.ID)
		require.NoError(t, err)
		completed := time.Now()
		job.ProcessedAt, job.CompletedAt, job.Revision = &completed, &completed, job.Revision+1
		finish(job)
		require.NoError(t, b.store.Jobs.SaveJob(ctx, job))
	}
}

// answered completes job with an answer naming its custom_id.
func answered(job *jobs.Record) {
	result, _ := json.Marshal(jobs.LLMTaskResult{Content: "answer to " + job.CustomID, FinishReason: "stop"})
	job.Status, job.Provider, job.Result = jobs.StatusCompleted, "alpha", string(result)
}

// batchFileLine is a line of a batch's output or error file.
type batchFileLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// fileLines reads a file's content through the SDK, by custom_id.
func fileLines(t *testing.T, client *openai.Client, id string) map[string]batchFileLine {
	t.Helper()
	resp, err := client.Files.Content(context.Background(), id)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	out := map[string]batchFileLine{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var line batchFileLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		out[line.CustomID] = line
	}
	require.NoError(t, sc.Err())
	return out
}

func TestOpenAIBatchThroughFiles(t *testing.T) {
	t.Parallel()
	b := setupFiles(t)
	ctx := context.Background()
	token := b.token(t, "llm-tasks:write", "llm-tasks:read")
	client := b.openAIClient(token)

	// The three lines an SDK user writes: upload, create, read.
	f := uploadBatchFile(t, client, chatLine("q-1", "One?"), chatLine("q-2", "Two?"), chatLine("q-3", "Three?"))
	require.True(t, strings.HasPrefix(f.ID, "file-"), f.ID)
	require.Equal(t, "batch.jsonl", f.Filename)
	require.Equal(t, openai.FileObjectPurposeBatch, f.Purpose)
	require.Positive(t, f.Bytes)

	batch, err := client.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID,
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h,
		Metadata: shared.Metadata{"run": "nightly"}})
	require.NoError(t, err)
	require.Equal(t, openai.BatchStatusInProgress, batch.Status)
	require.Equal(t, f.ID, batch.InputFileID)
	require.Equal(t, "/v1/chat/completions", batch.Endpoint)
	require.Equal(t, "24h", batch.CompletionWindow)
	require.Equal(t, "nightly", batch.Metadata["run"])
	require.EqualValues(t, 3, batch.RequestCounts.Total)
	require.Zero(t, batch.RequestCounts.Completed)
	require.Empty(t, batch.OutputFileID)

	// The gateway's own batch and jobs are the same.
	id, ok := strings.CutPrefix(batch.ID, "batch_")
	require.True(t, ok, batch.ID)
	r := b.do(t, "GET", "/v1/batches/"+id, token, nil)
	r.requireStatus(t, http.StatusOK)
	r = b.do(t, "GET", "/v1/jobs?filter[batch]="+id, token, nil)
	r.requireStatus(t, http.StatusOK)
	var listed struct {
		Data []json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &listed))
	require.Len(t, listed.Data, 3)

	b.finishBatchJobs(t, id, 3, answered)

	batch, err = client.Batches.Get(ctx, batch.ID)
	require.NoError(t, err)
	require.Equal(t, openai.BatchStatusCompleted, batch.Status)
	require.EqualValues(t, 3, batch.RequestCounts.Total)
	require.EqualValues(t, 3, batch.RequestCounts.Completed)
	require.Zero(t, batch.RequestCounts.Failed)
	require.NotZero(t, batch.CompletedAt)
	require.NotEmpty(t, batch.OutputFileID)
	require.Empty(t, batch.ErrorFileID)

	out, err := client.Files.Get(ctx, batch.OutputFileID)
	require.NoError(t, err)
	require.Equal(t, openai.FileObjectPurposeBatchOutput, out.Purpose)
	lines := fileLines(t, client, batch.OutputFileID)
	require.Len(t, lines, 3)
	for _, customID := range []string{"q-1", "q-2", "q-3"} {
		line := lines[customID]
		require.NotNil(t, line.Response, customID)
		require.Nil(t, line.Error)
		require.Equal(t, http.StatusOK, line.Response.StatusCode)
		var completion openai.ChatCompletion
		require.NoError(t, json.Unmarshal(line.Response.Body, &completion))
		require.Equal(t, "model-a", completion.Model)
		require.Equal(t, "answer to "+customID, completion.Choices[0].Message.Content)
		require.Equal(t, "chatcmpl-"+line.Response.RequestID, completion.ID)
	}

	page, err := client.Batches.List(ctx, openai.BatchListParams{})
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	require.Equal(t, batch.ID, page.Data[0].ID)
	files, err := client.Files.List(ctx, openai.FileListParams{})
	require.NoError(t, err)
	require.Len(t, files.Data, 1)
	require.Equal(t, f.ID, files.Data[0].ID)
}

func TestOpenAIBatchErrorFile(t *testing.T) {
	t.Parallel()
	b := setupFiles(t)
	ctx := context.Background()
	client := b.openAIClient(b.token(t, "llm-tasks:write", "llm-tasks:read"))
	tools := `{"custom_id":"tools","method":"POST","url":"/v1/chat/completions","body":{"model":"model-a","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}}`
	f := uploadBatchFile(t, client, chatLine("good", "Hi?"), tools, chatLine("fails", "Hi?"))
	batch := newBatch(t, client, f.ID)
	require.EqualValues(t, 3, batch.RequestCounts.Total)
	require.EqualValues(t, 1, batch.RequestCounts.Failed, "the refused line")

	b.finishBatchJobs(t, strings.TrimPrefix(batch.ID, "batch_"), 2, func(job *jobs.Record) {
		if job.CustomID == "good" {
			answered(job)
			return
		}
		job.Status, job.ErrorCode, job.ErrorMessage = jobs.StatusFailed, jobs.CodeProvidersExhausted, "every provider failed"
	})
	batch, err := client.Batches.Get(ctx, batch.ID)
	require.NoError(t, err)
	require.Equal(t, openai.BatchStatusCompleted, batch.Status)
	require.EqualValues(t, 1, batch.RequestCounts.Completed)
	require.EqualValues(t, 2, batch.RequestCounts.Failed)
	require.Len(t, fileLines(t, client, batch.OutputFileID), 1)

	errs := fileLines(t, client, batch.ErrorFileID)
	require.Len(t, errs, 2)
	var body struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	refused := errs["tools"]
	require.Equal(t, http.StatusBadRequest, refused.Response.StatusCode)
	require.NoError(t, json.Unmarshal(refused.Response.Body, &body))
	require.Equal(t, "invalid_request_error", body.Error.Type)
	require.Equal(t, "tools", *body.Error.Param)
	require.Equal(t, "unsupported_parameter", *body.Error.Code)

	failed := errs["fails"]
	require.Equal(t, http.StatusBadGateway, failed.Response.StatusCode)
	require.NoError(t, json.Unmarshal(failed.Response.Body, &body))
	require.Equal(t, "server_error", body.Error.Type)
	require.Equal(t, "providers_exhausted", *body.Error.Code)
	require.NotEmpty(t, failed.Response.RequestID)
}

func TestOpenAIBatchCancel(t *testing.T) {
	t.Parallel()
	b := setupFiles(t)
	ctx := context.Background()
	client := b.openAIClient(b.token(t, "llm-tasks:write", "llm-tasks:read"))
	batch := newBatch(t, client, uploadBatchFile(t, client, chatLine("a", "A?"), chatLine("b", "B?")).ID)
	require.Eventually(t, func() bool { return len(b.started()) == 2 }, 5*time.Second, 10*time.Millisecond)

	cancelled, err := client.Batches.Cancel(ctx, batch.ID)
	require.NoError(t, err)
	require.Contains(t, []openai.BatchStatus{openai.BatchStatusCancelling, openai.BatchStatusCancelled}, cancelled.Status)
	require.NotZero(t, cancelled.CancellingAt)
	require.Eventually(t, func() bool {
		got, err := client.Batches.Get(ctx, batch.ID)
		require.NoError(t, err)
		cancelled = got
		return got.Status == openai.BatchStatusCancelled
	}, 5*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 2, cancelled.RequestCounts.Failed)
	require.Empty(t, cancelled.OutputFileID)
	for _, line := range fileLines(t, client, cancelled.ErrorFileID) {
		require.Nil(t, line.Response)
		require.Equal(t, "batch_cancelled", line.Error.Code)
	}
}

func TestOpenAIFilesAndBatchesRefusals(t *testing.T) {
	t.Parallel()
	b := setupFiles(t)
	ctx := context.Background()
	client := b.openAIClient(b.token(t, "llm-tasks:write", "llm-tasks:read"))
	f := uploadBatchFile(t, client, chatLine("a", "A?"))

	_, err := client.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader("{}\n"), "x.jsonl", "application/jsonl"),
		Purpose: openai.FilePurposeAssistants})
	apiErr := openAIErrorOf(t, err)
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, "purpose", apiErr.Param)

	_, err = client.Files.Get(ctx, "file-0123456789abcdef0123456789abcdef")
	require.Equal(t, http.StatusNotFound, openAIErrorOf(t, err).StatusCode)
	_, err = client.Batches.Get(ctx, "batch_0190aaaa-0000-7000-8000-000000000000")
	require.Equal(t, http.StatusNotFound, openAIErrorOf(t, err).StatusCode)
	_, err = client.Batches.New(ctx, openai.BatchNewParams{InputFileID: "file-nope",
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	apiErr = openAIErrorOf(t, err)
	require.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	require.Equal(t, "input_file_id", apiErr.Param)

	_, err = client.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID,
		Endpoint: openai.BatchNewParamsEndpointV1Embeddings, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	apiErr = openAIErrorOf(t, err)
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, "endpoint", apiErr.Param)

	notJSONL := uploadBatchFile(t, client, "a,b,c")
	_, err = client.Batches.New(ctx, openai.BatchNewParams{InputFileID: notJSONL.ID,
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	apiErr = openAIErrorOf(t, err)
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, "input_file_id", apiErr.Param)
	require.Contains(t, apiErr.Message, "JSONL")

	// Another tenant sees neither the file nor the batch.
	batch := newBatch(t, client, f.ID)
	other := b.openAIClient(b.tokenFor(t, "globex", "bob", "llm-tasks:write", "llm-tasks:read"))
	_, err = other.Files.Get(ctx, f.ID)
	require.Equal(t, http.StatusNotFound, openAIErrorOf(t, err).StatusCode)
	_, err = other.Files.Content(ctx, f.ID)
	require.Equal(t, http.StatusNotFound, openAIErrorOf(t, err).StatusCode)
	_, err = other.Batches.Get(ctx, batch.ID)
	require.Equal(t, http.StatusNotFound, openAIErrorOf(t, err).StatusCode)
	_, err = other.Batches.Cancel(ctx, batch.ID)
	require.Equal(t, http.StatusNotFound, openAIErrorOf(t, err).StatusCode)

	// Deleted, the file is gone; its content was what was uploaded.
	resp, err := client.Files.Content(ctx, f.ID)
	require.NoError(t, err)
	content, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, chatLine("a", "A?")+"\n", string(content))
	deleted, err := client.Files.Delete(ctx, f.ID)
	require.NoError(t, err)
	require.True(t, deleted.Deleted)
	require.Equal(t, f.ID, deleted.ID)
	_, err = client.Files.Get(ctx, f.ID)
	require.Equal(t, http.StatusNotFound, openAIErrorOf(t, err).StatusCode)
}

func TestOpenAIFilesWithoutAFileStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	client := b.openAIClient(b.token(t, "llm-tasks:write", "llm-tasks:read"))
	_, err := client.Files.New(context.Background(), openai.FileNewParams{
		File: openai.File(strings.NewReader(chatLine("a", "A?")), "batch.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	apiErr := openAIErrorOf(t, err)
	require.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
	require.Equal(t, "server_error", apiErr.Type)
	_, err = client.Batches.Get(context.Background(), "batch_x")
	require.Equal(t, http.StatusServiceUnavailable, openAIErrorOf(t, err).StatusCode)
	require.NotEmpty(t, fmt.Sprint(err))
}

func TestOpenAIBatchesListAndIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := setupFiles(t)
	ctx := context.Background()
	client := b.openAIClient(b.token(t, "llm-tasks:write", "llm-tasks:read"))
	f := uploadBatchFile(t, client, chatLine("a", "A?"))
	params := openai.BatchNewParams{InputFileID: f.ID,
		Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: openai.BatchNewParamsCompletionWindow24h}

	// With an Idempotency-Key, the same request again is the same batch.
	first, err := client.Batches.New(ctx, params, option.WithHeader("Idempotency-Key", "nightly-1"))
	require.NoError(t, err)
	again, err := client.Batches.New(ctx, params, option.WithHeader("Idempotency-Key", "nightly-1"))
	require.NoError(t, err)
	require.Equal(t, first.ID, again.ID)
	// Without one, each request is a batch.
	second := newBatch(t, client, f.ID)
	// A batch whose gateway batch is gone (deleted, or never recorded)
	// is left out, its page filled from the next.
	require.NoError(t, b.store.Batches.PutOpenAIObject(ctx, store.OpenAIObject{Tenant: tenantA, Kind: store.OpenAIBatch,
		ID: "0190aaaa-0000-7000-8000-000000000001", Document: `{"endpoint":"/v1/chat/completions"}`}))
	third := newBatch(t, client, f.ID)
	for i := 2; i <= 4; i++ {
		require.NoError(t, b.store.Batches.PutOpenAIObject(ctx, store.OpenAIObject{Tenant: tenantA, Kind: store.OpenAIBatch,
			ID: fmt.Sprintf("0190aaaa-0000-7000-8000-00000000000%d", i), Document: `{"endpoint":"/v1/chat/completions"}`}))
	}

	page, err := client.Batches.List(ctx, openai.BatchListParams{Limit: openai.Int(2)})
	require.NoError(t, err)
	require.Equal(t, []string{third.ID, second.ID}, []string{page.Data[0].ID, page.Data[1].ID}, "newest first")
	require.True(t, page.HasMore)
	page, err = page.GetNextPage()
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	require.Equal(t, first.ID, page.Data[0].ID)
	require.False(t, page.HasMore)

	_, err = client.Batches.List(ctx, openai.BatchListParams{Limit: openai.Int(101)})
	require.Equal(t, "limit", openAIErrorOf(t, err).Param)
}

// Two API servers on one database and one file store, as two replicas
// are, uploading a tenant's files at the same time: each lists them all
// (docs/openai.md, Files and batches).
func TestOpenAIFilesListedAcrossReplicas(t *testing.T) {
	t.Parallel()
	files := openTestFiles(t)
	databaseURL := storetest.FreshPostgresURL(t)
	withFiles := func(cfg *api.Config) { cfg.Files = files }
	replicas := []*bundle{
		setupConfigured(t, func(t testing.TB) *store.Store { return storetest.Open(t, databaseURL) }, withFiles),
		setupConfigured(t, func(t testing.TB) *store.Store { return storetest.Open(t, databaseURL) }, withFiles),
	}
	clients := make([]*openai.Client, len(replicas))
	for i, r := range replicas {
		clients[i] = r.openAIClient(r.token(t, "llm-tasks:write", "llm-tasks:read"))
	}

	const each = 6
	ids := make(chan string, each*len(clients))
	var wg sync.WaitGroup
	for _, client := range clients {
		for i := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, err := client.Files.New(context.Background(), openai.FileNewParams{
					File:    openai.File(strings.NewReader(chatLine(fmt.Sprint("q-", i), "Q?")+"\n"), "batch.jsonl", "application/jsonl"),
					Purpose: openai.FilePurposeBatch,
				})
				if !assert.NoError(t, err) {
					return
				}
				ids <- f.ID
			}()
		}
	}
	wg.Wait()
	close(ids)
	var want []string
	for id := range ids {
		want = append(want, id)
	}
	require.Len(t, want, each*len(clients))

	for _, client := range clients {
		// Paged three at a time through the SDK's cursor (after).
		var listed []string
		for page, err := client.Files.List(context.Background(), openai.FileListParams{Limit: openai.Int(3)}); ; page, err = page.GetNextPage() {
			require.NoError(t, err)
			if page == nil || len(page.Data) == 0 {
				break
			}
			for _, f := range page.Data {
				listed = append(listed, f.ID)
			}
		}
		require.ElementsMatch(t, want, listed, "every replica's uploads, each once")
	}

	// A file deleted through one replica is gone from the other's listing.
	_, err := clients[0].Files.Delete(context.Background(), want[0])
	require.NoError(t, err)
	page, err := clients[1].Files.List(context.Background(), openai.FileListParams{})
	require.NoError(t, err)
	require.Len(t, page.Data, len(want)-1)
	_, err = clients[1].Files.Content(context.Background(), want[0])
	require.Equal(t, http.StatusNotFound, openAIErrorOf(t, err).StatusCode)
}

// An upload's body may take longer than the server's read timeout to
// arrive (uploadReadTimeout): a batch file that trickles in over three
// read timeouts is stored.
func TestOpenAIUploadOutlastsTheReadTimeout(t *testing.T) {
	t.Parallel()
	b := setupFiles(t)
	const readTimeout = 300 * time.Millisecond
	addr := serveWith(t, b, api.ServerTimeouts{ReadHeader: readTimeout, Read: readTimeout, Write: time.Minute, Idle: time.Minute})

	var body bytes.Buffer
	form := multipart.NewWriter(&body)
	require.NoError(t, form.WriteField("purpose", "batch"))
	part, err := form.CreateFormFile("file", "batch.jsonl")
	require.NoError(t, err)
	_, err = io.WriteString(part, chatLine("q-1", "One?")+"\n")
	require.NoError(t, err)
	require.NoError(t, form.Close())

	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "POST %s/files HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		api.OpenAIPath, addr, b.token(t, "llm-tasks:write"), form.FormDataContentType(), body.Len())
	require.NoError(t, err)
	raw := body.Bytes()
	for i, third := 0, len(raw)/3; i < 3; i++ {
		time.Sleep(readTimeout)
		end := (i + 1) * third
		if i == 2 {
			end = len(raw)
		}
		_, err = conn.Write(raw[i*third : end])
		require.NoError(t, err, "the server closed the upload")
	}
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	answer, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer)
	require.Contains(t, string(answer), `"purpose":"batch"`)
}
