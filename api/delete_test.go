package api_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// erasureOf returns the erasure started for a deleted job.
func (b *bundle) erasureOf(t *testing.T, jobID string) startedWorkflow {
	t.Helper()
	var found []startedWorkflow
	for _, s := range b.started() {
		if s.Deletion != nil && s.Deletion.Tombstone.ID == jobID {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "erasures started for job %s", jobID)
	return found[0]
}

// requireDeleted checks every route of a deleted job answers 410
// JOB_DELETED to token, and the listing leaves it out.
func (b *bundle) requireDeleted(t *testing.T, res resource, id, token string) {
	t.Helper()
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, jobPath(res.id, id)},
		{http.MethodGet, jobPath(res.id, id, "/result")},
		{http.MethodPost, jobPath(res.id, id, "/cancel")},
		{http.MethodPost, jobPath(res.id, id, "/retry")},
		{http.MethodGet, jobPath(res.id, id, "/webhook-deliveries")},
		{http.MethodDelete, jobPath(res.id, id)},
	} {
		requireError(t, b.do(t, req.method, req.path, token, nil), http.StatusGone, "JOB_DELETED", id)
	}
	require.NotContains(t, b.listJobs(t, token, "page[size]=100").ids(), id)
}

func TestDeleteJob(t *testing.T) {
	t.Parallel()

	t.Run("a finished job of each service", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		token := b.token(t, allScopes()...)
		eachResource(t, func(t *testing.T, res resource) {
			job := b.seed(t, jobs.Record{Service: jobs.ServiceID(res.id), Status: jobs.StatusCompleted,
				Result: `{"text":"unique-result"}`, ClientMeta: `{"ref":"unique-meta"}`})
			r := b.do(t, http.MethodDelete, jobPath(res.id, job.ID), token, nil)
			r.requireStatus(t, http.StatusAccepted)
			data := r.data(t)
			require.Equal(t, job.ID, data["id"])
			require.Equal(t, res.jobType, data["type"])
			attrs := data["attributes"].(map[string]any)
			require.Equal(t, "deleted", attrs["status"])
			require.Equal(t, tenantA, attrs["tenant"])
			require.Equal(t, job.CreatedAt.Format(time.RFC3339Nano), attrs["created_at"])
			require.NotEmpty(t, attrs["deleted_at"])
			require.Equal(t, []any{map[string]any{"provider": "alpha", "outcome": "pending"}}, attrs["vendor_copies"])
			require.NotContains(t, string(r.Body), "unique-")

			_, err := b.store.Jobs.GetJob(t.Context(), job.ID)
			require.ErrorIs(t, err, store.ErrNotFound, "no row holds the job's content")
			erasure := b.erasureOf(t, job.ID)
			require.Equal(t, workflows.DeletionWorkflowID(job.ID), erasure.Options.ID)
			require.Equal(t, workflows.DeletionWorkflowName, erasure.Workflow)
			require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, erasure.Options.WorkflowIDConflictPolicy)
			require.Equal(t, userA, erasure.Deletion.Tombstone.DeletedBy)
			require.False(t, erasure.Deletion.StartMayFollow)

			b.requireDeleted(t, res, job.ID, token)
		})
	})

	t.Run("a running job is cancelled by its erasure", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		job := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusProcessing})
		b.do(t, http.MethodDelete, jobPath("transcriptions", job.ID), b.writeToken(t), nil).requireStatus(t, http.StatusAccepted)
		b.erasureOf(t, job.ID)
		b.requireDeleted(t, resources[0], job.ID, b.token(t, allScopes()...))
	})

	t.Run("a pending job never starts", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		id := b.seedUnstarted(t, "llm-tasks")
		b.do(t, http.MethodDelete, jobPath("llm-tasks", id), b.writeToken(t), nil).requireStatus(t, http.StatusAccepted)
		start, err := b.store.Jobs.GetJobStart(t.Context(), id)
		require.ErrorIs(t, err, store.ErrNotFound, "the outbox holds no start of it: %v", start)
		require.True(t, b.erasureOf(t, id).Deletion.StartMayFollow, "its erasure waits out a start already taken")
	})

	t.Run("tenants and scopes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		job := b.seed(t, jobs.Record{Service: "translations", Status: jobs.StatusFailed, ErrorCode: "CANCELLED"})
		other := b.tokenFor(t, tenantB, userB, "translations:write", "translations:read")
		requireError(t, b.do(t, http.MethodDelete, jobPath("translations", job.ID), other, nil), http.StatusNotFound, "NOT_FOUND")
		requireError(t, b.do(t, http.MethodDelete, jobPath("transcriptions", job.ID), b.writeToken(t), nil), http.StatusNotFound, "NOT_FOUND")
		requireError(t, b.do(t, http.MethodDelete, jobPath("translations", job.ID), b.readToken(t), nil), http.StatusForbidden, "INSUFFICIENT_SCOPE")
		requireError(t, b.do(t, http.MethodDelete, "/v1/jobs/"+job.ID, b.writeToken(t), nil), http.StatusForbidden, "INSUFFICIENT_SCOPE")
		b.assertNoStarts(t)

		admin := b.tokenFor(t, tenantB, userB, "admin:cross-tenant")
		r := b.do(t, http.MethodDelete, "/v1/jobs/"+job.ID, admin, nil)
		r.requireStatus(t, http.StatusAccepted)
		require.Equal(t, "translation-job", r.data(t)["type"])
		require.Equal(t, userB, b.erasureOf(t, job.ID).Deletion.Tombstone.DeletedBy)

		// Deleted, the job stays another tenant's: 404 to it, 410 to its own.
		requireError(t, b.do(t, http.MethodGet, jobPath("translations", job.ID), other, nil), http.StatusNotFound, "NOT_FOUND")
		requireError(t, b.do(t, http.MethodDelete, jobPath("translations", job.ID), other, nil), http.StatusNotFound, "NOT_FOUND")
		requireError(t, b.do(t, http.MethodGet, jobPath("transcriptions", job.ID), b.readToken(t), nil), http.StatusNotFound, "NOT_FOUND")
		requireError(t, b.do(t, http.MethodDelete, "/v1/jobs/"+job.ID, admin, nil), http.StatusGone, "JOB_DELETED")
		b.requireDeleted(t, resource{"translations", "translation-job"}, job.ID, b.token(t, allScopes()...))
	})

	t.Run("Temporal away: deleted now, erased later", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		job := b.seed(t, jobs.Record{Service: "llm-tasks", Status: jobs.StatusCompleted, Result: `{"text":"x"}`})
		b.setStartErr(errors.New("temporal: connection refused"))
		b.do(t, http.MethodDelete, jobPath("llm-tasks", job.ID), b.writeToken(t), nil).requireStatus(t, http.StatusAccepted)
		requireError(t, b.do(t, http.MethodGet, jobPath("llm-tasks", job.ID), b.readToken(t), nil), http.StatusGone, "JOB_DELETED")
		pending, err := b.store.Jobs.UnerasedTombstones(t.Context(), time.Now().Add(time.Minute), 10)
		require.NoError(t, err)
		require.Len(t, pending, 1, "the retention sweep starts its erasure")
		require.Equal(t, job.ID, pending[0].ID)
	})
}
