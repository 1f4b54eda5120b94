package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// batchState is what the test reads of a batch document.
type batchState struct {
	Data struct {
		ID         string `json:"id"`
		Attributes struct {
			Status  string         `json:"status"`
			Counts  map[string]int `json:"counts"`
			Refused []struct {
				Index    int    `json:"index"`
				CustomID string `json:"custom_id"`
				Error    struct {
					Code string `json:"code"`
				} `json:"error"`
			} `json:"refused"`
		} `json:"attributes"`
	} `json:"data"`
}

func (g *gateway) batch(id string) batchState {
	g.t.Helper()
	status, body, _ := g.do(http.MethodGet, "/v1/batches/"+id, "")
	require.Equal(g.t, http.StatusOK, status, string(body))
	var doc batchState
	require.NoError(g.t, json.Unmarshal(body, &doc))
	return doc
}

// TestBatchEndToEnd: 1,000 llm-task items with 3 bad ones on gateway dev
// (docs/api.md, Batches): 997 created and 3 listed; the same batch again
// creates nothing; cancelled halfway, the finished results are kept and
// read as JSON Lines; batch.completed is delivered once.
func TestBatchEndToEnd(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "", "--providers", writeCatalog(t, "providers:\n"+sandboxLLMProvider("quick", "Quick", 200, 0, "0.000001")))
	hook := newHookReceiver(t, http.StatusNoContent)

	items := make([]map[string]any, 1000)
	for i := range items {
		items[i] = map[string]any{"custom_id": fmt.Sprintf("doc-%04d", i), "type": "llm-task-job",
			"attributes": map[string]any{"input": map[string]any{"type": "text", "text": fmt.Sprintf("text %d", i), "prompt": "Summarise."}}}
	}
	items[10]["attributes"] = map[string]any{"input": map[string]any{"type": "text", "text": "no prompt"}}
	items[500]["attributes"].(map[string]any)["provider"] = "no-such-provider"
	items[999]["type"] = "nonsense-job"
	body := string(mustJSON(t, map[string]any{"data": map[string]any{"type": "batch", "attributes": map[string]any{
		"items": items, "webhook": map[string]any{"url": hook.URL + "/batches"}}}}))

	began := time.Now()
	status, raw, header := g.do(http.MethodPost, "/v1/batches", body, "Idempotency-Key", "e2e-batch")
	took := time.Since(began)
	require.Equal(t, http.StatusAccepted, status, string(raw))
	t.Logf("POST /v1/batches with 1,000 items (997 created) answered in %s", took)
	var created batchState
	require.NoError(t, json.Unmarshal(raw, &created))
	id := created.Data.ID
	require.Equal(t, "/v1/batches/"+id, header.Get("Location"))
	require.Equal(t, 997, created.Data.Attributes.Counts["total"])
	refused := created.Data.Attributes.Refused
	require.Len(t, refused, 3)
	require.Equal(t, []int{10, 500, 999}, []int{refused[0].Index, refused[1].Index, refused[2].Index})
	require.Equal(t, "VALIDATION_ERROR", refused[0].Error.Code)
	require.Equal(t, "UNKNOWN_PROVIDER", refused[1].Error.Code)
	require.Equal(t, "VALIDATION_ERROR", refused[2].Error.Code)

	// The same batch again: the same answer, no job twice.
	status, raw, _ = g.do(http.MethodPost, "/v1/batches", body, "Idempotency-Key", "e2e-batch")
	require.Equal(t, http.StatusAccepted, status, string(raw))
	require.Contains(t, string(raw), id)
	status, raw, _ = g.do(http.MethodGet, "/v1/jobs?filter[batch]="+id+"&page[size]=1", "")
	require.Equal(t, http.StatusOK, status, string(raw))
	var list struct {
		Meta struct {
			Total int `json:"total"`
		} `json:"meta"`
	}
	require.NoError(t, json.Unmarshal(raw, &list))
	require.Equal(t, 997, list.Meta.Total)

	// Halfway (a good share finished), cancel.
	deadline := time.Now().Add(40 * time.Second)
	for g.batch(id).Data.Attributes.Counts["completed"] < 200 {
		require.True(t, time.Now().Before(deadline), "200 jobs did not finish in time: %v", g.batch(id).Data.Attributes.Counts)
		time.Sleep(200 * time.Millisecond)
	}
	began = time.Now()
	status, raw, _ = g.do(http.MethodPost, "/v1/batches/"+id+"/cancel", "")
	require.Equal(t, http.StatusAccepted, status, string(raw))
	t.Logf("POST /v1/batches/{id}/cancel answered in %s", time.Since(began))
	var after batchState
	for {
		after = g.batch(id)
		if after.Data.Attributes.Status == "cancelled" {
			break
		}
		require.Equal(t, "cancelling", after.Data.Attributes.Status)
		require.True(t, time.Now().Before(deadline.Add(20*time.Second)), "the batch did not end: %v", after.Data.Attributes.Counts)
		time.Sleep(200 * time.Millisecond)
	}
	counts := after.Data.Attributes.Counts
	t.Logf("cancelled: %v", counts)
	require.GreaterOrEqual(t, counts["completed"], 200)
	require.Less(t, counts["completed"], 997, "cancelled before the end")
	require.Equal(t, 997, counts["completed"]+counts["failed"])

	// Every finished item is a line: the completed with their result.
	req, err := http.NewRequest(http.MethodGet, g.url("/v1/batches/"+id+"/results"), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+g.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	byStatus := map[string]int{}
	seen := map[string]bool{}
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(nil, 1<<20)
	for scanner.Scan() {
		var line struct {
			CustomID string          `json:"custom_id"`
			JobID    string          `json:"job_id"`
			Status   string          `json:"status"`
			Result   json.RawMessage `json:"result"`
			Error    *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(scanner.Bytes(), &line))
		require.False(t, seen[line.CustomID], "one line per item")
		seen[line.CustomID] = true
		byStatus[line.Status]++
		if line.Status == "completed" {
			require.True(t, len(line.Result) > 2 && !bytes.Equal(line.Result, []byte("null")), "a completed item's result")
		} else {
			require.Equal(t, "CANCELLED", line.Error.Code)
		}
	}
	require.NoError(t, scanner.Err())
	require.Equal(t, counts["completed"], byStatus["completed"])
	require.Equal(t, counts["failed"], byStatus["failed"])

	// batch.completed, once.
	hook.waitForEvent(t, "batch.completed", 20*time.Second)
	time.Sleep(6 * time.Second) // a round of the sweep more
	calls := hook.received()
	require.Len(t, calls, 1, "one batch.completed event")
	require.NotEmpty(t, calls[0].header.Get("webhook-signature"))
	var event batchState
	require.NoError(t, json.Unmarshal(calls[0].body, &event))
	require.Equal(t, id, event.Data.ID)
	require.Equal(t, "cancelled", event.Data.Attributes.Status)
}

// TestBatchFileEndToEnd: 2,000 llm-task items from a JSONL file on gateway
// dev (docs/api.md, Batch files): validating at first, then read by the
// workers' BatchFileWorkflow, the malformed line refused with its number;
// cancelled once 100 ran, a results line per job.
func TestBatchFileEndToEnd(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "", "--providers", writeCatalog(t, "providers:\n"+sandboxLLMProvider("quick", "Quick", 500, 0, "0.000001")))
	var file bytes.Buffer
	for i := range 2000 {
		if i == 1500 {
			file.WriteString("{\"custom_id\": \"cut-short\n\n")
			continue
		}
		file.Write(mustJSON(t, map[string]any{"custom_id": fmt.Sprintf("doc-%04d", i), "type": "llm-task-job",
			"attributes": map[string]any{"input": map[string]any{"type": "text", "text": fmt.Sprintf("text %d", i), "prompt": "Summarise."}}}))
		file.WriteByte('\n')
	}
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(file.Bytes()) }))
	defer files.Close()
	body := string(mustJSON(t, map[string]any{"data": map[string]any{"type": "batch", "attributes": map[string]any{
		"input_file_url": files.URL + "/batch.jsonl"}}}))

	began := time.Now()
	status, raw, _ := g.do(http.MethodPost, "/v1/batches", body, "Idempotency-Key", "e2e-file")
	require.Equal(t, http.StatusAccepted, status, string(raw))
	t.Logf("POST /v1/batches with input_file_url answered in %s", time.Since(began))
	var created batchState
	require.NoError(t, json.Unmarshal(raw, &created))
	id := created.Data.ID
	require.Equal(t, "validating", created.Data.Attributes.Status)

	deadline := time.Now().Add(60 * time.Second)
	for read := false; ; {
		state := g.batch(id).Data.Attributes
		if !read && state.Status != "validating" {
			read = true
			t.Logf("2,000 items read in %s: %v", time.Since(began), state.Counts)
			require.Equal(t, 1999, state.Counts["total"])
			require.Equal(t, 1, state.Counts["refused"])
		}
		if state.Counts["completed"] >= 100 {
			break
		}
		require.True(t, time.Now().Before(deadline), "100 jobs did not finish: %s %v", state.Status, state.Counts)
		time.Sleep(200 * time.Millisecond)
	}
	// Not every job need run: cancelled, the rest fail at once.
	status, raw, _ = g.do(http.MethodPost, "/v1/batches/"+id+"/cancel", "")
	require.Equal(t, http.StatusAccepted, status, string(raw))
	var counts map[string]int
	for {
		state := g.batch(id).Data.Attributes
		if counts = state.Counts; state.Status == "cancelled" {
			break
		}
		require.True(t, time.Now().Before(deadline.Add(30*time.Second)), "the batch did not end: %s %v", state.Status, state.Counts)
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, 1999, counts["completed"]+counts["failed"])

	status, raw, _ = g.do(http.MethodGet, "/v1/batches/"+id+"/errors", "")
	require.Equal(t, http.StatusOK, status, string(raw))
	var refused struct {
		Index int `json:"index"`
		Line  int `json:"line"`
	}
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(raw), &refused))
	require.Equal(t, 1500, refused.Index)
	require.Equal(t, 1501, refused.Line)

	status, raw, _ = g.do(http.MethodGet, "/v1/batches/"+id+"/results", "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 1999, bytes.Count(raw, []byte("\n")), "a line per job")
	require.Equal(t, counts["completed"], bytes.Count(raw, []byte(`"status":"completed"`)))
}
