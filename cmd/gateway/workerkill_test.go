package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/ai-job-gateway/gateway/providers/providertest"
)

// longCallLatency is the sandbox call of TestWorkerKilledMidCallResumes:
// long enough to kill the worker in the middle of it, and for a second
// attempt that started over to be told apart from one that resumed.
const longCallLatency = 20 * time.Second

// TestWorkerKilledMidCallResumesFromHeartbeat: in the production shape,
// the worker is killed with SIGKILL halfway through a provider call (a
// regular, heartbeating activity). Another worker takes the call's second
// attempt once the heartbeat timeout expires, resumes it from the progress
// the first attempt heartbeated, and the job ends once, completed.
func TestWorkerKilledMidCallResumesFromHeartbeat(t *testing.T) {
	t.Parallel()
	shape := startProductionShape(t, providertest.SandboxCatalog("sandbox-long", longCallLatency.Milliseconds()), jobStartsServe)
	apiURL := "http://" + shape.api.listen
	tc := temporalClient(t, shape.temporal)
	host, err := os.Hostname()
	require.NoError(t, err)
	workerIdentity := fmt.Sprintf("%s-%d", host, shape.worker.cmd.Process.Pid)

	// The Temporal server of this shape is a gateway dev's, whose own
	// worker polls the same task queue: take a job whose call runs on the
	// worker process, cancelling the others.
	var id string
	for try := 0; id == "" && try < 10; try++ {
		status, body := post(t, apiURL+"/v1/llm-tasks", shape.server.token,
			llmTaskBody)
		require.Equal(t, http.StatusAccepted, status, "%s", body)
		var doc jobDoc
		require.NoError(t, json.Unmarshal(body, &doc))
		var identity string
		require.Eventually(t, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			desc, err := tc.DescribeWorkflowExecution(ctx, doc.Data.ID, "")
			if err != nil || len(desc.GetPendingActivities()) == 0 {
				return false
			}
			identity = desc.GetPendingActivities()[0].GetLastWorkerIdentity()
			return identity != ""
		}, 30*time.Second, 50*time.Millisecond, "the call of job %s never started", doc.Data.ID)
		if identity == workerIdentity {
			id = doc.Data.ID
			break
		}
		status, body = post(t, apiURL+"/v1/llm-tasks/"+doc.Data.ID+"/cancel", shape.server.token, "")
		require.Equal(t, http.StatusAccepted, status, "%s", body)
	}
	require.NotEmpty(t, id, "no call of ten ran on the worker process")

	read := func() jobDoc {
		var d jobDoc
		_ = json.Unmarshal(get(t, apiURL+"/v1/llm-tasks/"+id, shape.server.token), &d)
		return d
	}
	var before int
	require.Eventually(t, func() bool {
		d := read()
		if d.Data.Attributes.Progress != nil {
			before = *d.Data.Attributes.Progress
		}
		return before >= 50
	}, 30*time.Second, 100*time.Millisecond, "the call never reached half way")
	shape.restartWorker(t)

	require.Eventually(t, func() bool { return read().Data.Attributes.Status == "completed" },
		90*time.Second, 250*time.Millisecond, "job %s", id)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var attempts []int32
	var second time.Duration
	var startedAt time.Time
	for _, ev := range historyOf(ctx, t, tc, id) {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			attempts = append(attempts, ev.GetActivityTaskStartedEventAttributes().GetAttempt())
			startedAt = ev.GetEventTime().AsTime()
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			second = ev.GetEventTime().AsTime().Sub(startedAt)
		}
	}
	// One provider call, completed on its second attempt.
	require.Equal(t, []int32{2}, attempts, "the call's attempts in the history")
	// Resumed from at least half way: what was left of the call, not all
	// of it again (a fresh attempt sleeps the whole latency).
	require.Less(t, second, longCallLatency*(100-time.Duration(before))/100+6*time.Second,
		"second attempt took %s after the first reached %d%%", second, before)

	// The job ran once.
	require.Eventually(t, func() bool {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowId = '" + id + "'"})
		return err == nil && len(resp.GetExecutions()) == 1 &&
			resp.GetExecutions()[0].GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}, 20*time.Second, 250*time.Millisecond, "job %s in Temporal's visibility", id)
}
