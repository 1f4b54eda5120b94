package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// batchItem is an item of a batch: custom_id and the data of a single
// create of resource's type.
func batchItem(t *testing.T, customID, resource string, edits ...edit) map[string]any {
	t.Helper()
	data := body(t, resource, edits...)["data"].(map[string]any)
	data["custom_id"] = customID
	return data
}

// batchBody is a batch of items.
func batchBody(items []map[string]any, attrs ...any) map[string]any {
	attributes := map[string]any{"items": items}
	for i := 0; i+1 < len(attrs); i += 2 {
		attributes[attrs[i].(string)] = attrs[i+1]
	}
	return map[string]any{"data": map[string]any{"type": "batch", "attributes": attributes}}
}

// batchDoc is the part of a batch document the tests read.
type batchDoc struct {
	Data struct {
		ID         string `json:"id"`
		Attributes struct {
			Status  string         `json:"status"`
			Counts  map[string]int `json:"counts"`
			Refused []struct {
				Index    int    `json:"index"`
				CustomID string `json:"custom_id"`
				Status   int    `json:"status"`
				Error    struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			} `json:"refused"`
			CompletedAt *time.Time `json:"completed_at"`
		} `json:"attributes"`
	} `json:"data"`
}

// onEachStore runs test, in parallel, on an API over SQLite and one over
// PostgreSQL.
func onEachStore(t *testing.T, test func(t *testing.T, name string, b *bundle)) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *store.Store{"sqlite": storetest.SQLite, "postgres": storetest.Postgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, name, setupWith(t, open))
		})
	}
}

func decodeBatch(t *testing.T, r *response) batchDoc {
	t.Helper()
	var doc batchDoc
	require.NoError(t, json.Unmarshal(r.Body, &doc), "body: %s", r.Body)
	return doc
}

func TestBatchCreatesTheGoodItemsAndListsTheBadOnes(t *testing.T) {
	onEachStore(t, func(t *testing.T, name string, b *bundle) {
		token := b.token(t, allScopes()...)
		badInput := batchItem(t, "no-prompt", "llm-tasks", del("/data/attributes/input/prompt"))
		badProvider := batchItem(t, "nowhere", "translations", set("/data/attributes/provider", "no-such-provider"))
		items := []map[string]any{
			batchItem(t, "a", "llm-tasks"), badInput, batchItem(t, "b", "translations"),
			badProvider, batchItem(t, "c", "transcriptions"),
		}
		r := b.do(t, "POST", "/v1/batches", token, batchBody(items), "Idempotency-Key", "batch-1")
		r.requireStatus(t, http.StatusAccepted)
		doc := decodeBatch(t, r)
		require.Equal(t, "/v1/batches/"+doc.Data.ID, r.Header.Get("Location"))
		attrs := doc.Data.Attributes
		require.Equal(t, "in_progress", attrs.Status)
		require.Equal(t, 3, attrs.Counts["total"])
		require.Equal(t, 2, attrs.Counts["refused"])
		require.Len(t, attrs.Refused, 2)

		// Each bad item is refused as its single create is.
		for i, res := range map[int]string{1: "llm-tasks", 3: "translations"} {
			data := map[string]any{}
			for k, v := range items[i] {
				if k != "custom_id" {
					data[k] = v
				}
			}
			single := b.do(t, "POST", "/v1/"+res, token, map[string]any{"data": data})
			var want struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			require.NoError(t, json.Unmarshal(single.Body, &want))
			got := attrs.Refused[0]
			if i == 3 {
				got = attrs.Refused[1]
			}
			require.Equal(t, i, got.Index)
			require.Equal(t, single.Status, got.Status)
			require.Equal(t, want.Error.Code, got.Error.Code)
			require.Equal(t, want.Error.Message, got.Error.Message)
		}
		require.Equal(t, "no-prompt", attrs.Refused[0].CustomID)
		require.Equal(t, "VALIDATION_ERROR", attrs.Refused[0].Error.Code)
		require.Equal(t, "UNKNOWN_PROVIDER", attrs.Refused[1].Error.Code)

		list := b.do(t, "GET", "/v1/jobs?filter[batch]="+doc.Data.ID, token, nil)
		list.requireStatus(t, http.StatusOK)
		require.EqualValues(t, 3, list.object(t)["meta"].(map[string]any)["total"])

		// The same request again: the same batch, no job twice.
		again := b.do(t, "POST", "/v1/batches", token, batchBody(items), "Idempotency-Key", "batch-1")
		again.requireStatus(t, http.StatusAccepted)
		require.Equal(t, doc.Data.ID, decodeBatch(t, again).Data.ID)
		require.Len(t, decodeBatch(t, again).Data.Attributes.Refused, 2)
		list = b.do(t, "GET", "/v1/jobs?filter[batch]="+doc.Data.ID, token, nil)
		require.EqualValues(t, 3, list.object(t)["meta"].(map[string]any)["total"])

		// The key with another request.
		other := b.do(t, "POST", "/v1/batches", token, batchBody(items[:1]), "Idempotency-Key", "batch-1")
		requireError(t, other, http.StatusConflict, "IDEMPOTENCY_KEY_REUSED")

		got := b.do(t, "GET", "/v1/batches/"+doc.Data.ID, token, nil)
		got.requireStatus(t, http.StatusOK)
		require.Equal(t, 3, decodeBatch(t, got).Data.Attributes.Counts["pending"])
	})
}

func TestAtomicBatchRefusesEveryItem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.token(t, allScopes()...)
	items := []map[string]any{batchItem(t, "a", "llm-tasks"), batchItem(t, "b", "llm-tasks", del("/data/attributes/input/prompt"))}
	r := b.do(t, "POST", "/v1/batches", token, batchBody(items, "atomic", true), "Idempotency-Key", "k")
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, "body: %s", r.Body)
	var refused struct {
		Error struct {
			Code  string `json:"code"`
			Items []struct {
				Index    int    `json:"index"`
				CustomID string `json:"custom_id"`
			} `json:"items"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &refused))
	require.Equal(t, "BATCH_REFUSED", refused.Error.Code)
	require.Len(t, refused.Error.Items, 1)
	require.Equal(t, "b", refused.Error.Items[0].CustomID)
	list := b.do(t, "GET", "/v1/jobs", token, nil)
	require.EqualValues(t, 0, list.object(t)["meta"].(map[string]any)["total"], "nothing created")
	b.assertNoStarts(t)

	// Every item refused: nothing to create, atomic or not.
	r = b.do(t, "POST", "/v1/batches", token, batchBody(items[1:]), "Idempotency-Key", "k2")
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, "body: %s", r.Body)
}

func TestBatchRequestRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.token(t, allScopes()...)
	item := batchItem(t, "a", "llm-tasks")
	send := func(body any, headers ...string) *response {
		return b.do(t, "POST", "/v1/batches", token, body, headers...)
	}
	requireError(t, send(batchBody([]map[string]any{item})), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "Idempotency-Key")
	key := []string{"Idempotency-Key", "rules"}
	requireError(t, send(batchBody([]map[string]any{item, item}), key...), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/items/1/custom_id")
	requireError(t, send(batchBody([]map[string]any{}), key...), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/items")
	noID := batchItem(t, "", "llm-tasks")
	requireError(t, send(batchBody([]map[string]any{noID}), key...), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/items/0/custom_id")
	long := batchItem(t, strings.Repeat("x", 65), "llm-tasks")
	requireError(t, send(batchBody([]map[string]any{long}), key...), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/items/0/custom_id")
	many := make([]map[string]any, 1001)
	for i := range many {
		many[i] = batchItem(t, fmt.Sprint(i), "llm-tasks")
	}
	requireError(t, send(batchBody(many), key...), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/items")
	requireError(t, send(batchBody([]map[string]any{item}, "atomic", "yes"), key...), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/atomic")
	requireError(t, send(batchBody([]map[string]any{item}, "webhook", map[string]any{"url": "ftp://x"}), key...), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/webhook/url")
	requireError(t, send(batchBody([]map[string]any{item}, "items2", 1), key...), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/items2")
}

func TestBatchScopesAndTenants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	llmOnly := b.token(t, "llm-tasks:write", "llm-tasks:read")
	items := []map[string]any{batchItem(t, "a", "llm-tasks"), batchItem(t, "b", "translations")}
	r := b.do(t, "POST", "/v1/batches", llmOnly, batchBody(items), "Idempotency-Key", "scopes")
	r.requireStatus(t, http.StatusAccepted)
	doc := decodeBatch(t, r)
	require.Len(t, doc.Data.Attributes.Refused, 1)
	require.Equal(t, http.StatusForbidden, doc.Data.Attributes.Refused[0].Status)
	require.Equal(t, "INSUFFICIENT_SCOPE", doc.Data.Attributes.Refused[0].Error.Code)
	path := "/v1/batches/" + doc.Data.ID

	b.do(t, "GET", path, llmOnly, nil).requireStatus(t, http.StatusOK)
	requireError(t, b.do(t, "GET", path, b.token(t, "translations:read"), nil), http.StatusForbidden, "INSUFFICIENT_SCOPE", "llm-tasks:read")
	requireError(t, b.do(t, "POST", path+"/cancel", b.token(t, "llm-tasks:read"), nil), http.StatusForbidden, "INSUFFICIENT_SCOPE", "llm-tasks:write")
	other := b.tokenFor(t, tenantB, userB, allScopes()...)
	requireError(t, b.do(t, "GET", path, other, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, b.do(t, "GET", "/v1/batches/not-a-uuid", llmOnly, nil), http.StatusNotFound, "NOT_FOUND")
	list := b.do(t, "GET", "/v1/jobs?filter[batch]="+doc.Data.ID, other, nil)
	require.EqualValues(t, 0, list.object(t)["meta"].(map[string]any)["total"], "another tenant's batch lists nothing")
}

// resultLines reads a batch's results.
func resultLines(t *testing.T, r *response) []map[string]any {
	t.Helper()
	r.requireStatus(t, http.StatusOK)
	var out []map[string]any
	scanner := bufio.NewScanner(bytes.NewReader(r.Body))
	for scanner.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(scanner.Bytes(), &line), "line %q", scanner.Text())
		out = append(out, line)
	}
	return out
}

func TestBatchResultsAndCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	token := b.token(t, allScopes()...)
	items := make([]map[string]any, 4)
	for i := range items {
		items[i] = batchItem(t, fmt.Sprintf("item-%d", i), "llm-tasks")
	}
	r := b.do(t, "POST", "/v1/batches", token, batchBody(items), "Idempotency-Key", "results")
	r.requireStatus(t, http.StatusAccepted)
	id := decodeBatch(t, r).Data.ID
	path := "/v1/batches/" + id
	require.Eventually(t, func() bool { return len(b.started()) == 4 }, 5*time.Second, 10*time.Millisecond, "the dispatcher starts them")
	require.Empty(t, resultLines(t, b.do(t, "GET", path+"/results", token, nil)), "nothing finished yet")

	// One finishes.
	page, _, err := b.store.Jobs.ListJobs(ctx, store.JobFilter{Batch: id}, 0, 10)
	require.NoError(t, err)
	done, err := b.store.Jobs.GetJob(ctx, page[0].ID)
	require.NoError(t, err)
	completed := fixedNow.Add(time.Second)
	done.Status, done.Result, done.CompletedAt, done.Revision = jobs.StatusCompleted, `{"text":"done","model":"model-a"}`, &completed, 2
	require.NoError(t, b.store.Jobs.SaveJob(ctx, done))
	r = b.do(t, "GET", path+"/results", token, nil, "Accept", "application/jsonl")
	require.Equal(t, "application/jsonl", r.Header.Get("Content-Type"))
	lines := resultLines(t, r)
	require.Len(t, lines, 1)
	require.Equal(t, done.ID, lines[0]["job_id"])
	require.Equal(t, done.CustomID, lines[0]["custom_id"])
	require.Equal(t, "completed", lines[0]["status"])
	require.Equal(t, "done", lines[0]["result"].(map[string]any)["text"])

	r = b.do(t, "POST", path+"/cancel", token, nil)
	r.requireStatus(t, http.StatusAccepted)
	doc := decodeBatch(t, r)
	require.Equal(t, "cancelled", doc.Data.Attributes.Status)
	require.Equal(t, 1, doc.Data.Attributes.Counts["completed"])
	require.Equal(t, 3, doc.Data.Attributes.Counts["failed"])
	require.NotNil(t, doc.Data.Attributes.CompletedAt)
	require.Len(t, b.cancelled(), 3, "the running jobs' workflows are cancelled")

	r = b.do(t, "GET", path+"/results", token, nil)
	require.Equal(t, "application/x-ndjson", r.Header.Get("Content-Type"))
	lines = resultLines(t, r)
	require.Len(t, lines, 4)
	byStatus := map[string]int{}
	for _, line := range lines {
		byStatus[line["status"].(string)]++
		if line["status"] == "failed" {
			require.Equal(t, "CANCELLED", line["error"].(map[string]any)["code"])
			require.Nil(t, line["result"])
		}
	}
	require.Equal(t, map[string]int{"completed": 1, "failed": 3}, byStatus)
	// Resumed after a job.
	require.Len(t, resultLines(t, b.do(t, "GET", path+"/results?after="+lines[1]["job_id"].(string), token, nil)), 2)

	// Cancelling again changes nothing.
	b.do(t, "POST", path+"/cancel", token, nil).requireStatus(t, http.StatusAccepted)
	require.Len(t, b.cancelled(), 3)
}

func TestBatchOfAThousandItems(t *testing.T) {
	onEachStore(t, func(t *testing.T, name string, b *bundle) {
		token := b.token(t, allScopes()...)
		items := make([]map[string]any, 1000)
		for i := range items {
			items[i] = batchItem(t, fmt.Sprint(i), "llm-tasks")
		}
		began := time.Now()
		r := b.do(t, "POST", "/v1/batches", token, batchBody(items), "Idempotency-Key", "thousand")
		took := time.Since(began)
		r.requireStatus(t, http.StatusAccepted)
		require.Equal(t, 1000, decodeBatch(t, r).Data.Attributes.Counts["total"])
		t.Logf("%s: 1,000 items accepted in %s", name, took)
	})
}

// A stream's ?after= cursor that is not one is refused, naming it, on
// both of a batch's streams: never an empty 200 (docs/api.md, Batches).
func TestBatchStreamCursorsAreValidated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.token(t, allScopes()...)
	r := b.do(t, "POST", "/v1/batches", token, batchBody([]map[string]any{batchItem(t, "item-0", "llm-tasks")}), "Idempotency-Key", "cursors")
	r.requireStatus(t, http.StatusAccepted)
	path := "/v1/batches/" + decodeBatch(t, r).Data.ID
	for _, query := range []string{"/results?after=garbage", "/results?after=12", "/results?after=0193a9d4-7c5e-7000-8000",
		"/errors?after=-5", "/errors?after=garbage", "/errors?after=1.5"} {
		r := b.do(t, "GET", path+query, token, nil)
		requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", "after")
	}
	for _, query := range []string{"/results?after=0193A9D4-7C5E-7000-8000-0000000000E1", "/results?after=", "/errors?after=0", "/errors?after="} {
		resultLines(t, b.do(t, "GET", path+query, token, nil))
	}
}
