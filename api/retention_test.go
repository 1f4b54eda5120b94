package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// Every finished job shows result_expires_at; a result past it is gone
// from the job and its result route answers 410 RESULT_EXPIRED (docs/api.md,
// Retention).
func TestRetentionResultExpiry(t *testing.T) {
	t.Parallel()
	b := setupConfigured(t, storetest.SQLite, func(cfg *api.Config) {
		cfg.RetentionDefaults = store.RetentionDefaults{Results: 24 * time.Hour}
	})
	hour := time.Hour
	require.NoError(t, b.store.Routing.CreateTenant(t.Context(), &store.Tenant{ID: tenantA, Retention: store.Retention{Results: &hour}}))
	result := `{"text":"Hallo","source_language":"en","target_language":"de","character_count":5}`
	seedDone := func(completed time.Time) *jobs.Record {
		at := completed
		return b.seed(t, jobs.Record{Service: "translations", Status: jobs.StatusCompleted, Result: result, CompletedAt: &at, Revision: 3})
	}
	fresh := seedDone(fixedNow.Add(-30 * time.Minute))
	old := seedDone(fixedNow.Add(-2 * time.Hour))
	running := b.seed(t, jobs.Record{Service: "translations", Status: jobs.StatusProcessing})

	attrs := func(id string) map[string]any {
		r := b.do(t, http.MethodGet, jobPath("translations", id, ""), b.readToken(t), nil)
		r.requireStatus(t, http.StatusOK)
		return r.data(t)["attributes"].(map[string]any)
	}
	got := attrs(fresh.ID)
	require.Equal(t, fixedNow.Add(30*time.Minute).Format(time.RFC3339Nano), got["result_expires_at"], "completed_at + the tenant's hour")
	require.NotNil(t, got["result"])
	r := b.do(t, http.MethodGet, jobPath("translations", fresh.ID, "/result"), b.readToken(t), nil)
	r.requireStatus(t, http.StatusOK)

	got = attrs(old.ID)
	require.Equal(t, fixedNow.Add(-time.Hour).Format(time.RFC3339Nano), got["result_expires_at"])
	require.NotContains(t, got, "result", "expired, even before the sweep erased it")
	r = b.do(t, http.MethodGet, jobPath("translations", old.ID, "/result"), b.readToken(t), nil)
	requireError(t, r, http.StatusGone, "RESULT_EXPIRED", old.ID, fixedNow.Add(-time.Hour).Format(time.RFC3339))

	// Erased by the sweep: the time it was erased.
	erased, err := b.store.Housekeeping.ExpireResult(t.Context(), old.ID, old.Revision, fixedNow.Add(-time.Minute))
	require.NoError(t, err)
	require.True(t, erased)
	got = attrs(old.ID)
	require.Equal(t, fixedNow.Add(-time.Minute).Format(time.RFC3339Nano), got["result_expires_at"])
	r = b.do(t, http.MethodGet, jobPath("translations", old.ID, "/result"), b.readToken(t), nil)
	requireError(t, r, http.StatusGone, "RESULT_EXPIRED", old.ID)

	require.NotContains(t, attrs(running.ID), "result_expires_at", "not finished")

	// The listing shows it too.
	r = b.do(t, http.MethodGet, "/v1/jobs", b.readToken(t), nil)
	r.requireStatus(t, http.StatusOK)
	listed := map[string]any{}
	for _, doc := range r.object(t)["data"].([]any) {
		d := doc.(map[string]any)
		listed[d["id"].(string)] = d["attributes"].(map[string]any)["result_expires_at"]
	}
	require.Equal(t, fixedNow.Add(30*time.Minute).Format(time.RFC3339Nano), listed[fresh.ID])
	require.Nil(t, listed[running.ID])

	// Kept forever: none.
	zero := time.Duration(0)
	_, err = b.store.Routing.UpdateTenant(t.Context(), tenantA, func(tn *store.Tenant) error {
		tn.Retention = store.Retention{Results: &zero, Jobs: &zero}
		return nil
	})
	require.NoError(t, err)
	require.NotContains(t, attrs(fresh.ID), "result_expires_at")
}
