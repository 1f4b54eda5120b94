package workflows_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/workflows"
)

const deletedJob = "0193a9d4-7c5e-7000-8000-0000000000de"

// erasureRun is a test environment for DeletionWorkflow whose erasure
// activities are mocked and record the order they ran in.
type erasureRun struct {
	env *testsuite.TestWorkflowEnvironment

	mu         sync.Mutex // guards the rest: activities run on their own goroutines
	steps      []string
	purged     []activities.VendorWork
	finished   []jobs.VendorCopy
	deliveries []activities.WebhookDelivery
}

func (r *erasureRun) step(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, name)
}

// deletionSetup mocks the erasure of deletedJob whose histories read as
// trail; purge answers PurgeVendorCopy.
func deletionSetup(t *testing.T, trail activities.JobTrail, purge func(activities.VendorWork) (string, error)) *erasureRun {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	r := &erasureRun{env: suite.NewTestWorkflowEnvironment()}
	r.env.RegisterWorkflowWithOptions(workflows.DeletionWorkflow, workflow.RegisterOptions{Name: workflows.DeletionWorkflowName})
	acts.Register(r.env)
	r.env.OnActivity(acts.Erasure.StopJobWorkflow, mock.Anything, deletedJob).Return(func(context.Context, string) error {
		r.step("stop")
		return nil
	}).Once()
	r.env.OnActivity(acts.Erasure.ReadJobTrail, mock.Anything, deletedJob).Return(func(context.Context, string) (activities.JobTrail, error) {
		r.step("read")
		return trail, nil
	}).Once()
	r.env.OnActivity(acts.Erasure.PurgeVendorCopy, mock.Anything, mock.Anything).Return(func(_ context.Context, w activities.VendorWork) (string, error) {
		r.mu.Lock()
		r.steps = append(r.steps, "purge "+w.ProviderID)
		r.purged = append(r.purged, w)
		r.mu.Unlock()
		return purge(w)
	}).Maybe()
	r.env.OnActivity(acts.Erasure.DeleteJobFiles, mock.Anything, deletedJob).Return(func(context.Context, string) (int, error) {
		r.step("files")
		return 2, nil
	}).Once()
	r.env.OnActivity(acts.Erasure.DeleteJobRuns, mock.Anything, deletedJob, trail.Runs).Return(func(context.Context, string, []string) error {
		r.step("runs")
		return nil
	}).Once()
	r.env.OnActivity(acts.Erasure.FinishErasure, mock.Anything, deletedJob, mock.Anything).Return(func(_ context.Context, _ string, copies []jobs.VendorCopy) error {
		r.mu.Lock()
		r.steps = append(r.steps, "finish")
		r.finished = copies
		r.mu.Unlock()
		return nil
	}).Once()
	r.env.OnActivity(acts.Webhooks.DeliverWebhook, mock.Anything, mock.Anything).Return(func(_ context.Context, d activities.WebhookDelivery) error {
		r.mu.Lock()
		r.steps = append(r.steps, "deliver")
		r.deliveries = append(r.deliveries, d)
		r.mu.Unlock()
		return nil
	}).Maybe()
	t.Cleanup(func() { r.env.AssertExpectations(t) })
	return r
}

// tombstone is deletedJob's tombstone: its attempts went to providers.
func tombstone(providers ...string) jobs.Tombstone {
	var copies []jobs.VendorCopy
	for _, p := range providers {
		copies = append(copies, jobs.VendorCopy{Provider: p, Outcome: jobs.VendorCopyPending})
	}
	completed := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	return jobs.Tombstone{
		ID: deletedJob, Tenant: "acme", Service: jobs.Transcriptions,
		CreatedAt: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), CompletedAt: &completed,
		DeletedAt: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC), DeletedBy: "alice",
		VendorCopies: jobs.VendorCopiesJSON(copies),
	}
}

func (r *erasureRun) requireCompleted(t *testing.T) {
	t.Helper()
	require.True(t, r.env.IsWorkflowCompleted())
	require.NoError(t, r.env.GetWorkflowError())
}

// Work handed to an asynchronous provider is purged by its handle; the
// other providers the tombstone names, without one; then the files, the
// runs and the tombstone, in that order. Without a webhook nothing is
// sent.
func TestDeletionErasesInOrder(t *testing.T) {
	t.Parallel()
	trail := activities.JobTrail{
		Runs:      []string{"run-2", "run-1"},
		Submitted: []activities.VendorWork{{ProviderID: "assemblyai", Service: jobs.Transcriptions, Handle: "t-1"}},
	}
	r := deletionSetup(t, trail, func(w activities.VendorWork) (string, error) {
		if w.Handle != "" {
			return "purged", nil
		}
		return "not_retained", nil
	})

	r.env.ExecuteWorkflow(workflows.DeletionWorkflowName, workflows.DeletionInput{Tombstone: tombstone("sandbox-fast", "assemblyai")})

	r.requireCompleted(t)
	require.Equal(t, []string{"stop", "read", "files", "runs", "purge assemblyai", "purge sandbox-fast", "finish"}, r.steps)
	require.Equal(t, []activities.VendorWork{
		{ProviderID: "assemblyai", Service: jobs.Transcriptions, Handle: "t-1"},
		{ProviderID: "sandbox-fast", Service: jobs.Transcriptions},
	}, r.purged, "assemblyai, in the tombstone too, is purged once: by its handle")
	require.Equal(t, []jobs.VendorCopy{{Provider: "assemblyai", Outcome: "purged"}, {Provider: "sandbox-fast", Outcome: "not_retained"}}, r.finished)
	require.Empty(t, r.deliveries, "no webhook, no event")
}

// A job that never reached a provider (its start still in the outbox, or
// unroutable): nothing to purge, the rest is erased all the same.
func TestDeletionOfAJobNoProviderSaw(t *testing.T) {
	t.Parallel()
	r := deletionSetup(t, activities.JobTrail{}, func(activities.VendorWork) (string, error) {
		t.Error("nothing to purge")
		return "", nil
	})
	r.env.ExecuteWorkflow(workflows.DeletionWorkflowName, workflows.DeletionInput{Tombstone: tombstone()})
	r.requireCompleted(t)
	require.Equal(t, []string{"stop", "read", "files", "runs", "finish"}, r.steps)
	require.Empty(t, r.finished)
}

// A vendor's delete that keeps failing is retried, then recorded as
// failed; a permanent failure at once. The erasure finishes either way.
func TestDeletionRecordsAPurgeThatKeepsFailing(t *testing.T) {
	t.Parallel()
	trail := activities.JobTrail{
		Runs: []string{"run-1"},
		Submitted: []activities.VendorWork{
			{ProviderID: "assemblyai", Service: jobs.Transcriptions, Handle: "t-1"},
			{ProviderID: "gone", Service: jobs.Transcriptions, Handle: "g-1"},
		},
	}
	var mu sync.Mutex
	tries := map[string]int{}
	r := deletionSetup(t, trail, func(w activities.VendorWork) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		tries[w.ProviderID]++
		if w.ProviderID == "gone" {
			return "", temporal.NewNonRetryableApplicationError("not in the catalog", activities.ErrTypeErasure, nil)
		}
		return "", temporal.NewApplicationError("assemblyai answered 503", activities.ErrTypeErasure)
	})

	r.env.ExecuteWorkflow(workflows.DeletionWorkflowName, workflows.DeletionInput{Tombstone: tombstone("assemblyai")})

	r.requireCompleted(t)
	require.Greater(t, tries["assemblyai"], 5, "a failing vendor's delete is retried")
	require.Equal(t, 1, tries["gone"], "a permanent failure is not retried")
	require.Equal(t, []jobs.VendorCopy{{Provider: "assemblyai", Outcome: jobs.VendorCopyFailed}, {Provider: "gone", Outcome: jobs.VendorCopyFailed}}, r.finished)
	require.Equal(t, "finish", r.steps[len(r.steps)-1])
}

// With a webhook, the *.deleted event goes once the erasure finished,
// carrying the tombstone with what became of the vendor copies.
func TestDeletionSendsTheDeletedEvent(t *testing.T) {
	t.Parallel()
	hook := &jobs.Webhook{URL: "https://hooks.test/jobs", Headers: map[string]string{"X-Token": "t"}}
	trail := activities.JobTrail{Runs: []string{"run-1"}, Webhook: hook}
	r := deletionSetup(t, trail, func(activities.VendorWork) (string, error) { return "not_retained", nil })

	r.env.ExecuteWorkflow(workflows.DeletionWorkflowName, workflows.DeletionInput{Tombstone: tombstone("sandbox-fast")})

	r.requireCompleted(t)
	require.Equal(t, []string{"stop", "read", "files", "runs", "purge sandbox-fast", "finish", "deliver"}, r.steps)
	require.Len(t, r.deliveries, 1)
	d := r.deliveries[0]
	require.Equal(t, *hook, d.Target)
	require.Equal(t, "transcription.deleted", d.Event)
	require.Equal(t, deletedJob+"-deleted", d.MessageID)
	require.Equal(t, deletedJob, d.Job.ID)
	require.Equal(t, jobs.Transcriptions, d.Job.Service)
	require.Equal(t, "acme", d.Job.Tenant)
	require.NotNil(t, d.Deleted)
	want := tombstone("sandbox-fast")
	want.VendorCopies = `[{"provider":"sandbox-fast","outcome":"not_retained"}]`
	require.Equal(t, want, *d.Deleted)

	body, err := jobs.DeletedWebhookBody(d.Event, d.Deleted)
	require.NoError(t, err)
	var event struct {
		Event string `json:"event"`
		Data  struct {
			ID         string         `json:"id"`
			Type       string         `json:"type"`
			Attributes map[string]any `json:"attributes"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &event))
	require.Equal(t, "transcription.deleted", event.Event)
	require.Equal(t, deletedJob, event.Data.ID)
	require.Equal(t, "deleted", event.Data.Attributes["status"])
	require.NotContains(t, string(body), "hooks.test", "the event names no webhook")
}

// A *.deleted event the receiver refuses for good is given up; the
// erasure, finished before it, stands.
func TestDeletionGivesUpARefusedDeletedEvent(t *testing.T) {
	t.Parallel()
	trail := activities.JobTrail{Runs: []string{"run-1"}, Webhook: &jobs.Webhook{URL: "http://10.0.0.1/hooks"}}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.DeletionWorkflow, workflow.RegisterOptions{Name: workflows.DeletionWorkflowName})
	acts.Register(env)
	env.OnActivity(acts.Erasure.StopJobWorkflow, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(acts.Erasure.ReadJobTrail, mock.Anything, mock.Anything).Return(trail, nil)
	env.OnActivity(acts.Erasure.DeleteJobFiles, mock.Anything, mock.Anything).Return(0, nil)
	env.OnActivity(acts.Erasure.DeleteJobRuns, mock.Anything, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(acts.Erasure.FinishErasure, mock.Anything, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnActivity(acts.Webhooks.DeliverWebhook, mock.Anything, mock.Anything).
		Return(temporal.NewNonRetryableApplicationError("refused", activities.ErrTypeWebhookForbidden, nil)).Once()

	env.ExecuteWorkflow(workflows.DeletionWorkflowName, workflows.DeletionInput{Tombstone: tombstone()})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	env.AssertExpectations(t)
}

// The erasure's workflow id names its job, so that its payloads are
// encrypted in the job's tenant's scope.
func TestDeletionWorkflowID(t *testing.T) {
	t.Parallel()
	require.Equal(t, "deletion-"+deletedJob, workflows.DeletionWorkflowID(deletedJob))
	require.Equal(t, deletedJob, workflows.JobOfWorkflow(workflows.DeletionWorkflowID(deletedJob)))
	require.Equal(t, deletedJob, workflows.JobOfWorkflow(deletedJob))
}
