package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/workflows"
)

// TestRetentionEndToEnd: the worker makes the hourly schedule, which the
// embedded server runs; a sweep at a later time (the workflow's Now: the
// schedule's runs take their start time) erases a tenant's expired result
// and its file, then deletes its expired job, and /metrics counts them.
func TestRetentionEndToEnd(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t) // the transcription renders a result file
	g := newGateway(t, "")
	out, err := exec.Command(gatewayBin, "token", "--data-dir", g.dataDir, "--tenant", "ops", "--sub", "sre", "--super-admin").Output()
	require.NoError(t, err)
	admin := strings.TrimSpace(string(out))
	status, body, _ := g.do(http.MethodPost, "/v1/tenants", `{"data":{"id":"acme","type":"tenant","attributes":{"retention":{"results_seconds":60,"jobs_seconds":120}}}}`,
		"Authorization", "Bearer "+admin)
	require.Equal(t, http.StatusCreated, status, "%s", body)

	job := g.create("transcriptions", jobsOfEachService(g)["transcriptions"])
	id := job.Data.ID
	done := g.waitEnded("transcriptions", id, 90*time.Second, "completed")
	completed := *done.Data.Attributes.CompletedAt
	var shown struct {
		Data struct {
			Attributes struct {
				ResultExpiresAt time.Time `json:"result_expires_at"`
			} `json:"attributes"`
		} `json:"data"`
	}
	_, body, _ = g.do(http.MethodGet, "/v1/transcriptions/"+id, "")
	require.NoError(t, json.Unmarshal(body, &shown))
	attrs := shown.Data.Attributes
	require.True(t, attrs.ResultExpiresAt.Equal(completed.Add(time.Minute)), "result_expires_at %s, completed_at %s", attrs.ResultExpiresAt, completed)
	status, body, _ = g.do(http.MethodGet, "/v1/transcriptions/"+id+"/result", "", "Accept", "application/json")
	require.Equal(t, http.StatusOK, status, "%s", body)
	link := resultMember[string](t, body, "download_url")
	require.Equal(t, http.StatusOK, httpStatus(t, link), "the result file")

	ctx := context.Background()
	// Payloads are encrypted: the client encodes and decodes them with
	// the gateway's codec server; the sweep's are in _system, which only a
	// super-admin's token reaches.
	out, err = exec.Command(gatewayBin, "token", "--data-dir", g.dataDir, "--tenant", "ops", "--sub", "sre", "--scope", "admin:codec", "--super-admin").Output()
	require.NoError(t, err)
	codecToken := strings.TrimSpace(string(out))
	codec := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: g.url("/codec"),
		ModifyRequest: func(r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+codecToken)
			r.Header.Set(payloadcodec.ScopeHeader, payloadcodec.SystemScope)
			return nil
		}})
	tc, err := client.Dial(client.Options{HostPort: g.temporal,
		DataConverter: converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codec)})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	schedule := tc.ScheduleClient().GetHandle(ctx, workflows.RetentionScheduleID)
	desc, err := schedule.Describe(ctx)
	require.NoError(t, err, "the worker made the schedule")
	require.Equal(t, enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, desc.Schedule.Policy.Overlap)
	require.Equal(t, time.Hour, desc.Schedule.Spec.Intervals[0].Every)
	// Triggered now, the schedule's run expires nothing yet: the result
	// is a minute old at most.
	require.NoError(t, schedule.Trigger(ctx, client.ScheduleTriggerOptions{}))
	var runID string
	require.Eventually(t, func() bool {
		desc, err = schedule.Describe(ctx)
		require.NoError(t, err)
		if len(desc.Info.RecentActions) == 0 {
			return false
		}
		runID = desc.Info.RecentActions[0].StartWorkflowResult.WorkflowID
		return true
	}, 30*time.Second, 200*time.Millisecond, "the embedded server runs schedules")
	require.True(t, strings.HasPrefix(runID, workflows.RetentionWorkflowID), runID)
	var counts workflows.RetentionCounts
	require.NoError(t, tc.GetWorkflow(ctx, runID, "").Get(ctx, &counts))

	sweep := func(at time.Time) workflows.RetentionCounts {
		t.Helper()
		run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "retention-test-" + at.Format("150405.000"), TaskQueue: workflows.TaskQueue},
			workflows.RetentionWorkflowName, workflows.RetentionInput{Now: at})
		require.NoError(t, err)
		var counts workflows.RetentionCounts
		require.NoError(t, run.Get(ctx, &counts))
		return counts
	}

	// 90 s after it completed: the result expired, the job not yet.
	require.Equal(t, workflows.RetentionCounts{Results: 1}, sweep(completed.Add(90*time.Second)))
	doc := g.get("transcriptions", id)
	require.Equal(t, "completed", doc.Data.Attributes.Status)
	require.Empty(t, doc.Data.Attributes.Result)
	status, body, _ = g.do(http.MethodGet, "/v1/transcriptions/"+id+"/result", "")
	require.Equal(t, http.StatusGone, status, "%s", body)
	require.Contains(t, string(body), `"RESULT_EXPIRED"`)
	require.NotEqual(t, http.StatusOK, httpStatus(t, link), "the result file is gone")

	// 3 min after: the job is deleted, as DELETE does.
	require.Equal(t, workflows.RetentionCounts{Jobs: 1}, sweep(completed.Add(3*time.Minute)))
	status, body, _ = g.do(http.MethodGet, "/v1/transcriptions/"+id, "")
	require.Equal(t, http.StatusGone, status, "%s", body)
	require.Contains(t, string(body), `"JOB_DELETED"`)

	resp, err := http.Get(g.url("/metrics"))
	require.NoError(t, err)
	defer resp.Body.Close()
	metrics, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range []string{
		`gateway_retention_expired_total{kind="results"} 1`,
		`gateway_retention_expired_total{kind="jobs"} 1`,
		`gateway_retention_sweeps_total{outcome="ok"} 3`,
	} {
		require.Contains(t, string(metrics), line)
	}
}

// httpStatus is the status of a GET of url.
func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}
