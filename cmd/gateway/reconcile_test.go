package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
	"github.com/ai-job-gateway/gateway/workflows"
)

// TestReconcileFailsJobsWhoseWorkflowEnded reproduces jobs left open for
// ever: the store holds them pending or processing while their workflow
// was terminated, or never started. One round of the reconciliation
// sweep fails them (WORKFLOW_CLOSED, JOB_NOT_STARTED), releases their
// budget reservation and sends the *.failed webhook of one that has a
// webhook, through the gateway's worker; a job whose workflow runs is
// left alone (docs/operations.md, Housekeeping).
func TestReconcileFailsJobsWhoseWorkflowEnded(t *testing.T) {
	t.Parallel()
	databaseURL := storetest.FreshPostgresURL(t)
	g := newGateway(t, databaseURL)
	st := storetest.Open(t, databaseURL)
	ctx := context.Background()

	// The gateway's own job_reconcile rounds must not fail this test's
	// jobs first: the test holds the lock each round takes, so they skip.
	holdReconcileRounds(t, st)

	keys, _, _ := payloadKeysFor(t, "jobs", "--data-dir", g.dataDir) // dev's key
	enc := payloadcodec.New(keys, st.Keys.PayloadSecrets(), payloadcodec.Options{})
	dc := payloadcodec.DataConverter(converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), enc.WorkflowCodec(st.Keys.JobTenant)))
	tc, err := client.Dial(client.Options{HostPort: g.temporal, DataConverter: dc})
	require.NoError(t, err)
	t.Cleanup(tc.Close)

	events := make(chan []byte, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		events <- body
	}))
	t.Cleanup(receiver.Close)

	budget := store.Budget{ID: "b-" + uuid.NewString()[:8], Period: store.PeriodDay, Unit: "minute", Limit: 100e9}
	created := time.Now().Add(-5 * time.Minute)
	// open records a job in status as the API would have, its start gone
	// from the outbox, with a budget reservation.
	open := func(status jobs.Status) string {
		t.Helper()
		job := &jobs.Record{ID: uuid.Must(uuid.NewV7()).String(), Service: jobs.LLMTasks, Tenant: "acme", UserID: "alice",
			Status: status, Input: `{"type":"text","text":"x","prompt":"y"}`, Options: "{}", CreatedAt: created.UTC()}
		require.NoError(t, st.Jobs.SaveJob(ctx, job))
		out, err := st.Usage.ReserveBudget(ctx, job.ID, "acme", []store.BudgetCharge{{Budget: budget, Amount: 1e9}}, time.Now())
		require.NoError(t, err)
		require.True(t, out.OK)
		return job.ID
	}
	// started starts the job's workflow on a queue no worker polls, so it
	// records nothing.
	started := func(id string, webhook *jobs.Webhook) {
		t.Helper()
		sub := jobs.Submission{JobID: id, Service: jobs.LLMTasks, Tenant: "acme", UserID: "alice", Webhook: webhook}
		_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.JobWorkflowID(id), TaskQueue: "nobody-" + id},
			workflows.JobWorkflowName, sub)
		require.NoError(t, err)
	}
	terminated := open(jobs.StatusPending)
	started(terminated, &jobs.Webhook{URL: receiver.URL + "/hook"})
	require.NoError(t, tc.TerminateWorkflow(ctx, terminated, "", "test: ended outside the job's code"))
	processing := open(jobs.StatusProcessing)
	started(processing, nil)
	require.NoError(t, tc.TerminateWorkflow(ctx, processing, "", "test"))
	running := open(jobs.StatusPending)
	started(running, nil)
	t.Cleanup(func() { _ = tc.TerminateWorkflow(context.Background(), running, "", "test over") })
	neverStarted := open(jobs.StatusPending)

	// The case the sweep is for: a worker given another key under the
	// same id, decoding as before a decode failure failed the task (a
	// codec converter without payloadcodec.DataConverter), failed the
	// workflow at its first task, and the job stayed pending.
	undecodable := open(jobs.StatusPending)
	wrongKeys, err := payloadcodec.NewKeyring(keys.Current(), map[string][]byte{keys.Current(): payloadcodec.GenerateKey()})
	require.NoError(t, err)
	wrongEnc := payloadcodec.New(wrongKeys, st.Keys.PayloadSecrets(), payloadcodec.Options{})
	wrongClient, err := client.Dial(client.Options{HostPort: g.temporal,
		DataConverter: converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), wrongEnc.WorkflowCodec(st.Keys.JobTenant))})
	require.NoError(t, err)
	t.Cleanup(wrongClient.Close)
	wrongQueue := "wrong-key-" + undecodable
	wrongWorker := worker.New(wrongClient, wrongQueue, worker.Options{})
	wrongWorker.RegisterWorkflowWithOptions(workflows.JobWorkflow, workflow.RegisterOptions{Name: workflows.JobWorkflowName})
	require.NoError(t, wrongWorker.Start())
	_, err = tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.JobWorkflowID(undecodable), TaskQueue: wrongQueue},
		workflows.JobWorkflowName, jobs.Submission{JobID: undecodable, Service: jobs.LLMTasks, Tenant: "acme", UserID: "alice",
			Webhook: &jobs.Webhook{URL: receiver.URL + "/hook"}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		desc, err := tc.DescribeWorkflowExecution(ctx, workflows.JobWorkflowID(undecodable), "")
		return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_FAILED
	}, 2*time.Minute, 100*time.Millisecond, "the wrong key's worker fails the workflow (as before the fix)")
	wrongWorker.Stop()

	m := metrics.New()
	rec := newReconciler(st, tc, dc, m, slog.Default())
	failed, err := rec.sweep(ctx, time.Now())
	require.NoError(t, err)
	require.Equal(t, 4, failed)

	for id, code := range map[string]string{terminated: jobs.CodeWorkflowClosed, processing: jobs.CodeWorkflowClosed,
		undecodable: jobs.CodeWorkflowClosed, neverStarted: jobs.CodeNotStarted} {
		job, err := st.Jobs.GetJob(ctx, id)
		require.NoError(t, err)
		require.Equal(t, jobs.StatusFailed, job.Status, id)
		require.Equal(t, code, job.ErrorCode, id)
	}
	used, err := st.Usage.BudgetUsed(ctx, "acme", budget, time.Now())
	require.NoError(t, err)
	require.Equal(t, store.BudgetUse{Reserved: 1e9}, used, "the four failed jobs' reservations are given back, the running one's kept")
	job, err := st.Jobs.GetJob(ctx, terminated)
	require.NoError(t, err)
	require.Contains(t, job.ErrorMessage, "terminated")
	job, err = st.Jobs.GetJob(ctx, running)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusPending, job.Status, "a job whose workflow runs is left alone")

	// Each job with a webhook gets its *.failed event, once.
	webhooked := map[string]bool{}
	for len(webhooked) < 2 {
		select {
		case body := <-events:
			var event struct {
				Event string `json:"event"`
				Data  struct {
					ID         string `json:"id"`
					Attributes struct {
						Status string     `json:"status"`
						Error  jobs.Error `json:"error"`
					} `json:"attributes"`
				} `json:"data"`
			}
			require.NoError(t, json.Unmarshal(body, &event), "%s", body)
			require.Equal(t, "llm-task.failed", event.Event)
			require.Contains(t, []string{terminated, undecodable}, event.Data.ID)
			require.False(t, webhooked[event.Data.ID], "one event a job: %s", body)
			webhooked[event.Data.ID] = true
			require.Equal(t, "failed", event.Data.Attributes.Status)
			require.Equal(t, jobs.CodeWorkflowClosed, event.Data.Attributes.Error.Code)
		case <-time.After(60 * time.Second):
			t.Fatalf("the *.failed webhooks never came: %v of the terminated and the undecodable job", webhooked)
		}
	}
	for _, id := range []string{terminated, undecodable} {
		// The attempt is recorded once the receiver has answered.
		var deliveries []store.WebhookDelivery
		require.Eventually(t, func() bool {
			deliveries, err = st.Webhooks.ListDeliveries(ctx, id)
			return err == nil && len(deliveries) > 0
		}, 60*time.Second, 50*time.Millisecond, "the delivery of %s is recorded", id)
		require.Equal(t, id+"-1", deliveries[0].MessageID)
	}

	again, err := rec.sweep(ctx, time.Now())
	require.NoError(t, err)
	require.Zero(t, again, "nothing left to fail")
	scraped := httptest.NewRecorder()
	m.Handler().ServeHTTP(scraped, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := scraped.Body.String()
	require.Contains(t, body, `gateway_jobs_reconciled_total{code="WORKFLOW_CLOSED"} 3`)
	require.Contains(t, body, `gateway_jobs_reconciled_total{code="JOB_NOT_STARTED"} 1`)
}

// holdReconcileRounds holds the lock of the job_reconcile rounds
// (housekeeping.Runner) until the test ends, waiting out a round that
// holds it now.
func holdReconcileRounds(t *testing.T, st *store.Store) {
	t.Helper()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	deadline := time.Now().Add(time.Minute)
	for {
		held := make(chan bool, 1)
		go func() {
			ran, _ := st.Housekeeping.TryExclusive(context.Background(), "housekeeping:job_reconcile", func(context.Context) error {
				held <- true
				<-release
				return nil
			})
			if !ran {
				held <- false
			}
		}()
		if <-held {
			return
		}
		require.True(t, time.Now().Before(deadline), "a job_reconcile round of the gateway held its lock for a minute")
		time.Sleep(100 * time.Millisecond)
	}
}
