package api_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/workflows"
)

// failedJob seeds a failed job of service for tenant whose workflow ran.
func (b *bundle) failedJob(t *testing.T, service, tenant string) (*jobs.Record, jobs.Submission) {
	t.Helper()
	job := b.seed(t, jobs.Record{Service: jobs.ServiceID(service), Tenant: tenant, Status: jobs.StatusFailed,
		ErrorCode: "PROVIDERS_EXHAUSTED", ErrorMessage: "every candidate provider failed"})
	return job, b.ran(t, job)
}

// retryPath is the resource route of a job's retry; "" names the admin
// route.
func retryPath(resource, id string) string {
	if resource == "" {
		return "/v1/jobs/" + id + "/retry"
	}
	return jobPath(resource, id, "/retry")
}

// requireNotRetried retries job and checks the refusal: status and code,
// the message naming the job and reason, and the job left as it was.
func (b *bundle) requireNotRetried(t *testing.T, path, token string, job *jobs.Record, status int, code, reason string) {
	t.Helper()
	message := requireError(t, b.do(t, http.MethodPost, path, token, nil), status, code, job.ID)
	require.Contains(t, message, reason)
	stored, err := b.store.Jobs.GetJob(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, job.Status, stored.Status, "the job stays as it was")
}

// requireRetried checks that one workflow was started for job: a new run
// under its id with its submission, its routing history and its error
// (docs/operations.md, Retrying jobs).
func (b *bundle) requireRetried(t *testing.T, job *jobs.Record, sub jobs.Submission) {
	t.Helper()
	start := b.startedFor(t, job.ID)
	require.Equal(t, job.ID, start.Options.ID)
	require.Equal(t, enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE, start.Options.WorkflowIDReusePolicy)
	require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL, start.Options.WorkflowIDConflictPolicy)
	require.Equal(t, 3, start.Options.Priority.PriorityKey, "the first run's priority")
	got := start.Input
	require.NotNil(t, got.Retry)
	require.Len(t, got.Retry.RoutingHistory, 1)
	require.Equal(t, job.Revision, got.Retry.Revision)
	require.Equal(t, "PROVIDERS_EXHAUSTED", string(got.Retry.Error.Code))
	require.Equal(t, workflows.StampedGeneration, got.Generation, "the new run takes this release's changes without version markers")
	got.Retry = nil
	require.JSONEq(t, string(sub.Input), string(got.Input))
	got.Input = sub.Input
	require.Equal(t, sub.JobID, got.JobID)
	require.Equal(t, sub.Tenant, got.Tenant)
	require.Equal(t, sub.Service, got.Service)
}

func TestRetryJob(t *testing.T) {
	t.Parallel()

	t.Run("failed jobs, on both routes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		own := b.writeToken(t)
		admin := b.tokenFor(t, tenantB, userB, "admin:cross-tenant")
		for _, res := range resources {
			for _, route := range []struct{ resource, token string }{{res.id, own}, {"", admin}} {
				job, sub := b.failedJob(t, res.id, tenantA)
				r := b.do(t, http.MethodPost, retryPath(route.resource, job.ID), route.token, nil)
				r.requireStatus(t, http.StatusAccepted)
				require.Equal(t, job.ID, r.data(t)["id"])
				require.Equal(t, res.jobType, r.data(t)["type"])
				require.Equal(t, "failed", r.data(t)["attributes"].(map[string]any)["status"],
					"the job as it was when the retry started; its run records it pending")
				b.requireRetried(t, job, sub)
			}
		}
	})

	t.Run("jobs that are not retried", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.assertUntouched(t)
		admin := b.tokenFor(t, tenantB, userB, "admin:cross-tenant")
		cases := []struct {
			name   string
			job    jobs.Record
			reason string
		}{
			{"completed", jobs.Record{Status: jobs.StatusCompleted, Result: `{"content":"x","finish_reason":"completed"}`}, "only failed jobs are retried"},
			{"processing", jobs.Record{Status: jobs.StatusProcessing}, "only failed jobs are retried"},
			{"pending", jobs.Record{Status: jobs.StatusPending}, "only failed jobs are retried"},
			{"never started", jobs.Record{Status: jobs.StatusFailed, ErrorCode: jobs.CodeNotStarted, ErrorMessage: "refused"}, "submit it again"},
		}
		for _, tc := range cases {
			tc.job.Service = "llm-tasks"
			job := b.seed(t, tc.job)
			b.ran(t, job)
			b.requireNotRetried(t, retryPath("llm-tasks", job.ID), b.writeToken(t), job, http.StatusConflict, "JOB_NOT_RETRYABLE", tc.reason)
			b.requireNotRetried(t, retryPath("", job.ID), admin, job, http.StatusConflict, "JOB_NOT_RETRYABLE", tc.reason)
		}
		// A failed job whose history is gone (b.ran not called).
		job := b.seed(t, jobs.Record{Service: "llm-tasks", Status: jobs.StatusFailed, ErrorCode: "PROVIDERS_EXHAUSTED"})
		b.requireNotRetried(t, retryPath("llm-tasks", job.ID), b.writeToken(t), job, http.StatusConflict, "JOB_NOT_RETRYABLE", "no workflow history")
	})

	t.Run("starts Temporal refuses", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name         string
			err          error
			status       int
			code, reason string
		}{
			{"running again already", serviceerror.NewWorkflowExecutionAlreadyStarted("already started", "", ""), http.StatusConflict, "JOB_NOT_RETRYABLE", "running again already"},
			{"out of reach", errors.New("temporal: connection refused"), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", "could not be started now"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				job, _ := b.failedJob(t, "translations", tenantA)
				b.setStartErr(tc.err)
				b.requireNotRetried(t, retryPath("translations", job.ID), b.writeToken(t), job, tc.status, tc.code, tc.reason)
			})
		}
	})

	t.Run("hidden and forbidden", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.assertUntouched(t)
		theirs, _ := b.failedJob(t, "transcriptions", tenantB)
		mine, _ := b.failedJob(t, "transcriptions", tenantA)
		admin := b.tokenFor(t, tenantB, userB, "admin:cross-tenant")
		cases := []struct {
			name, path, token string
			status            int
			code              string
			names             []string
		}{
			{"another tenant's job", retryPath("transcriptions", theirs.ID), b.writeToken(t), http.StatusNotFound, "NOT_FOUND", nil},
			{"another service's job", retryPath("translations", mine.ID), b.writeToken(t), http.StatusNotFound, "NOT_FOUND", nil},
			{"unknown id", retryPath("transcriptions", uuid.Must(uuid.NewV7()).String()), b.writeToken(t), http.StatusNotFound, "NOT_FOUND", nil},
			{"admin route, unknown id", retryPath("", uuid.Must(uuid.NewV7()).String()), admin, http.StatusNotFound, "NOT_FOUND", nil},
			{"admin route, not an id", retryPath("", "job-1"), admin, http.StatusNotFound, "NOT_FOUND", nil},
			{"read scope only", retryPath("transcriptions", mine.ID), b.readToken(t), http.StatusForbidden, "INSUFFICIENT_SCOPE", []string{"transcriptions:write"}},
			{"another service's scope", retryPath("transcriptions", mine.ID), b.token(t, "llm-tasks:write"), http.StatusForbidden, "INSUFFICIENT_SCOPE", []string{"transcriptions:write"}},
			{"no token", retryPath("transcriptions", mine.ID), "", http.StatusUnauthorized, "UNAUTHORIZED", nil},
			{"admin route without admin:cross-tenant", retryPath("", mine.ID), b.token(t, allScopes()...), http.StatusForbidden, "INSUFFICIENT_SCOPE", []string{"admin:cross-tenant"}},
		}
		for _, tc := range cases {
			requireError(t, b.do(t, http.MethodPost, tc.path, tc.token, nil), tc.status, tc.code, tc.names...)
		}
		// Acting as another tenant confines the admin route to its jobs.
		requireError(t, b.do(t, http.MethodPost, retryPath("", mine.ID), admin, nil, "X-Effective-Tenant-Id", tenantB),
			http.StatusNotFound, "NOT_FOUND")
	})
}
