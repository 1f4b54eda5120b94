package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/mocks"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
	"github.com/ai-job-gateway/gateway/workflows"
)

// reconcileFixture is a reconciler over a fresh SQLite store and a mocked
// Temporal client, the jobs in it created at a fixed time before now.
type reconcileFixture struct {
	ctx      context.Context
	st       *store.Store
	temporal *mocks.Client
	rec      *reconciler
	now      time.Time
}

func newReconcileFixture(t *testing.T) *reconcileFixture {
	t.Helper()
	st := storetest.SQLite(t)
	tc := mocks.NewClient(t)
	return &reconcileFixture{ctx: context.Background(), st: st, temporal: tc,
		rec: newReconciler(st, tc, nil, nil, slog.Default()), now: time.Now().UTC().Truncate(time.Millisecond)}
}

// job records a job in status created age before now, its start out of
// the outbox.
func (f *reconcileFixture) job(t *testing.T, status jobs.Status, age time.Duration) string {
	t.Helper()
	job := &jobs.Record{ID: uuid.Must(uuid.NewV7()).String(), Service: jobs.LLMTasks, Tenant: "acme", UserID: "alice",
		Status: status, Input: `{"type":"text","text":"x","prompt":"y"}`, Options: "{}", CreatedAt: f.now.Add(-age)}
	require.NoError(t, f.st.Jobs.SaveJob(f.ctx, job))
	return job.ID
}

func (f *reconcileFixture) status(t *testing.T, id string) jobs.Status {
	t.Helper()
	job, err := f.st.Jobs.GetJob(f.ctx, id)
	require.NoError(t, err)
	return job.Status
}

func described(status enumspb.WorkflowExecutionStatus) *workflowservice.DescribeWorkflowExecutionResponse {
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: status}}
}

// describeBy answers DescribeWorkflowExecution with answer(job id).
func (f *reconcileFixture) describeBy(answer func(ctx context.Context, jobID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)) {
	f.temporal.On("DescribeWorkflowExecution", mock.Anything, mock.Anything, "").Return(
		func(ctx context.Context, workflowID, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
			return answer(ctx, strings.TrimPrefix(workflowID, workflows.JobWorkflowID("")))
		})
}

// A pending job Temporal does not know, younger than an outbox lease,
// and jobs whose workflow runs or continued as new are left alone.
func TestReconcileLeavesJobsWhoseWorkflowMayRun(t *testing.T) {
	t.Parallel()
	f := newReconcileFixture(t)
	young := f.job(t, jobs.StatusPending, 70*time.Second) // past reconcileMinAge, not neverStartedAge
	running := f.job(t, jobs.StatusProcessing, time.Hour)
	continued := f.job(t, jobs.StatusProcessing, time.Hour)
	f.describeBy(func(_ context.Context, id string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
		switch id {
		case running:
			return described(enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING), nil
		case continued:
			return described(enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW), nil
		}
		return nil, serviceerror.NewNotFound("no such workflow")
	})
	failed, err := f.rec.sweep(f.ctx, f.now)
	require.NoError(t, err)
	require.Zero(t, failed)
	require.Equal(t, jobs.StatusPending, f.status(t, young))
	require.Equal(t, jobs.StatusProcessing, f.status(t, running))
	require.Equal(t, jobs.StatusProcessing, f.status(t, continued))
	f.temporal.AssertNumberOfCalls(t, "DescribeWorkflowExecution", 3)
}

// Temporal unreachable: the round fails nothing, stops at its first call,
// and the next round checks the same jobs again.
func TestReconcileStopsAtATemporalOutage(t *testing.T) {
	t.Parallel()
	f := newReconcileFixture(t)
	ids := []string{f.job(t, jobs.StatusPending, 3*time.Hour), f.job(t, jobs.StatusPending, 2*time.Hour), f.job(t, jobs.StatusPending, time.Hour)}
	var mu sync.Mutex
	down := true
	f.describeBy(func(context.Context, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return nil, serviceerror.NewUnavailable("connection refused")
		}
		return nil, serviceerror.NewNotFound("no such workflow")
	})
	failed, err := f.rec.sweep(f.ctx, f.now)
	require.Error(t, err)
	require.Zero(t, failed)
	f.temporal.AssertNumberOfCalls(t, "DescribeWorkflowExecution", 1)
	for _, id := range ids {
		require.Equal(t, jobs.StatusPending, f.status(t, id))
	}

	mu.Lock()
	down = false
	mu.Unlock()
	failed, err = f.rec.sweep(f.ctx, f.now)
	require.NoError(t, err)
	require.Equal(t, 3, failed, "the next round starts where the last stopped, at the first")
}

// A round pages on through the open jobs until it reaches the newest or
// its budget runs out; the next round goes on from the job it stopped at.
func TestReconcileWalksPagesWithinItsBudget(t *testing.T) {
	t.Parallel()
	f := newReconcileFixture(t)
	f.rec.page = 2
	f.rec.budget = 2 * time.Second
	var ids []string
	for i := range 5 {
		ids = append(ids, f.job(t, jobs.StatusPending, time.Duration(10-i)*time.Hour))
	}
	var mu sync.Mutex
	slow := ids[3] // Temporal answers it only after the budget
	f.describeBy(func(ctx context.Context, id string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
		mu.Lock()
		wait := id == slow
		mu.Unlock()
		if wait {
			<-ctx.Done()
			return nil, serviceerror.NewDeadlineExceeded(ctx.Err().Error())
		}
		return nil, serviceerror.NewNotFound("no such workflow")
	})
	failed, err := f.rec.sweep(f.ctx, f.now)
	require.NoError(t, err, "a round that used its time did not fail")
	require.Equal(t, 3, failed, "past the first page, up to the budget's end")
	require.Equal(t, jobs.StatusPending, f.status(t, ids[3]))

	mu.Lock()
	slow = ""
	mu.Unlock()
	failed, err = f.rec.sweep(f.ctx, f.now)
	require.NoError(t, err)
	require.Equal(t, 2, failed, "from the job the last round stopped at, to the newest")
	for _, id := range ids {
		require.Equal(t, jobs.StatusFailed, f.status(t, id))
	}
}

// historyOfSubmission is a workflow history that starts with sub.
type historyOfSubmission struct{ events []*historypb.HistoryEvent }

func (h *historyOfSubmission) HasNext() bool { return len(h.events) > 0 }

func (h *historyOfSubmission) Next() (*historypb.HistoryEvent, error) {
	e := h.events[0]
	h.events = h.events[1:]
	return e, nil
}

// The *.failed webhook of a job the sweep fails is recorded with the
// failure: a send whose start failed is started by the next round, under
// the message's own workflow id, which is never run twice; once started,
// or once a delivery is recorded, it is left to its workflow.
func TestReconcileSendsTheFailedWebhookAtLeastOnce(t *testing.T) {
	t.Parallel()
	f := newReconcileFixture(t)
	id := f.job(t, jobs.StatusProcessing, time.Hour)
	f.describeBy(func(context.Context, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
		return described(enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED), nil
	})
	sub := jobs.Submission{JobID: id, Service: jobs.LLMTasks, Tenant: "acme", Webhook: &jobs.Webhook{URL: "https://hooks.example.test/h"}}
	input, err := converter.GetDefaultDataConverter().ToPayloads(sub)
	require.NoError(t, err)
	f.temporal.On("GetWorkflowHistory", mock.Anything, workflows.JobWorkflowID(id), "", false, mock.Anything).Return(
		func(context.Context, string, string, bool, enumspb.HistoryEventFilterType) client.HistoryEventIterator {
			return &historyOfSubmission{events: []*historypb.HistoryEvent{{Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
				WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{Input: &commonpb.Payloads{Payloads: input.GetPayloads()}},
			}}}}
		})
	var starts []client.StartWorkflowOptions
	var sent []workflows.WebhookResend
	answers := []error{serviceerror.NewUnavailable("connection refused"), nil, serviceerror.NewWorkflowExecutionAlreadyStarted("started", "", "")}
	f.temporal.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflows.WebhookResendWorkflowName, mock.Anything).Return(
		func(_ context.Context, opts client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
			starts = append(starts, opts)
			sent = append(sent, args[0].(workflows.WebhookResend))
			err := answers[0]
			answers = answers[1:]
			if err != nil {
				return nil, err
			}
			return &mocks.WorkflowRun{}, nil
		})

	failed, err := f.rec.sweep(f.ctx, f.now)
	require.Error(t, err, "Temporal went away at the start")
	require.Equal(t, 1, failed)
	require.Equal(t, jobs.StatusFailed, f.status(t, id))
	require.Len(t, starts, 1)

	_, err = f.rec.sweep(f.ctx, f.now.Add(reconcileEvery))
	require.NoError(t, err)
	require.Len(t, starts, 2, "the next round starts it again")
	require.Equal(t, starts[0].ID, starts[1].ID)
	require.Equal(t, workflows.WebhookResendWorkflowID(id, "reconciled-1"), starts[1].ID, "named after the message")
	require.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE, starts[1].WorkflowIDReusePolicy, "a send that ended is not made again")
	require.True(t, starts[1].WorkflowExecutionErrorWhenAlreadyStarted)
	require.Len(t, sent[1].Messages, 1)
	require.Equal(t, id+"-1", sent[1].Messages[0].MessageID)
	require.Equal(t, "llm-task.failed", sent[1].Messages[0].Event)
	require.Equal(t, jobs.StatusFailed, sent[1].Messages[0].Job.Status)
	require.Equal(t, "https://hooks.example.test/h", sent[1].Target.URL)

	_, err = f.rec.sweep(f.ctx, f.now.Add(2*reconcileEvery))
	require.NoError(t, err, "a send already started is done")
	require.Len(t, starts, 3)

	require.NoError(t, f.st.Webhooks.RecordDelivery(f.ctx, &store.WebhookDelivery{JobID: id, Event: "llm-task.failed", MessageID: id + "-1", Attempt: 1, AttemptedAt: f.now}))
	_, err = f.rec.sweep(f.ctx, f.now.Add(3*reconcileEvery))
	require.NoError(t, err)
	require.Len(t, starts, 3, "a delivery attempted: its workflow has it")
}
