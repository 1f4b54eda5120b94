package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/providers/providertest"
)

// deletionCatalog has a quick sandbox for transcriptions and a slow one,
// whose jobs are still processing when the test deletes them.
var deletionCatalog = providertest.SandboxCatalog("sandbox-slow", 40000) + `  - id: sandbox-quick
    name: Sandbox (quick)
    adapter: sandbox
    settings: {latency_ms: 0, fail_rate: 0}
    services:
      transcriptions:
        features: [language_detection, timestamps]
        pricing: {unit: per_minute, amount: 0.001, currency: USD}
`

// deletedDoc is the DELETE answer: the job's tombstone.
type deletedDoc struct {
	Data struct {
		ID         string `json:"id"`
		Type       string `json:"type"`
		Attributes struct {
			Tenant       string     `json:"tenant"`
			Status       string     `json:"status"`
			CreatedAt    time.Time  `json:"created_at"`
			CompletedAt  *time.Time `json:"completed_at"`
			DeletedAt    time.Time  `json:"deleted_at"`
			VendorCopies []struct {
				Provider string `json:"provider"`
				Outcome  string `json:"outcome"`
			} `json:"vendor_copies"`
		} `json:"attributes"`
	} `json:"data"`
}

// deleteJob deletes a job and requires the 202 with its tombstone.
func (g *gateway) deleteJob(resource, id string) deletedDoc {
	g.t.Helper()
	status, body, _ := g.do(http.MethodDelete, "/v1/"+resource+"/"+id, "")
	require.Equal(g.t, http.StatusAccepted, status, "DELETE %s/%s: %s", resource, id, body)
	var doc deletedDoc
	require.NoError(g.t, json.Unmarshal(body, &doc))
	require.Equal(g.t, id, doc.Data.ID)
	require.Equal(g.t, "deleted", doc.Data.Attributes.Status)
	require.Equal(g.t, "acme", doc.Data.Attributes.Tenant)
	return doc
}

// requireErrorCode requires an answer of status with the API error code.
func requireErrorCode(t *testing.T, status int, code string, gotStatus int, body []byte, what string) {
	t.Helper()
	require.Equal(t, status, gotStatus, "%s: %s", what, body)
	var doc struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &doc), "%s: %s", what, body)
	require.Equal(t, code, doc.Error.Code, "%s: %s", what, body)
}

// requireGone requires that every route of a deleted job answers 410
// JOB_DELETED.
func (g *gateway) requireGone(resource, id string) {
	g.t.Helper()
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, ""},
		{http.MethodGet, "/result"},
		{http.MethodPost, "/cancel"},
		{http.MethodPost, "/retry"},
		{http.MethodGet, "/webhook-deliveries"},
		{http.MethodDelete, ""},
	} {
		status, body, _ := g.do(req.method, "/v1/"+resource+"/"+id+req.path, "")
		requireErrorCode(g.t, http.StatusGone, "JOB_DELETED", status, body, req.method+" "+req.path)
	}
}

// listedJobs are the ids GET /v1/jobs lists for g's token.
func (g *gateway) listedJobs() []string {
	g.t.Helper()
	status, body, _ := g.do(http.MethodGet, "/v1/jobs", "")
	require.Equal(g.t, http.StatusOK, status, "%s", body)
	var doc struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(g.t, json.Unmarshal(body, &doc))
	var ids []string
	for _, d := range doc.Data {
		ids = append(ids, d.ID)
	}
	return ids
}

// waitErased waits for the job's DeletionWorkflow to end, and requires
// that it succeeded and the job's workflow runs are gone.
func waitErased(t *testing.T, tc client.Client, id string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var err error
	for ctx.Err() == nil {
		// The erasure's start may still be on its way: wait for it.
		if err = tc.GetWorkflow(ctx, "deletion-"+id, "").Get(ctx, nil); err == nil {
			break
		}
		var notFound *serviceerror.NotFound
		if !errors.As(err, &notFound) {
			require.NoError(t, err, "the erasure failed")
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, err, "the erasure did not end within %s", timeout)
	// The erasure ends once Temporal deleted the runs.
	_, err = tc.DescribeWorkflowExecution(context.Background(), id, "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "the job's workflow runs are deleted from Temporal")
	iter := tc.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	_, err = iter.Next()
	require.ErrorAs(t, err, &notFound, "no history of the job's workflow is left")
}

// database is dev's SQLite database, read beside the running gateway.
func (g *gateway) database() *sql.DB {
	g.t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(g.dataDir, "gateway.db")+"?_pragma=busy_timeout(5000)")
	require.NoError(g.t, err)
	g.t.Cleanup(func() { _ = db.Close() })
	return db
}

// rowsContaining lists the rows of any table of db in which a column's
// value contains s, as "table: row".
func rowsContaining(t *testing.T, db *sql.DB, s string) []string {
	t.Helper()
	tables, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	require.NoError(t, err)
	var names []string
	for tables.Next() {
		var name string
		require.NoError(t, tables.Scan(&name))
		names = append(names, name)
	}
	require.NoError(t, tables.Err())
	tables.Close()
	require.Contains(t, names, "jobs")
	var found []string
	for _, name := range names {
		rows, err := db.Query(`SELECT * FROM "` + name + `"`)
		require.NoError(t, err, name)
		cols, err := rows.Columns()
		require.NoError(t, err)
		for rows.Next() {
			values := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range values {
				ptrs[i] = &values[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			row := fmt.Sprint(values...)
			for _, v := range values {
				if b, ok := v.([]byte); ok {
					row += string(b)
				}
			}
			if strings.Contains(row, s) {
				found = append(found, name+": "+row)
			}
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	return found
}

func TestDeletingJobsEndToEnd(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t) // its transcriptions probe their media
	g := newGateway(t, "", "--providers", writeCatalog(t, deletionCatalog))
	tc := temporalClient(t, g.temporal)
	pub := g.publicKey()
	other := "Bearer " + g.mint("globex", allJobScopes)

	t.Run("a completed job with a result file and a webhook", func(t *testing.T) {
		t.Parallel()
		// The marker is the job's own content: no row may keep it once the
		// job is deleted.
		marker := "deletion-e2e-" + uuid.NewString()
		recv := newHookReceiver(t, http.StatusNoContent)
		job := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"provider":"sandbox-quick",
			"input":{"type":"audio","url":"`+g.url("/dev/samples/tone.wav?ref="+marker)+`"},"options":{"format":"srt"},
			"webhook":{"url":"`+recv.URL+`/hooks/`+marker+`"}},"meta":{"client":{"ref":"`+marker+`"}}}}`)
		id := job.Data.ID
		done := g.waitEnded("transcriptions", id, 60*time.Second, "completed")
		link := resultMember[string](t, done.Data.Attributes.Result, "download_url")
		require.NotEmpty(t, g.download(done.Data.Attributes.Result))
		recv.waitForEvent(t, "transcription.completed", 30*time.Second)
		require.NotEmpty(t, rowsContaining(t, g.database(), marker), "the marker is found while the job is there")
		files, _ := filepath.Glob(filepath.Join(g.dataDir, "files", "results", id, "*"))
		require.NotEmpty(t, files, "the job has a result file")

		deleted := g.deleteJob("transcriptions", id)
		require.Equal(t, "transcription-job", deleted.Data.Type)
		require.NotNil(t, deleted.Data.Attributes.CompletedAt)
		require.WithinDuration(t, time.Now(), deleted.Data.Attributes.DeletedAt, time.Minute)

		g.requireGone("transcriptions", id)
		require.NotContains(t, g.listedJobs(), id, "GET /v1/jobs no longer lists it")
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			status, body, _ := g.do(method, "/v1/transcriptions/"+id, "", "Authorization", other)
			requireErrorCode(t, http.StatusNotFound, "NOT_FOUND", status, body, "another tenant's "+method)
		}

		waitErased(t, tc, id, 30*time.Second)

		// The tombstone says the erasure finished.
		var erasedAt sql.NullString
		var copies string
		require.NoError(t, g.database().QueryRow(`SELECT erased_at, vendor_copies FROM job_tombstones WHERE id = ?`, id).Scan(&erasedAt, &copies))
		require.True(t, erasedAt.Valid, "the tombstone records the end of the erasure")
		require.JSONEq(t, `[{"provider":"sandbox-quick","outcome":"not_retained"}]`, copies)

		// The result file, and its link, are gone.
		files, _ = filepath.Glob(filepath.Join(g.dataDir, "files", "results", id, "*"))
		require.Empty(t, files)
		resp, err := http.Get(link)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "the earlier download_url")

		// The receiver got transcription.deleted, signed, after the
		// completed event.
		calls := recv.waitForEvent(t, "transcription.deleted", 30*time.Second)
		last := calls[len(calls)-1]
		require.Equal(t, "transcription.deleted", last.event, "deleted is the last event")
		require.Equal(t, "transcription.completed", calls[len(calls)-2].event)
		h := last.header
		require.NoError(t, webhooksign.Verify(pub, h.Get("webhook-id"), h.Get("webhook-timestamp"), last.body, h.Get("webhook-signature"), time.Now(), 0))
		require.Equal(t, id+"-deleted", h.Get("webhook-id"))
		var event deletedDoc
		require.NoError(t, json.Unmarshal(last.body, &event))
		require.Equal(t, id, event.Data.ID)
		require.Equal(t, "deleted", event.Data.Attributes.Status)
		require.Equal(t, []struct {
			Provider string `json:"provider"`
			Outcome  string `json:"outcome"`
		}{{"sandbox-quick", "not_retained"}}, event.Data.Attributes.VendorCopies)
		require.NotContains(t, string(last.body), marker)

		// Still gone, for its tenant and for no one else.
		g.requireGone("transcriptions", id)
		status, body, _ := g.do(http.MethodGet, "/v1/transcriptions/"+id, "", "Authorization", other)
		requireErrorCode(t, http.StatusNotFound, "NOT_FOUND", status, body, "another tenant's GET")

		// No row of the database keeps the job's content.
		require.Empty(t, rowsContaining(t, g.database(), marker))
	})

	t.Run("a running job", func(t *testing.T) {
		t.Parallel()
		recv := newHookReceiver(t, http.StatusNoContent)
		job := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"provider":"sandbox-slow",
			"input":{"type":"audio","url":"`+g.url("/dev/samples/tone.wav")+`"},"webhook":{"url":"`+recv.URL+`"}}}}`)
		id := job.Data.ID
		g.waitFor("transcriptions", id, 30*time.Second, func(d jobDoc) bool { return d.Data.Attributes.Status == "processing" })
		recv.waitForEvent(t, "transcription.progress", 30*time.Second)
		desc, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
		require.NoError(t, err)
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus())

		deleted := g.deleteJob("transcriptions", id)
		require.Nil(t, deleted.Data.Attributes.CompletedAt)
		g.requireGone("transcriptions", id)

		// Its workflow is cancelled, and ends at once (its webhook's
		// deliveries stop): it is not left to be terminated.
		require.Eventually(t, func() bool {
			desc, err := tc.DescribeWorkflowExecution(context.Background(), id, "")
			var notFound *serviceerror.NotFound
			if errors.As(err, &notFound) {
				return true
			}
			require.NoError(t, err)
			status := desc.GetWorkflowExecutionInfo().GetStatus()
			if status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				return false
			}
			require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, status)
			return true
		}, 20*time.Second, 100*time.Millisecond, "the job's workflow ends once cancelled")

		waitErased(t, tc, id, 45*time.Second)
		g.requireGone("transcriptions", id)
		require.NotContains(t, g.listedJobs(), id)
		files, _ := filepath.Glob(filepath.Join(g.dataDir, "files", "*", id, "*"))
		require.Empty(t, files, "no file of the job is left")

		// Stopping the job's workflow sends no event of its own: the
		// receiver's last event is transcription.deleted.
		calls := recv.waitForEvent(t, "transcription.deleted", 30*time.Second)
		for _, c := range calls[:len(calls)-1] {
			require.Equal(t, "transcription.progress", c.event)
		}
		require.Equal(t, "transcription.deleted", calls[len(calls)-1].event)
	})

	t.Run("by an admin of another tenant", func(t *testing.T) {
		t.Parallel()
		job := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"provider":"sandbox-quick",
			"input":{"type":"audio","url":"`+g.url("/dev/samples/tone.wav")+`"}}}}`)
		id := job.Data.ID
		g.waitEnded("transcriptions", id, 60*time.Second, "completed")

		// DELETE /v1/jobs/{id} takes admin:cross-tenant.
		status, body, _ := g.do(http.MethodDelete, "/v1/jobs/"+id, "")
		requireErrorCode(t, http.StatusForbidden, "INSUFFICIENT_SCOPE", status, body, "DELETE /v1/jobs without admin:cross-tenant")
		admin := "Bearer " + g.mint("ops", "admin:cross-tenant")
		status, body, _ = g.do(http.MethodDelete, "/v1/jobs/"+id, "", "Authorization", admin)
		require.Equal(t, http.StatusAccepted, status, "%s", body)
		var deleted deletedDoc
		require.NoError(t, json.Unmarshal(body, &deleted))
		require.Equal(t, "acme", deleted.Data.Attributes.Tenant)
		require.Equal(t, "transcription-job", deleted.Data.Type)

		g.requireGone("transcriptions", id)
		status, body, _ = g.do(http.MethodDelete, "/v1/jobs/"+id, "", "Authorization", admin)
		requireErrorCode(t, http.StatusGone, "JOB_DELETED", status, body, "the admin's second DELETE")
		waitErased(t, tc, id, 30*time.Second)
	})
}
