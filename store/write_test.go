package store

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store/internal/sqlitewrite"
)

// The SQLite write scheduling itself is tested in store/internal/sqlitewrite;
// these tests check that the store's statements and writes go through it.

func openSQLite(t *testing.T) (*Store, *sqlitewrite.Gate) {
	t.Helper()
	s, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "gateway.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, s.db.ConnPool.(*sqlitewrite.Pool).Gate()
}

// queuedAt waits until gate has n interactive and m background waiters.
func queuedAt(t *testing.T, gate *sqlitewrite.Gate, n, m int) {
	t.Helper()
	require.Eventually(t, func() bool {
		interactive, background := gate.Waiting()
		return interactive == n && background == m
	}, 5*time.Second, time.Millisecond)
}

func TestInteractiveStatementsOvertakeQueuedBackgroundWork(t *testing.T) {
	t.Parallel()
	s, gate := openSQLite(t)
	require.NoError(t, s.db.Exec("CREATE TABLE arrivals (name TEXT NOT NULL)").Error)

	// A background transaction holds the connection while two background
	// statements and then an interactive one queue behind it.
	holding, letGo := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		require.NoError(t, s.db.WithContext(t.Context()).Transaction(func(tx *gorm.DB) error {
			close(holding)
			<-letGo
			return tx.Exec("INSERT INTO arrivals VALUES ('holder')").Error
		}))
	})
	<-holding
	insert := func(ctx context.Context, name string) {
		wg.Go(func() {
			require.NoError(t, s.db.WithContext(ctx).Exec("INSERT INTO arrivals VALUES (?)", name).Error)
		})
	}
	insert(t.Context(), "background-1")
	queuedAt(t, gate, 0, 1)
	insert(t.Context(), "background-2")
	queuedAt(t, gate, 0, 2)
	insert(Interactive(t.Context()), "interactive")
	queuedAt(t, gate, 1, 2)
	close(letGo)
	wg.Wait()

	var names []string
	require.NoError(t, s.db.Raw("SELECT name FROM arrivals ORDER BY rowid").Scan(&names).Error)
	require.Equal(t, []string{"holder", "interactive", "background-1", "background-2"}, names)
}

func TestTheStoresHotWritesGoThroughTheWriter(t *testing.T) {
	t.Parallel()
	s, gate := openSQLite(t)
	require.NoError(t, s.Migrate(t.Context()))
	waiting := func(n int) { // writes queued at the writer, not at the gate
		t.Helper()
		queuedAt(t, gate, 1, 0)
		require.Eventually(t, func() bool { return s.writer.Queued() == n }, 5*time.Second, time.Millisecond)
	}
	// Hold the gate, so that the writer waits there with a first write and
	// the store's writes queue behind it.
	require.NoError(t, gate.Acquire(t.Context()))
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, s.write(t.Context(), func(tx *gorm.DB) error { return nil })) })
	waiting(0)
	now := time.Now().UTC().Truncate(time.Millisecond)
	job := &jobs.Record{ID: "0190f0e0-0000-7000-8000-000000000001", Service: "transcriptions", Tenant: "acme", UserID: "alice",
		Status: jobs.StatusPending, Input: `{}`, Options: `{}`, CreatedAt: now}
	wg.Go(func() {
		created, err := s.Jobs.CreateJob(Interactive(t.Context()), job, &JobStart{Input: `{}`, NextAttemptAt: now})
		assert.NoError(t, err)
		assert.True(t, created)
	})
	waiting(1)
	saved := *job
	saved.Status, saved.Revision = jobs.StatusProcessing, 1
	wg.Go(func() { assert.NoError(t, s.Jobs.SaveJob(t.Context(), &saved)) })
	waiting(2)
	wg.Go(func() { assert.NoError(t, s.Jobs.DeleteJobStarts(t.Context(), []string{job.ID})) })
	waiting(3)
	gate.Release()
	wg.Wait()

	got, err := s.Jobs.GetJob(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, jobs.StatusProcessing, got.Status)
	_, err = s.Jobs.GetJobStart(t.Context(), job.ID)
	require.ErrorIs(t, err, ErrNotFound)
}
