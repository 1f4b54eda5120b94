package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/batches"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/netguard"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
	"github.com/ai-job-gateway/gateway/workflows"
)

// serveFile serves a batch file at /batch.jsonl.
func serveFile(t *testing.T, file string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/batch.jsonl" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(file))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/batch.jsonl"
}

// jsonLines is items as a JSONL file.
func jsonLines(t *testing.T, items []map[string]any) string {
	t.Helper()
	var sb strings.Builder
	for _, item := range items {
		sb.Write(mustMarshal(t, item))
		sb.WriteByte('\n')
	}
	return sb.String()
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}

func fileBatchBody(url any, attrs ...any) map[string]any {
	body := batchBody(nil, attrs...)
	attributes := body["data"].(map[string]any)["attributes"].(map[string]any)
	delete(attributes, "items")
	attributes["input_file_url"] = url
	return body
}

// flakyOps fails the recording of a file's items once, after failAfter
// chunks were recorded.
type flakyOps struct {
	batches.FileOps
	failAfter int
}

func (f *flakyOps) RecordFileItems(ctx context.Context, plan *jobops.BatchPlan, from, to int, services []string, refused []store.BatchRefusal) (bool, []string, error) {
	if f.failAfter == 0 {
		f.failAfter = -1
		return false, nil, errors.New("the database went away")
	}
	f.failAfter--
	return f.FileOps.RecordFileItems(ctx, plan, from, to, services, refused)
}

// readFile plays the workers' batch file workflow.
func (b *bundle) readFile(t *testing.T, id string, ops batches.FileOps) error {
	t.Helper()
	if ops == nil {
		ops = b.ops
	}
	reader := &batches.FileReader{Ops: ops, Store: b.store.Batches, Client: netguard.NewMediaClient(true, 10*time.Second), ScratchDir: t.TempDir()}
	return reader.ReadBatchFile(context.Background(), id, func(int) {})
}

func errorLines(t *testing.T, b *bundle, token, id string) []map[string]any {
	t.Helper()
	return resultLines(t, b.do(t, "GET", "/v1/batches/"+id+"/errors", token, nil))
}

func TestBatchFileIsReadInChunksAndResumes(t *testing.T) {
	onEachStore(t, func(t *testing.T, name string, b *bundle) {
		token := b.token(t, allScopes()...)
		items := make([]map[string]any, 2500)
		for i := range items {
			items[i] = batchItem(t, fmt.Sprintf("doc-%04d", i), "llm-tasks")
		}
		items[1200] = batchItem(t, "no-prompt", "llm-tasks", del("/data/attributes/input/prompt"))
		items[2400]["custom_id"] = "doc-0007"
		lines := strings.Split(strings.TrimSuffix(jsonLines(t, items), "\n"), "\n")
		// A blank line after item 10, and item 20 cut short.
		lines = append(lines[:11], append([]string{"  "}, lines[11:]...)...)
		lines[21] = lines[21][:30]
		url := serveFile(t, strings.Join(lines, "\n")+"\n")

		began := time.Now()
		r := b.do(t, "POST", "/v1/batches", token, fileBatchBody(url), "Idempotency-Key", "file-1")
		r.requireStatus(t, http.StatusAccepted)
		doc := decodeBatch(t, r)
		id := doc.Data.ID
		require.Equal(t, "/v1/batches/"+id, r.Header.Get("Location"))
		require.Equal(t, "validating", doc.Data.Attributes.Status)
		require.Equal(t, 0, doc.Data.Attributes.Counts["total"])
		var started []string
		for _, s := range b.started() {
			if s.Workflow == workflows.BatchFileWorkflowName {
				started = append(started, s.Options.ID)
			}
		}
		require.Equal(t, []string{workflows.BatchFileWorkflowID(id)}, started)

		// The second chunk fails to record: the first stands, and the next
		// reading goes on from there.
		require.Error(t, b.readFile(t, id, &flakyOps{FileOps: b.ops, failAfter: 1}))
		doc = decodeBatch(t, b.do(t, "GET", "/v1/batches/"+id, token, nil))
		require.Equal(t, "validating", doc.Data.Attributes.Status)
		require.Equal(t, 1000, doc.Data.Attributes.Counts["read"])
		require.Equal(t, 999, doc.Data.Attributes.Counts["total"], "items 1,000 to 2,499 wait")
		require.NoError(t, b.readFile(t, id, nil))
		t.Logf("%s: 2,500 file items read in %s", name, time.Since(began))

		doc = decodeBatch(t, b.do(t, "GET", "/v1/batches/"+id, token, nil))
		attrs := doc.Data.Attributes
		require.Equal(t, "in_progress", attrs.Status)
		require.Equal(t, 2497, attrs.Counts["total"])
		require.Equal(t, 3, attrs.Counts["refused"])
		require.Equal(t, 2500, attrs.Counts["read"])
		list := b.do(t, "GET", "/v1/jobs?filter[batch]="+id+"&page[size]=1", token, nil)
		require.EqualValues(t, 2497, list.object(t)["meta"].(map[string]any)["total"])

		refused := errorLines(t, b, token, id)
		require.Len(t, refused, 3)
		type seen struct {
			index, line int
			customID    string
			code        string
		}
		var got []seen
		for _, l := range refused {
			got = append(got, seen{int(l["index"].(float64)), int(l["line"].(float64)), l["custom_id"].(string),
				l["error"].(map[string]any)["code"].(string)})
		}
		require.Equal(t, seen{20, 22, "", "VALIDATION_ERROR"}, got[0], "the line cut short")
		require.Equal(t, seen{1200, 1202, "no-prompt", "VALIDATION_ERROR"}, got[1])
		require.Equal(t, seen{2400, 2402, "doc-0007", "VALIDATION_ERROR"}, got[2])
		require.Contains(t, refused[2]["error"].(map[string]any)["message"], "repeats the custom_id of line 8")
		require.Len(t, resultLines(t, b.do(t, "GET", "/v1/batches/"+id+"/errors?after=1200", token, nil)), 1)

		// The same request again: the same batch; read again, nothing more.
		again := b.do(t, "POST", "/v1/batches", token, fileBatchBody(url), "Idempotency-Key", "file-1")
		again.requireStatus(t, http.StatusAccepted)
		require.Equal(t, id, decodeBatch(t, again).Data.ID)
		require.NoError(t, b.readFile(t, id, nil))
		require.Equal(t, 2497, decodeBatch(t, b.do(t, "GET", "/v1/batches/"+id, token, nil)).Data.Attributes.Counts["total"])
		requireError(t, b.do(t, "POST", "/v1/batches", token, fileBatchBody(url+"?v=2"), "Idempotency-Key", "file-1"),
			http.StatusConflict, "IDEMPOTENCY_KEY_REUSED")
	})
}

func TestAtomicBatchFileRefusesEveryItem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.token(t, allScopes()...)
	items := []map[string]any{batchItem(t, "a", "llm-tasks"), batchItem(t, "b", "llm-tasks")}
	url := serveFile(t, jsonLines(t, items)+"\n{not json}\n")
	r := b.do(t, "POST", "/v1/batches", token, fileBatchBody(url, "atomic", true), "Idempotency-Key", "atomic-file")
	r.requireStatus(t, http.StatusAccepted)
	id := decodeBatch(t, r).Data.ID
	require.NoError(t, b.readFile(t, id, nil))
	got := b.do(t, "GET", "/v1/batches/"+id, token, nil)
	var doc struct {
		Data struct {
			Attributes struct {
				Status string         `json:"status"`
				Counts map[string]int `json:"counts"`
				Error  struct{ Code, Message string }
			} `json:"attributes"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(got.Body, &doc))
	require.Equal(t, "failed", doc.Data.Attributes.Status)
	require.Equal(t, "BATCH_REFUSED", doc.Data.Attributes.Error.Code)
	require.Equal(t, 0, doc.Data.Attributes.Counts["total"])
	require.Equal(t, 1, doc.Data.Attributes.Counts["refused"])
	refused := errorLines(t, b, token, id)
	require.Len(t, refused, 1)
	require.EqualValues(t, 4, refused[0]["line"])
	require.Contains(t, refused[0]["error"].(map[string]any)["message"], "line 4 is not a JSON object")
	list := b.do(t, "GET", "/v1/jobs", token, nil)
	require.EqualValues(t, 0, list.object(t)["meta"].(map[string]any)["total"], "nothing created")

	// A file out of reach fails its batch.
	r = b.do(t, "POST", "/v1/batches", token, fileBatchBody(url+".missing"), "Idempotency-Key", "missing-file")
	r.requireStatus(t, http.StatusAccepted)
	id = decodeBatch(t, r).Data.ID
	require.NoError(t, b.readFile(t, id, nil))
	got = b.do(t, "GET", "/v1/batches/"+id, token, nil)
	require.NoError(t, json.Unmarshal(got.Body, &doc))
	require.Equal(t, "failed", doc.Data.Attributes.Status)
	require.Equal(t, "BATCH_FILE_UNREADABLE", doc.Data.Attributes.Error.Code)
	require.Contains(t, doc.Data.Attributes.Error.Message, "input_file_url answered 404")
}

func TestBatchFileRequestRules(t *testing.T) {
	t.Parallel()
	b := setupJobOps(t, storetest.SQLite, func(c *jobops.Config) { c.CheckURLs = true }, nil)
	token := b.token(t, allScopes()...)
	send := func(body any) *response {
		return b.do(t, "POST", "/v1/batches", token, body, "Idempotency-Key", "rules")
	}
	both := fileBatchBody("https://files.example.com/b.jsonl")
	both["data"].(map[string]any)["attributes"].(map[string]any)["items"] = []any{batchItem(t, "a", "llm-tasks")}
	requireError(t, send(both), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/items", "input_file_url")
	requireError(t, send(fileBatchBody("ftp://files.example.com/b.jsonl")), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/input_file_url")
	requireError(t, send(fileBatchBody(42)), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/input_file_url")
	msg := requireError(t, send(fileBatchBody("http://127.0.0.1:8080/b.jsonl")), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/input_file_url")
	require.Contains(t, msg, "public addresses")
}
