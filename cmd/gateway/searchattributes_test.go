package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/providers/providertest"
)

// TestOperatorsFindJobsInTheTemporalUI: dev registers the search
// attributes; a job's workflow carries tenant, service, provider, status
// and error code, a summary, and summaries on its activities.
func TestOperatorsFindJobsInTheTemporalUI(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "")
	tc := temporalClient(t, g.temporal)
	ctx := context.Background()

	require.NoError(t, registerSearchAttributes(ctx, tc, "default"), "registering again changes nothing")

	done := g.create("llm-tasks", llmTaskBody)
	failed := g.createUnroutable()
	doneDoc := g.waitFor("llm-tasks", done.Data.ID, 60*time.Second, terminal)
	g.waitFor("llm-tasks", failed.Data.ID, 60*time.Second, terminal)

	find := func(query string) []string {
		t.Helper()
		var ids []string
		deadline := time.Now().Add(30 * time.Second) // visibility is eventually consistent
		for {
			resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: query})
			require.NoError(t, err, query)
			ids = ids[:0]
			for _, e := range resp.GetExecutions() {
				ids = append(ids, e.GetExecution().GetWorkflowId())
			}
			if len(ids) > 0 || time.Now().After(deadline) {
				return ids
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	require.Equal(t, []string{failed.Data.ID}, find(`GatewayTenant = 'acme' AND GatewayService = 'llm-tasks' AND GatewayStatus = 'failed' AND GatewayErrorCode = 'NO_ELIGIBLE_PROVIDER'`))
	require.Equal(t, []string{done.Data.ID}, find(`GatewayStatus = 'completed' AND GatewayProvider = '`+doneDoc.Data.Attributes.Provider+`'`))

	desc, err := tc.DescribeWorkflowExecution(ctx, done.Data.ID, "")
	require.NoError(t, err)
	require.NotNil(t, desc.GetExecutionConfig().GetUserMetadata().GetSummary(), "the workflow has a summary")
	var summary string
	require.NoError(t, converterFrom(desc.GetExecutionConfig().GetUserMetadata().GetSummary(), &summary))
	require.Equal(t, "llm-task for acme", summary)
	// The UI's "current details" come from the SDK's metadata query.
	value, err := tc.QueryWorkflow(ctx, done.Data.ID, "", "__temporal_workflow_metadata")
	require.NoError(t, err)
	var metadata sdkpb.WorkflowMetadata
	require.NoError(t, value.Get(&metadata))
	require.Equal(t, "llm-task for acme via "+doneDoc.Data.Attributes.Provider+", completed", metadata.GetCurrentDetails())

	var summaries []string
	for _, event := range historyOf(ctx, t, tc, done.Data.ID) {
		if s := event.GetUserMetadata().GetSummary(); s != nil {
			var text string
			require.NoError(t, converterFrom(s, &text))
			summaries = append(summaries, text)
		}
	}
	require.Contains(t, summaries, "choose a provider (attempt 1)")
	// The default generation (4) projects a short call's success in the
	// call's own local activity (docs/workflow-versions.md).
	require.Contains(t, summaries, "call "+doneDoc.Data.Attributes.Provider+" (attempt 1), then project the job as completed")

	status, _, _ := g.do(http.MethodGet, "/v1/llm-tasks/"+done.Data.ID, "")
	require.Equal(t, http.StatusOK, status)

	// The same story in the metrics, without ids.
	resp, err := http.Get(g.url("/metrics"))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	metrics := string(body)
	require.Contains(t, metrics, `gateway_jobs_finished_total{error_code="NO_ELIGIBLE_PROVIDER",provider="",service="llm-tasks",status="failed"} 1`)
	require.Contains(t, metrics, `gateway_jobs_finished_total{error_code="",provider="`+doneDoc.Data.Attributes.Provider+`",service="llm-tasks",status="completed"} 1`)
	require.Contains(t, metrics, `gateway_jobs_accepted_total{service="llm-tasks"} 2`)
	require.Contains(t, metrics, `gateway_routing_decisions_total{policy_source="tenant_application",reason="none",service="llm-tasks"} 1`)
	require.Contains(t, metrics, `gateway_store_write_duration_seconds_count{operation="save_job",outcome="ok"}`, "the projection writes")
	require.NotContains(t, metrics, done.Data.ID)
	require.Contains(t, metrics, "temporal_workflow_completed", "the Temporal SDK's own metrics")
}

// converterFrom decodes a user metadata payload (a JSON string).
func converterFrom(p *commonpb.Payload, into *string) error {
	return converter.GetDefaultDataConverter().FromPayload(p, into)
}

// gatewayCommand runs the gateway binary with args against g's Temporal
// and store, and returns its exit code and output.
func (g *gateway) command(args ...string) (int, string) {
	g.t.Helper()
	var full []string
	if args[0] == "jobs" || args[0] == "webhooks" {
		full = append([]string{args[0], args[1], "--temporal-address", g.temporal, "--data-dir", g.dataDir}, args[2:]...)
	} else {
		full = append([]string{args[0], "--temporal-address", g.temporal, "--data-dir", g.dataDir}, args[1:]...)
	}
	cmd := exec.Command(gatewayBin, full...)
	cmd.Env = g.env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	}
	require.NoError(g.t, err)
	return 0, string(out)
}

func TestJobsAndReplayCommands(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "")
	ok := g.create("llm-tasks", llmTaskBody)
	bad := g.createUnroutable()
	g.waitFor("llm-tasks", ok.Data.ID, 60*time.Second, terminal)
	g.waitFor("llm-tasks", bad.Data.ID, 60*time.Second, terminal)

	// migrate registers the search attributes on a cluster: here dev's,
	// which has them, so it adds nothing and succeeds.
	migrate := exec.Command(gatewayBin, "migrate", "--data-dir", g.dataDir, "--temporal-address", g.temporal)
	migrate.Env = g.env
	out0, err := migrate.CombinedOutput()
	require.NoError(t, err, "%s", out0)
	require.Contains(t, string(out0), "search attributes are registered")

	code, out := g.command("jobs", "list", "--status", "failed")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, bad.Data.ID)
	require.Contains(t, out, "NO_ELIGIBLE_PROVIDER")
	require.NotContains(t, out, ok.Data.ID)

	code, out = g.command("jobs", "show", ok.Data.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "status    completed")
	require.Contains(t, out, "attempt 1")
	require.Contains(t, out, "project the job as completed", "the history's summaries")

	code, out = g.command("jobs", "show", ok.Data.ID, "-o", "json")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `"status": "completed"`)
	require.Contains(t, out, `(attempt 1), then project the job as completed"`, "the workflow's steps (the default generation projects in the call's step)")

	missing := "01936f2a-0000-7000-8000-000000000000"
	code, out = g.command("jobs", "history", missing)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "job "+missing+" not found")

	file := filepath.Join(t.TempDir(), "job.json")
	code, out = g.command("jobs", "history", ok.Data.ID, "--out", file)
	require.Equal(t, 0, code, out)

	code, out = g.command("replay", file, bad.Data.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "2 job histories replay on this binary")

	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out = g.command("replay")
		if strings.Contains(out, "2 job histories replay") || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond) // visibility lags the close
	}
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "2 job histories replay on this binary", "the recent closed jobs")

	// A history this binary's workflow code would not produce.
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	broken := filepath.Join(t.TempDir(), "broken.json")
	require.NoError(t, os.WriteFile(broken, []byte(strings.Replace(string(data), `"markerName": "LocalActivity"`, `"markerName": "SideEffect"`, 1)), 0o644))
	code, out = g.command("replay", file, broken)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "broken.json does not replay on this binary (2 of 2 checked)")
}

// TestRetryFailedJobs: jobs that failed while their provider was disabled
// are retried after it is enabled again, under their own ids, keeping
// their routing history and continuing their attempt numbers.
func TestRetryFailedJobs(t *testing.T) {
	t.Parallel()
	broken := sandboxLLMProvider("sandbox-broken", "Sandbox (always fails)", 0, 1, "0.01")
	g := newGateway(t, "", "--providers", writeCatalog(t, providertest.SandboxCatalog("sandbox-solo", 0)+broken))
	adminToken := strings.TrimSpace(func() string {
		out, err := exec.Command(gatewayBin, "token", "--data-dir", g.dataDir, "--tenant", "acme", "--sub", "sre",
			"--scope", "providers:write providers:read", "--super-admin").Output()
		require.NoError(t, err)
		return string(out)
	}())
	setStatus := func(status string) {
		t.Helper()
		for _, id := range []string{"sandbox-solo", "sandbox-broken"} {
			setProviderStatus(t, g, adminToken, id, status)
		}
	}
	body := llmTaskBody
	first := g.create("llm-tasks", body)
	g.waitFor("llm-tasks", first.Data.ID, 60*time.Second, terminal)
	code, out := g.command("jobs", "retry", first.Data.ID)
	require.Equal(t, 1, code, "a completed job is not retried: %s", out)
	require.Contains(t, out, "only failed jobs are retried")
	status, refused, _ := g.do(http.MethodPost, "/v1/llm-tasks/"+first.Data.ID+"/retry", "")
	require.Equal(t, http.StatusConflict, status, "%s", refused)
	require.Contains(t, string(refused), "JOB_NOT_RETRYABLE")

	setStatus("disabled")
	failing := g.create("llm-tasks", body)
	g.waitFailed("llm-tasks", failing.Data.ID, 60*time.Second, "NO_ELIGIBLE_PROVIDER")
	setStatus("active")

	code, out = g.command("jobs", "retry", "--error-code", "NO_ELIGIBLE_PROVIDER", "--dry-run")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, failing.Data.ID+"  would retry")
	require.Equal(t, "failed", g.get("llm-tasks", failing.Data.ID).Data.Attributes.Status, "a dry run changes nothing")

	code, out = g.command("jobs", "retry", "--error-code", "NO_ELIGIBLE_PROVIDER")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, failing.Data.ID+"  retried")
	completed := func(d jobDoc) bool { return d.Data.Attributes.Status == "completed" }
	done := g.waitFor("llm-tasks", failing.Data.ID, 60*time.Second, completed)
	require.Nil(t, done.Data.Attributes.Error)
	require.Equal(t, "sandbox-solo", done.Data.Attributes.Provider)

	// A job that failed on its provider: the retry keeps the routing
	// history and continues the attempt numbers.
	exhausted := g.create("llm-tasks", `{"data":{"type":"llm-task-job","attributes":{"provider":"sandbox-broken","input":{"type":"text","text":"x","prompt":"y"}}}}`)
	g.waitFor("llm-tasks", exhausted.Data.ID, 90*time.Second, terminal)
	code, out = g.command("jobs", "retry", exhausted.Data.ID)
	require.Equal(t, 0, code, out)
	again := g.waitFor("llm-tasks", exhausted.Data.ID, 90*time.Second, func(d jobDoc) bool {
		return terminal(d) && len(d.Data.Attributes.RoutingHistory) == 2
	})
	require.Equal(t, "PROVIDERS_EXHAUSTED", again.Data.Attributes.Error.Code, "it fails again: its provider still fails")
	var second struct {
		Attempt int    `json:"attempt"`
		Reason  string `json:"reason"`
	}
	require.NoError(t, json.Unmarshal(again.Data.Attributes.RoutingHistory[1], &second))
	require.Equal(t, 2, second.Attempt, "attempt numbers continue")
	require.Equal(t, "explicit_choice", second.Reason, "a retry is routed afresh, not as a failover")

	code, out = g.command("jobs", "retry", "--error-code", "NO_ELIGIBLE_PROVIDER")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "0 retried, 0 not", "run again, a bulk retry finds nothing left")

	// Retried by its tenant over the API (docs/api.md, Retrying a failed
	// job), once a provider is back.
	setStatus("disabled")
	viaAPI := g.create("llm-tasks", body)
	g.waitFailed("llm-tasks", viaAPI.Data.ID, 60*time.Second, "NO_ELIGIBLE_PROVIDER")
	setStatus("active")
	status, answer, _ := g.do(http.MethodPost, "/v1/llm-tasks/"+viaAPI.Data.ID+"/retry", "")
	require.Equal(t, http.StatusAccepted, status, "%s", answer)
	done = g.waitFor("llm-tasks", viaAPI.Data.ID, 60*time.Second, completed)
	require.Nil(t, done.Data.Attributes.Error)
}

// setProviderStatus sets a provider's status with the admin API.
func setProviderStatus(t *testing.T, g *gateway, token, id, status string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPatch, g.url("/v1/providers/"+id),
		strings.NewReader(`{"data":{"type":"provider","id":"`+id+`","attributes":{"status":"`+status+`"}}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
