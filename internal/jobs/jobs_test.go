package jobs_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

func TestStatusTransitions(t *testing.T) {
	t.Parallel()
	legal := map[[2]jobs.Status]bool{
		{jobs.StatusPending, jobs.StatusPending}:       true,
		{jobs.StatusPending, jobs.StatusProcessing}:    true,
		{jobs.StatusPending, jobs.StatusFailed}:        true,
		{jobs.StatusProcessing, jobs.StatusProcessing}: true,
		{jobs.StatusProcessing, jobs.StatusCompleted}:  true,
		{jobs.StatusProcessing, jobs.StatusFailed}:     true,
	}
	for _, from := range jobs.Statuses() {
		require.True(t, from.Valid())
		require.Equal(t, from == jobs.StatusCompleted || from == jobs.StatusFailed, from.Terminal(), "%s terminal", from)
		for _, to := range jobs.Statuses() {
			require.Equal(t, legal[[2]jobs.Status{from, to}], from.CanMoveTo(to), "%s -> %s", from, to)
		}
	}
	require.False(t, jobs.Status("done").Valid())
	require.False(t, jobs.Status("").Valid())
}

// submitted is a job as the API accepts it.
func submitted() jobs.Submission {
	return jobs.Submission{
		JobID:      "0193a5e0-0000-7000-8000-000000000001",
		Service:    "translations",
		Tenant:     "acme",
		UserID:     "alice",
		Input:      json.RawMessage(`{"type":"text","content":"hello","target_language":"de"}`),
		Options:    json.RawMessage(`{"priority":"high"}`),
		ClientMeta: json.RawMessage(`{"order":"A-17"}`),
		CreatedAt:  time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC),
		Webhook:    &jobs.Webhook{URL: "https://example.com/hook", Headers: map[string]string{"Authorization": "secret"}},
	}
}

// keys lists an object's members.
func keys(t *testing.T, doc []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc, &m))
	return m
}

func TestAttributesOmitWhatDoesNotApplyYet(t *testing.T) {
	t.Parallel()
	rec := submitted().Record()
	b, err := json.Marshal(rec.Attributes(jobs.Full))
	require.NoError(t, err)
	attrs := keys(t, b)
	for _, absent := range []string{"routing", "processed_at", "progress", "result", "error", "completed_at", "provider", "webhook"} {
		require.NotContains(t, attrs, absent)
	}
	require.JSONEq(t, `[]`, string(attrs["routing_history"]))
	require.JSONEq(t, `"pending"`, string(attrs["status"]))
	require.JSONEq(t, string(submitted().Input), string(attrs["input"]))

	b, err = json.Marshal(rec.Attributes(jobs.Listing))
	require.NoError(t, err)
	listed := keys(t, b)
	for _, absent := range []string{"input", "options", "result"} {
		require.NotContains(t, listed, absent)
	}
}

func TestFailedRecordShowsItsErrorAndNoResult(t *testing.T) {
	t.Parallel()
	rec := submitted().Record()
	done := time.Date(2026, 11, 24, 10, 1, 0, 0, time.UTC)
	rec.Status, rec.ErrorCode, rec.ErrorMessage, rec.CompletedAt = jobs.StatusFailed, jobs.CodeCancelled, "the job was cancelled", &done
	rec.Result = `{"content":"stale"}`
	b, err := json.Marshal(rec.Attributes(jobs.Full))
	require.NoError(t, err)
	attrs := keys(t, b)
	require.JSONEq(t, `{"code":"CANCELLED","message":"the job was cancelled"}`, string(attrs["error"]))
	require.NotContains(t, attrs, "result")
	require.NotContains(t, attrs, "processed_at")
	require.Contains(t, attrs, "completed_at")
	require.Equal(t, &jobs.Error{Code: jobs.CodeCancelled, Message: "the job was cancelled"}, rec.Failure())
}

// TestWebhookBodyIsTheAPIDocumentWithoutSystemMeta: a receiver sees the
// job as a GET shows it, without meta.system and never the webhook.
func TestWebhookBodyIsTheAPIDocumentWithoutSystemMeta(t *testing.T) {
	t.Parallel()
	snap := finished(jobs.StatusCompleted)
	snap.Progress = 100
	snap.Result = json.RawMessage(`{"content":"hallo","character_count":5}`)
	snap.WorkerID = "worker-1"

	body, err := jobs.WebhookBody("translation.completed", snap)
	require.NoError(t, err)
	var got struct {
		Event string          `json:"event"`
		Data  json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &got))
	require.Equal(t, "translation.completed", got.Event)

	rec, err := snap.Record()
	require.NoError(t, err)
	want, err := json.Marshal(rec.Document(jobs.Full, nil))
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got.Data))

	data := keys(t, got.Data)
	require.JSONEq(t, `"translation-job"`, string(data["type"]))
	require.JSONEq(t, `{"client":{"order":"A-17"}}`, string(data["meta"]))
	require.NotContains(t, string(body), "secret")
	require.NotContains(t, string(body), "worker-1")

	withSystem, err := json.Marshal(rec.Document(jobs.Full, &jobs.SystemMeta{Region: "eu", WorkerID: rec.WorkerID}))
	require.NoError(t, err)
	require.JSONEq(t, `{"client":{"order":"A-17"},"system":{"region":"eu","worker_id":"worker-1"}}`, string(keys(t, withSystem)["meta"]))
}

// TestWebhookBodyFromDocumentsInTheStore: an event's job without its
// documents, completed by the stored record, renders the body the whole
// job renders, whatever the record's state moved on to.
func TestWebhookBodyFromDocumentsInTheStore(t *testing.T) {
	t.Parallel()
	processed := time.Date(2026, 11, 24, 10, 0, 1, 0, time.UTC)
	routing := jobs.RoutingInfo{ProviderID: "sandbox-fast", Reason: jobs.ReasonDefault, Attempt: 1, DecidedAt: processed}
	progress := submitted().Snapshot()
	progress.Status, progress.Provider, progress.Progress, progress.Revision = jobs.StatusProcessing, "sandbox-fast", 40, 1
	progress.Routing, progress.RoutingHistory, progress.ProcessedAt = &routing, []jobs.RoutingInfo{routing}, &processed
	completed := progress
	completedAt := processed.Add(time.Second)
	completed.Status, completed.Progress, completed.CompletedAt, completed.Revision = jobs.StatusCompleted, 100, &completedAt, 2
	completed.Result = json.RawMessage(`{"content":"hallo","character_count":5}`)
	stored, err := completed.Record()
	require.NoError(t, err)

	for _, event := range []jobs.Snapshot{progress, completed} {
		// The event's job goes through the history as JSON.
		b, err := json.Marshal(event.WithoutDocuments())
		require.NoError(t, err)
		require.NotContains(t, string(b), "hello")
		require.NotContains(t, string(b), "hallo")
		require.NotContains(t, string(b), "A-17")
		var pinned jobs.Snapshot
		require.NoError(t, json.Unmarshal(b, &pinned))

		job, err := pinned.WithDocuments(stored)
		require.NoError(t, err)
		got, err := jobs.WebhookBody("translation.x", job)
		require.NoError(t, err)
		want, err := jobs.WebhookBody("translation.x", event)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "status %s", event.Status)
	}

	// The completed event needs the completed record.
	earlier, err := progress.Record()
	require.NoError(t, err)
	_, err = completed.WithoutDocuments().WithDocuments(earlier)
	require.ErrorContains(t, err, "not yet completed")
	other := *stored
	other.ID = "0193a5e0-0000-7000-8000-000000000002"
	_, err = progress.WithoutDocuments().WithDocuments(&other)
	require.Error(t, err)
}

func TestEventName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "transcription.progress", jobs.EventName(jobs.MustService(jobs.Transcriptions), jobs.EventProgress))
	require.Equal(t, "video-analysis.failed", jobs.EventName(jobs.MustService(jobs.VideoAnalyses), jobs.EventFailed))
	require.Equal(t, "llm-task.completed", jobs.EventName(jobs.MustService(jobs.LLMTasks), jobs.EventCompleted))
}

// TestRecordedShapes pins the JSON of the workflow's input and snapshot:
// recorded histories hold them, so a renamed or retyped field would break
// replay of every job in flight.
func TestRecordedShapes(t *testing.T) {
	t.Parallel()
	in := submitted()
	in.Application, in.Provider, in.PolicyID = "mobile", "sandbox-fast", "0193a5e0-0000-7000-8000-0000000000aa"
	b, err := json.Marshal(in)
	require.NoError(t, err)
	require.Equal(t, `{"job_id":"0193a5e0-0000-7000-8000-000000000001","service":"translations","tenant":"acme","user_id":"alice",`+
		`"application":"mobile","provider":"sandbox-fast","policy_id":"0193a5e0-0000-7000-8000-0000000000aa",`+
		`"input":{"type":"text","content":"hello","target_language":"de"},"options":{"priority":"high"},"client_meta":{"order":"A-17"},`+
		`"created_at":"2026-11-24T10:00:00Z","webhook":{"url":"https://example.com/hook","headers":{"Authorization":"secret"}}}`, string(b))

	snap := in.Snapshot()
	done := time.Date(2026, 11, 24, 10, 0, 2, 0, time.UTC)
	snap.Status, snap.Progress, snap.CompletedAt, snap.Revision = jobs.StatusFailed, 0, &done, 2
	snap.Error = &jobs.Error{Code: jobs.CodeCancelled, Message: "the job was cancelled"}
	b, err = json.Marshal(snap)
	require.NoError(t, err)
	require.Equal(t, `{"id":"0193a5e0-0000-7000-8000-000000000001","service":"translations","tenant":"acme","user_id":"alice",`+
		`"application":"mobile","policy_id":"0193a5e0-0000-7000-8000-0000000000aa","provider":"sandbox-fast","status":"failed","progress":0,`+
		`"input":{"type":"text","content":"hello","target_language":"de"},"options":{"priority":"high"},"client_meta":{"order":"A-17"},`+
		`"routing_history":[],"error":{"code":"CANCELLED","message":"the job was cancelled"},`+
		`"created_at":"2026-11-24T10:00:00Z","completed_at":"2026-11-24T10:00:02Z","revision":2}`, string(b))
}

func TestWithDownloadURLSetsTheLinkAndKeepsTheRest(t *testing.T) {
	out, err := jobs.WithDownloadURL(json.RawMessage(`{"format":"srt","duration":2.5,"download_url":"https://old"}`), "https://files/x?sig=a&b=<c>")
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(out, &got))
	require.Equal(t, map[string]any{"format": "srt", "duration": 2.5, "download_url": "https://files/x?sig=a&b=<c>"}, got)

	_, err = jobs.WithDownloadURL(json.RawMessage(`[1]`), "https://files/x")
	require.Error(t, err, "a result that is not an object has no place for a link")
}
