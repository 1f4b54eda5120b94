package activities_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// fakeDeleter deletes jobs from the store as jobops does, and records the
// erasures it was asked to start.
type fakeDeleter struct {
	st *store.Store

	mu      sync.Mutex
	deleted []string
	by      []string
	erasing []string
	fail    error
}

func (d *fakeDeleter) Delete(ctx context.Context, job *jobs.Record, by string) (*jobs.Tombstone, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail != nil {
		return nil, d.fail
	}
	_, tomb, err := d.st.Jobs.DeleteJob(ctx, job.ID, by, time.Now())
	if err != nil {
		return nil, err
	}
	d.deleted, d.by = append(d.deleted, job.ID), append(d.by, by)
	return tomb, nil
}

func (d *fakeDeleter) StartErasure(_ context.Context, tomb *jobs.Tombstone, _ bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.erasing = append(d.erasing, tomb.ID)
	return nil
}

// retentionJob is a finished job of tenant, with a result and its file.
func retentionJob(t *testing.T, ctx context.Context, st *store.Store, files *blobstore.Store, tenant string, completed time.Time) *jobs.Record {
	t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	at := completed.UTC().Truncate(time.Microsecond)
	job := &jobs.Record{ID: id, Service: "transcriptions", Tenant: tenant, UserID: "u", Status: jobs.StatusCompleted,
		Input: `{}`, Options: `{}`, Result: `{"text":"hi"}`, ResultFile: activities.ResultPrefix(id) + "transcript.srt",
		Revision: 4, CreatedAt: at, CompletedAt: &at}
	require.NoError(t, st.Jobs.SaveJob(ctx, job))
	for _, key := range []string{job.ResultFile, activities.WorkPrefix(id) + "media.wav"} {
		_, err := files.Put(ctx, key, "text/plain", strings.NewReader("x"))
		require.NoError(t, err)
	}
	return job
}

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

func exists(t *testing.T, ctx context.Context, files *blobstore.Store, key string) bool {
	t.Helper()
	r, err := files.Open(ctx, key)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, r)
	_ = r.Close()
	return true
}

func TestRetentionExpiresResultsThenJobs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		files, err := blobstore.Open(ctx, blobstore.Config{Dir: t.TempDir(), SigningKey: []byte("0123456789abcdef0123456789abcdef"), BaseURL: "http://files.test"})
		require.NoError(t, err)
		minute, twoMinutes := time.Minute, 2*time.Minute
		require.NoError(t, st.Routing.CreateTenant(ctx, &store.Tenant{ID: "short", Retention: store.Retention{Results: &minute, Jobs: &twoMinutes}}))
		now := time.Now().UTC()
		short := retentionJob(t, ctx, st, files, "short", now)
		plain := retentionJob(t, ctx, st, files, "plain", now) // the default: results for an hour
		m := metrics.New()
		deleter := &fakeDeleter{st: st}
		r := &activities.Retention{Store: retentionStore{st.Housekeeping, st.Jobs}, Deleter: deleter, Files: files, Defaults: store.RetentionDefaults{Results: time.Hour}, Metrics: m}

		// 90 s on: short's result expired, its job not yet; plain keeps all.
		out, err := r.ExpireJobs(ctx, activities.RetentionBatch{Now: now.Add(90 * time.Second), Limit: 10})
		require.NoError(t, err)
		require.Equal(t, activities.RetentionBatchResult{}, out)
		out, err = r.ExpireResults(ctx, activities.RetentionBatch{Now: now.Add(90 * time.Second), Limit: 10})
		require.NoError(t, err)
		require.Equal(t, activities.RetentionBatchResult{Selected: 1, Expired: 1}, out)
		got, err := st.Jobs.GetJob(ctx, short.ID)
		require.NoError(t, err)
		require.Empty(t, got.Result)
		require.NotNil(t, got.ResultExpiredAt)
		require.False(t, exists(t, ctx, files, short.ResultFile), "the result file is gone")
		require.True(t, exists(t, ctx, files, activities.WorkPrefix(short.ID)+"media.wav"), "the media stage's files go with their job, not here")
		require.True(t, exists(t, ctx, files, plain.ResultFile))
		got, err = st.Jobs.GetJob(ctx, plain.ID)
		require.NoError(t, err)
		require.Equal(t, plain.Result, got.Result)
		out, err = r.ExpireResults(ctx, activities.RetentionBatch{Now: now.Add(90 * time.Second), Limit: 10})
		require.NoError(t, err)
		require.Equal(t, activities.RetentionBatchResult{}, out, "erased once")

		// 3 min on: short's job goes, by retention.
		out, err = r.ExpireJobs(ctx, activities.RetentionBatch{Now: now.Add(3 * time.Minute), Limit: 10})
		require.NoError(t, err)
		require.Equal(t, activities.RetentionBatchResult{Selected: 1, Expired: 1}, out)
		require.Equal(t, []string{short.ID}, deleter.deleted)
		require.Equal(t, []string{jobs.DeletedByRetention}, deleter.by)
		_, err = st.Jobs.GetJob(ctx, short.ID)
		require.ErrorIs(t, err, store.ErrNotFound)

		// 2 h on: plain's result expires, in batches of one.
		out, err = r.ExpireResults(ctx, activities.RetentionBatch{Now: now.Add(2 * time.Hour), Limit: 1})
		require.NoError(t, err)
		require.Equal(t, activities.RetentionBatchResult{Selected: 1, Expired: 1}, out)
		require.False(t, exists(t, ctx, files, plain.ResultFile))

		// The erasure of short did not finish: started again once old enough.
		out, err = r.RestartErasures(ctx, activities.RetentionBatch{Now: time.Now(), Limit: 10})
		require.NoError(t, err)
		require.Zero(t, out.Selected, "not yet")
		out, err = r.RestartErasures(ctx, activities.RetentionBatch{Now: time.Now().Add(activities.ErasureRestartAge + time.Second), Limit: 10})
		require.NoError(t, err)
		require.Equal(t, activities.RetentionBatchResult{Selected: 1, Expired: 1}, out)
		require.Equal(t, []string{short.ID}, deleter.erasing)

		body := scrape(t, m)
		require.Contains(t, body, `gateway_retention_expired_total{kind="results"} 2`)
		require.Contains(t, body, `gateway_retention_expired_total{kind="jobs"} 1`)
		require.Contains(t, body, `gateway_retention_expired_total{kind="erasures"} 1`)
	})
}

func TestRetentionJobsDeleteFailures(t *testing.T) {
	t.Parallel()
	st := storetest.SQLite(t)
	ctx := context.Background()
	files, err := blobstore.Open(ctx, blobstore.Config{Dir: t.TempDir(), SigningKey: []byte("0123456789abcdef0123456789abcdef"), BaseURL: "http://files.test"})
	require.NoError(t, err)
	job := retentionJob(t, ctx, st, files, "acme", time.Now().Add(-time.Hour))
	deleter := &fakeDeleter{st: st, fail: errors.New("temporal is away")}
	r := &activities.Retention{Store: retentionStore{st.Housekeeping, st.Jobs}, Deleter: deleter, Defaults: store.RetentionDefaults{Jobs: time.Minute}}
	_, err = r.ExpireJobs(ctx, activities.RetentionBatch{Now: time.Now(), Limit: 10})
	require.ErrorContains(t, err, "temporal is away", "retried by the workflow")

	// Deleted meanwhile (by its owner): skipped.
	_, _, err = st.Jobs.DeleteJob(ctx, job.ID, "alice", time.Now())
	require.NoError(t, err)
	other := retentionJob(t, ctx, st, files, "acme", time.Now().Add(-time.Hour))
	racing := &racingDeleter{st: st, id: other.ID}
	r.Deleter = racing
	out, err := r.ExpireJobs(ctx, activities.RetentionBatch{Now: time.Now(), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, activities.RetentionBatchResult{Selected: 1}, out)
}

// racingDeleter finds its job deleted by someone else first.
type racingDeleter struct {
	st *store.Store
	id string
}

func (d *racingDeleter) Delete(ctx context.Context, job *jobs.Record, _ string) (*jobs.Tombstone, error) {
	if _, _, err := d.st.Jobs.DeleteJob(ctx, d.id, "alice", time.Now()); err != nil {
		return nil, err
	}
	return nil, errors.New("job was deleted")
}

func (d *racingDeleter) StartErasure(context.Context, *jobs.Tombstone, bool) error { return nil }

// retentionStore is the RetentionStore gateway worker wires: the
// housekeeping store and the jobs it expires.
type retentionStore struct {
	*store.HousekeepingStore
	*store.JobStore
}
