package housekeeping_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/housekeeping"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	return string(body)
}

// syncBuffer is a log destination several goroutines may write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// worker is a Runner with metrics and an INFO log of its own.
func worker(st *store.Store, sweeps ...housekeeping.Sweep) (*housekeeping.Runner, *metrics.Metrics, *syncBuffer) {
	m, logs := metrics.New(), &syncBuffer{}
	return &housekeeping.Runner{Sweeps: sweeps, Coordinator: st.Housekeeping, Metrics: m,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}, m, logs
}

// counted is a sweep that counts its runs and removes removed each time.
func counted(name string, shared bool, removed int, runs *atomic.Int32) housekeeping.Sweep {
	return housekeeping.Sweep{Name: name, Every: time.Hour, Shared: shared, Run: func(context.Context, time.Time) (int, error) {
		runs.Add(1)
		return removed, nil
	}}
}

func TestSharedSweepsRunOncePerRoundAcrossWorkers(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		var shared, local atomic.Int32
		a, am, _ := worker(st, counted("work_files", true, 2, &shared), counted("scratch", false, 0, &local))
		b, bm, _ := worker(st, counted("work_files", true, 2, &shared), counted("scratch", false, 0, &local))
		start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

		require.Equal(t, start.Add(time.Hour), a.RunDue(ctx, start))
		require.WithinDuration(t, start.Add(time.Hour), b.RunDue(ctx, start.Add(10*time.Minute)), 0,
			"b started later: it skips the round a took and waits for the next")
		require.Equal(t, int32(1), shared.Load(), "the shared sweep ran once")
		require.Equal(t, int32(2), local.Load(), "each worker sweeps its own scratch directory")

		// Both wake for the next round: one sweeps it.
		next := start.Add(time.Hour)
		b.RunDue(ctx, next)
		a.RunDue(ctx, next)
		require.Equal(t, int32(2), shared.Load())

		require.Contains(t, scrape(t, am), `gateway_housekeeping_runs_total{outcome="ok",sweep="work_files"} 1`)
		require.Contains(t, scrape(t, am), `gateway_housekeeping_runs_total{outcome="skipped",sweep="work_files"} 1`)
		require.Contains(t, scrape(t, bm), `gateway_housekeeping_runs_total{outcome="skipped",sweep="work_files"} 1`)
		require.Contains(t, scrape(t, bm), `gateway_housekeeping_runs_total{outcome="ok",sweep="work_files"} 1`)
		require.Contains(t, scrape(t, bm), `gateway_housekeeping_removed_total{sweep="work_files"} 2`)
	})
}

func TestAWorkerSkipsARoundAnotherIsSweeping(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		var runs atomic.Int32
		w, m, _ := worker(st, counted("provider_callbacks", true, 0, &runs))
		now := time.Now()
		held, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			_, _ = st.Housekeeping.TryExclusive(ctx, "housekeeping:provider_callbacks", func(context.Context) error {
				close(held)
				<-release
				return nil
			})
		}()
		<-held
		require.Equal(t, now.Add(time.Minute), w.RunDue(ctx, now), "asks again in a minute")
		require.Zero(t, runs.Load())
		require.Contains(t, scrape(t, m), `gateway_housekeeping_runs_total{outcome="skipped",sweep="provider_callbacks"} 1`)
		close(release)
		<-done
		w.RunDue(ctx, now.Add(time.Minute))
		require.Equal(t, int32(1), runs.Load(), "the round was not taken: this worker takes it")
	})
}

func TestWhatASweepRemovedIsLoggedAndCounted(t *testing.T) {
	t.Parallel()
	st := storetest.SQLite(t)
	ctx := context.Background()
	var runs atomic.Int32
	boom := errors.New("bucket unreachable")
	w, m, logs := worker(st, counted("work_files", true, 12, &runs), counted("scratch", false, 0, &runs),
		housekeeping.Sweep{Name: "result_files", Every: time.Hour, Shared: true, Run: func(context.Context, time.Time) (int, error) {
			return 3, boom
		}})
	w.RunDue(ctx, time.Now())

	body := scrape(t, m)
	for _, line := range []string{
		`gateway_housekeeping_runs_total{outcome="ok",sweep="work_files"} 1`,
		`gateway_housekeeping_removed_total{sweep="work_files"} 12`,
		`gateway_housekeeping_runs_total{outcome="ok",sweep="scratch"} 1`,
		`gateway_housekeeping_removed_total{sweep="scratch"} 0`,
		`gateway_housekeeping_runs_total{outcome="failed",sweep="result_files"} 1`,
		`gateway_housekeeping_removed_total{sweep="result_files"} 3`,
	} {
		require.Contains(t, body, line)
	}
	require.Contains(t, logs.String(), `level=INFO msg=housekeeping sweep=work_files removed=12 `)
	require.Contains(t, logs.String(), `level=WARN msg=housekeeping sweep=result_files removed=3 `)
	require.Contains(t, logs.String(), `error="bucket unreachable"`)
	require.NotContains(t, logs.String(), "sweep=scratch", "nothing removed: DEBUG")
}
