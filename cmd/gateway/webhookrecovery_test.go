package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
)

// resendDoc is the answer of a webhook resend.
type resendDoc struct {
	Data struct {
		ID         string `json:"id"`
		Attributes struct {
			JobID      string   `json:"job_id"`
			Count      int      `json:"count"`
			MessageIDs []string `json:"message_ids"`
		} `json:"attributes"`
	} `json:"data"`
}

// recoverDoc is the answer of a webhook recovery.
type recoverDoc struct {
	Data []struct {
		ID         string `json:"id"`
		Attributes struct {
			JobID      string   `json:"job_id"`
			MessageIDs []string `json:"message_ids"`
		} `json:"attributes"`
	} `json:"data"`
	Meta struct {
		Jobs     int  `json:"jobs"`
		Messages int  `json:"messages"`
		DryRun   bool `json:"dry_run"`
	} `json:"meta"`
}

// triggers are the delivery log's triggers of a job's attempts, by
// message id and trigger.
func (g *gateway) triggers(resource, id string) map[string][]string {
	g.t.Helper()
	status, b, _ := g.do(http.MethodGet, "/v1/"+resource+"/"+id+"/webhook-deliveries", "")
	require.Equal(g.t, http.StatusOK, status, "%s", b)
	var doc struct {
		Data []struct {
			Attributes struct {
				MessageID  string `json:"message_id"`
				Trigger    string `json:"trigger"`
				StatusCode int    `json:"status_code"`
			} `json:"attributes"`
		} `json:"data"`
	}
	require.NoError(g.t, json.Unmarshal(b, &doc))
	out := map[string][]string{}
	for _, d := range doc.Data {
		a := d.Attributes
		out[a.Trigger] = append(out[a.Trigger], fmt.Sprintf("%s %d", a.MessageID, a.StatusCode))
	}
	return out
}

// withoutLink is a webhook body without its result's download_url, which
// every attempt mints afresh.
func withoutLink(t *testing.T, body []byte) string {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(body, &doc))
	if data, ok := doc["data"].(map[string]any); ok {
		if attrs, ok := data["attributes"].(map[string]any); ok {
			if result, ok := attrs["result"].(map[string]any); ok {
				delete(result, "download_url")
			}
		}
	}
	return string(mustJSON(t, doc))
}

// failedWebhookJobs are the ids GET /v1/jobs?filter[webhook]=failed lists.
func (g *gateway) failedWebhookJobs() []string {
	g.t.Helper()
	status, b, _ := g.do(http.MethodGet, "/v1/jobs?filter[webhook]=failed", "")
	require.Equal(g.t, http.StatusOK, status, "%s", b)
	var doc struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(g.t, json.Unmarshal(b, &doc))
	var ids []string
	for _, d := range doc.Data {
		ids = append(ids, d.ID)
	}
	return ids
}

// TestWebhookResendAndRecovery: a resend sends a job's events again in
// order with their webhook-ids and fresh signatures; a receiver down past
// the (shortened) retry window has its given-up events found and
// recovered, by the API and the CLI (docs/webhooks.md). With
// GATEWAY_RECORD_HISTORIES set it records the histories of a job whose
// event was given up and of resends, for the replay tests in workflows/.
func TestWebhookResendAndRecovery(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t) // its transcriptions probe their media
	g := newGatewayEnv(t, "", "", []string{"GATEWAY_WEBHOOK_GIVE_UP_AFTER=4s", envPayloadKeys + "=" + payloadKeysOff})
	pub := g.publicKey()
	tc := temporalClient(t, g.temporal)
	record := map[string]string{}

	// Resend: every event again, in order, same ids, fresh signatures.
	recv := newHookReceiver(t, http.StatusNoContent)
	job := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{
		"provider":"sandbox-accurate","input":{"type":"audio","url":"`+g.url("/dev/samples/tone.wav")+`"},
		"webhook":{"url":"`+recv.URL+`","headers":{"X-Hook-Token":"s3cret"}}}}}`)
	first := recv.waitForEvent(t, "transcription.completed", 60*time.Second)
	require.Greater(t, len(first), 1, "progress events, then completed")
	var ids []string
	for _, c := range first {
		ids = append(ids, c.header.Get("webhook-id"))
	}
	time.Sleep(time.Second) // fresh timestamps are later ones
	status, body, _ := g.do(http.MethodPost, "/v1/transcriptions/"+job.Data.ID+"/webhooks/resend", "")
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	var resent resendDoc
	require.NoError(t, json.Unmarshal(body, &resent))
	require.Equal(t, ids, resent.Data.Attributes.MessageIDs)
	require.Equal(t, len(ids), resent.Data.Attributes.Count)
	require.True(t, strings.HasPrefix(resent.Data.ID, "webhook-resend-"+job.Data.ID+"-"), resent.Data.ID)
	record["webhook-resend-delivered"] = resent.Data.ID
	again := recv.waitForCalls(t, 2*len(first), 60*time.Second)[len(first):]
	for i, c := range again {
		h := c.header
		require.Equal(t, ids[i], h.Get("webhook-id"), "in order, with the first webhook-id")
		require.Equal(t, first[i].event, c.event)
		require.JSONEq(t, withoutLink(t, first[i].body), withoutLink(t, c.body), "the same body as the first time, but a fresh download_url")
		require.Equal(t, "s3cret", h.Get("X-Hook-Token"))
		require.NoError(t, webhooksign.Verify(pub, h.Get("webhook-id"), h.Get("webhook-timestamp"), c.body, h.Get("webhook-signature"), time.Now(), 0))
		require.NotEqual(t, first[i].header.Get("webhook-signature"), h.Get("webhook-signature"), "a fresh signature")
		require.Greater(t, h.Get("webhook-timestamp"), first[i].header.Get("webhook-timestamp"))
	}
	require.Eventually(t, func() bool { return len(g.triggers("transcriptions", job.Data.ID)["resend"]) == len(ids) },
		10*time.Second, 100*time.Millisecond, "the delivery log shows the resent attempts")

	// No webhook: 409; another tenant's job: 404.
	plain := g.create("llm-tasks", llmTaskBody)
	status, body, _ = g.do(http.MethodPost, "/v1/llm-tasks/"+plain.Data.ID+"/webhooks/resend", "")
	require.Equal(t, http.StatusConflict, status, "%s", body)
	require.Contains(t, string(body), "JOB_HAS_NO_WEBHOOK")
	status, body, _ = g.do(http.MethodPost, "/v1/transcriptions/"+job.Data.ID+"/webhooks/resend", "",
		"Authorization", "Bearer "+g.mint("globex", allJobScopes))
	require.Equal(t, http.StatusNotFound, status, "%s", body)

	// The CLI resends too.
	code, out := g.command("webhooks", "resend", job.Data.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, fmt.Sprintf("%d events resent", len(ids)))
	recv.waitForCalls(t, 3*len(first), 60*time.Second)

	// Recovery: a receiver down past the 4 s window.
	since := time.Now().UTC().Add(-time.Second)
	down := newHookReceiver(t, http.StatusServiceUnavailable)
	lost := g.create("llm-tasks", `{"data":{"type":"llm-task-job","attributes":{"provider":"sandbox-fast",
		"input":{"type":"text","text":"x","prompt":"y"},"webhook":{"url":"`+down.URL+`"}}}}`)
	record["webhook-given-up"] = lost.Data.ID
	require.Eventually(t, func() bool {
		for _, id := range g.failedWebhookJobs() {
			if id == lost.Data.ID {
				return true
			}
		}
		return false
	}, 60*time.Second, 250*time.Millisecond, "filter[webhook]=failed lists the job once its event was given up")
	require.NotContains(t, g.failedWebhookJobs(), job.Data.ID)
	tries := len(down.received())
	require.GreaterOrEqual(t, tries, 2, "retried before it was given up")
	lostID := down.received()[0].header.Get("webhook-id")

	// The job's search attribute.
	require.Eventually(t, func() bool {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: "GatewayWebhook = 'failed'"})
		require.NoError(t, err)
		for _, e := range resp.GetExecutions() {
			if e.GetExecution().GetWorkflowId() == lost.Data.ID {
				return true
			}
		}
		return false
	}, 30*time.Second, 250*time.Millisecond, "GatewayWebhook = 'failed' finds the job")

	// gateway jobs list --webhook failed.
	code, out = g.command("jobs", "list", "--webhook", "failed")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, lost.Data.ID)
	require.NotContains(t, out, job.Data.ID)

	// A dry run sends nothing.
	down.setAnswer(http.StatusOK)
	window := `{"since":"` + since.Format(time.RFC3339) + `","dry_run":true}`
	status, body, _ = g.do(http.MethodPost, "/v1/webhooks/recover", window)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var dry recoverDoc
	require.NoError(t, json.Unmarshal(body, &dry))
	require.Equal(t, 1, dry.Meta.Messages, "%s", body)
	require.Equal(t, lost.Data.ID, dry.Data[0].Attributes.JobID)
	code, out = g.command("webhooks", "recover", "--since", since.Format(time.RFC3339), "--dry-run")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "1 events of 1 jobs would be resent")
	// Another URL, or a window that ended before: nothing.
	status, body, _ = g.do(http.MethodPost, "/v1/webhooks/recover", `{"since":"`+since.Format(time.RFC3339)+`","url":"https://elsewhere.example/hooks","dry_run":true}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.Contains(t, string(body), `"messages":0`)
	status, body, _ = g.do(http.MethodPost, "/v1/webhooks/recover", `{"since":"`+since.Add(-time.Hour).Format(time.RFC3339)+`","until":"`+since.Format(time.RFC3339)+`"}`)
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	require.Contains(t, string(body), `"messages":0`)
	time.Sleep(time.Second)
	require.Len(t, down.received(), tries, "a dry run sends nothing")
	// A tenant other than its own needs super-admin; since is required.
	status, body, _ = g.do(http.MethodPost, "/v1/webhooks/recover", `{"since":"`+since.Format(time.RFC3339)+`","tenant":"globex"}`)
	require.Equal(t, http.StatusForbidden, status, "%s", body)
	status, body, _ = g.do(http.MethodPost, "/v1/webhooks/recover", `{}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%s", body)

	// Recovered: the same webhook-id, logged as recover; no longer failed.
	status, body, _ = g.do(http.MethodPost, "/v1/webhooks/recover", `{"since":"`+since.Format(time.RFC3339)+`","url":"`+down.URL+`"}`)
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	var recovered recoverDoc
	require.NoError(t, json.Unmarshal(body, &recovered))
	require.Equal(t, 1, recovered.Meta.Messages, "%s", body)
	require.Equal(t, []string{lostID}, recovered.Data[0].Attributes.MessageIDs)
	record["webhook-resend-recovered"] = recovered.Data[0].ID
	calls := down.waitForCalls(t, tries+1, 60*time.Second)
	require.Equal(t, lostID, calls[tries].header.Get("webhook-id"))
	require.NoError(t, webhooksign.Verify(pub, lostID, calls[tries].header.Get("webhook-timestamp"), calls[tries].body, calls[tries].header.Get("webhook-signature"), time.Now(), 0))
	require.Eventually(t, func() bool {
		return len(g.triggers("llm-tasks", lost.Data.ID)["recover"]) == 1 && len(g.failedWebhookJobs()) == 0
	}, 30*time.Second, 250*time.Millisecond, "the recovered attempt is logged, and the job no longer listed")
	require.Equal(t, []string{lostID + " 200"}, g.triggers("llm-tasks", lost.Data.ID)["recover"])
	// Recovered once: a second recovery finds nothing.
	status, body, _ = g.do(http.MethodPost, "/v1/webhooks/recover", `{"since":"`+since.Format(time.RFC3339)+`"}`)
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	require.Contains(t, string(body), `"messages":0`)

	dir := os.Getenv("GATEWAY_RECORD_HISTORIES")
	if dir == "" {
		return
	}
	for name, id := range record {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		require.NoError(t, tc.GetWorkflow(ctx, id, "").Get(ctx, nil), name)
		cancel()
		history := &historypb.History{Events: historyOf(context.Background(), t, tc, id)}
		data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(history)
		require.NoError(t, err)
		prefix := "job-v14-"
		if strings.HasPrefix(name, "webhook-resend") {
			prefix = ""
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, prefix+name+".json"), data, 0o644))
	}
}
