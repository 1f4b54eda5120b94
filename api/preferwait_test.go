package api_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/app/jobwatch"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// setupWaiting is setup with a job watcher, so that Prefer: wait is
// honoured, and the configuration adjusted by each of configure.
func setupWaiting(t *testing.T, configure ...func(*api.Config)) *bundle {
	t.Helper()
	return setupWatching(t, func(cfg *api.Config, w *jobwatch.Watcher, _ *store.Store) { cfg.Waiter = w }, configure...)
}

// setupWatching is setup on SQLite with a job watcher polling every
// 10 ms, which watch puts in the configuration, then adjusted by each of
// configure.
func setupWatching(t testing.TB, watch func(*api.Config, *jobwatch.Watcher, *store.Store), configure ...func(*api.Config)) *bundle {
	t.Helper()
	var st *store.Store
	open := func(tb testing.TB) *store.Store {
		st = storetest.SQLite(tb)
		return st
	}
	return setupConfigured(t, open, func(cfg *api.Config) {
		w := jobwatch.New(st.Jobs, 10*time.Millisecond, nil)
		t.Cleanup(w.Close)
		watch(cfg, w, st)
		for _, f := range configure {
			f(cfg)
		}
	})
}

// finishAfter records, after d, the job its workflow's start names (first
// waiting for that start when id is "") as its workflow would on
// finishing with status.
func (b *bundle) finishAfter(t *testing.T, id string, status jobs.Status, d time.Duration) {
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(wg.Wait)
	go func() {
		defer wg.Done()
		for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			b.mu.Lock()
			if len(b.starts) > 0 {
				id = b.starts[0].Input.JobID
			}
			b.mu.Unlock()
		}
		time.Sleep(d)
		ctx := context.Background()
		job, err := b.store.Jobs.GetJob(ctx, id)
		if !assert.NoError(t, err) {
			return
		}
		completed := time.Now()
		job.Status, job.CompletedAt, job.Revision = status, &completed, job.Revision+1
		if job.ProcessedAt == nil {
			job.Provider, job.ProcessedAt = "alpha", &completed
		}
		if status == jobs.StatusCompleted {
			job.Result = sampleResults[string(job.Service)]
		} else {
			job.ErrorCode, job.ErrorMessage = jobs.CodeProvidersExhausted, "every eligible provider failed"
		}
		assert.NoError(t, b.store.Jobs.SaveJob(ctx, job))
	}()
}

// timed is do with how long the answer took.
func (b *bundle) timed(t *testing.T, method, path, token string, body any, headers ...string) (*response, time.Duration) {
	t.Helper()
	start := time.Now()
	r := b.do(t, method, path, token, body, headers...)
	return r, time.Since(start)
}

// long bounds an answer that waits a few seconds at most, or not at all,
// with room for a loaded machine; ignoring a preference wrongly would wait
// 60 s.
const long = 10 * time.Second

func TestPreferWaitOnGet(t *testing.T) {
	t.Parallel()
	b := setupWaiting(t)
	read := b.readToken(t)
	get := func(t *testing.T, id, prefer string) (*response, time.Duration) {
		t.Helper()
		r, took := b.timed(t, http.MethodGet, jobPath("translations", id), read, nil, "Prefer", prefer)
		r.requireStatus(t, http.StatusOK)
		return r, took
	}
	processing := func() string {
		return b.seed(t, jobs.Record{Service: "translations", Status: jobs.StatusProcessing}).ID
	}

	for _, status := range []jobs.Status{jobs.StatusCompleted, jobs.StatusFailed} {
		t.Run("a job that ends within the wait: "+string(status), func(t *testing.T) {
			t.Parallel()
			id := processing()
			b.finishAfter(t, id, status, 300*time.Millisecond)
			r, took := get(t, id, "respond-async, wait=30")
			require.Equal(t, string(status), r.data(t)["attributes"].(map[string]any)["status"])
			require.Equal(t, "wait=30", r.Header.Get("Preference-Applied"))
			require.GreaterOrEqual(t, took, 300*time.Millisecond)
			require.Less(t, took, long)
		})
	}

	t.Run("a job that does not end within the wait", func(t *testing.T) {
		t.Parallel()
		r, took := get(t, processing(), "wait=1")
		require.Equal(t, "processing", r.data(t)["attributes"].(map[string]any)["status"])
		require.Equal(t, "wait=1", r.Header.Get("Preference-Applied"))
		require.GreaterOrEqual(t, took, time.Second)
		require.Less(t, took, long)
	})

	t.Run("a finished job answers at once, a longer wait capped", func(t *testing.T) {
		t.Parallel()
		id := b.seed(t, jobs.Record{Service: "translations", Status: jobs.StatusCompleted, Result: sampleResults["translations"]}).ID
		r, took := get(t, id, "wait=600")
		require.Equal(t, "wait=60", r.Header.Get("Preference-Applied"))
		require.Less(t, took, long)
	})

	for _, prefer := range []string{"wait=0", "wait=abc", "wait=-5", "wait=61s", "wait", "return=minimal"} {
		t.Run("ignored: "+prefer, func(t *testing.T) {
			t.Parallel()
			r, took := get(t, processing(), prefer)
			require.Empty(t, r.Header.Values("Preference-Applied"))
			require.Less(t, took, long)
		})
	}
}

func TestPreferWaitOnCreate(t *testing.T) {
	t.Parallel()
	create := func(t *testing.T, b *bundle, prefer string) (*response, time.Duration) {
		t.Helper()
		return b.timed(t, http.MethodPost, "/v1/translations", b.writeToken(t), validBodies["translations"], "Prefer", prefer)
	}

	t.Run("a job that ends within the wait answers 200", func(t *testing.T) {
		t.Parallel()
		b := setupWaiting(t)
		b.finishAfter(t, "", jobs.StatusCompleted, 200*time.Millisecond)
		r, took := create(t, b, "respond-async, wait=30")
		r.requireStatus(t, http.StatusOK)
		attrs := r.data(t)["attributes"].(map[string]any)
		require.Equal(t, "completed", attrs["status"])
		require.NotNil(t, attrs["result"])
		require.Equal(t, "wait=30", r.Header.Get("Preference-Applied"))
		require.Equal(t, "/v1/translations/"+r.data(t)["id"].(string), r.Header.Get("Location"))
		require.Less(t, took, long)
	})

	t.Run("a job that does not end within the wait answers 202", func(t *testing.T) {
		t.Parallel()
		b := setupWaiting(t)
		r, took := create(t, b, "wait=1")
		r.requireStatus(t, http.StatusAccepted)
		require.Equal(t, "pending", r.data(t)["attributes"].(map[string]any)["status"])
		require.Equal(t, "wait=1", r.Header.Get("Preference-Applied"))
		require.GreaterOrEqual(t, took, time.Second)
		require.Less(t, took, long)
	})

	ignored := []struct {
		name   string
		setup  func(*testing.T) *bundle
		prefer string
	}{
		{"an invalid wait", func(t *testing.T) *bundle { return setupWaiting(t) }, "wait=abc"},
		{"an API without a watcher", setup, "wait=60"},
	}
	for _, tc := range ignored {
		t.Run("ignored: "+tc.name, func(t *testing.T) {
			t.Parallel()
			r, took := create(t, tc.setup(t), tc.prefer)
			r.requireStatus(t, http.StatusAccepted)
			require.Empty(t, r.Header.Values("Preference-Applied"))
			require.Less(t, took, long)
		})
	}
}

// The request duration metric leaves the wait out, so that waits do not
// read as a slow API (docs/operations.md, Metrics).
func TestPreferWaitIsNotRequestDuration(t *testing.T) {
	t.Parallel()
	b := setupWaiting(t, func(cfg *api.Config) { cfg.Metrics = metrics.New() })
	id := b.seed(t, jobs.Record{Service: "translations", Status: jobs.StatusProcessing}).ID
	r, took := b.timed(t, http.MethodGet, jobPath("translations", id), b.readToken(t), nil, "Prefer", "wait=1")
	r.requireStatus(t, http.StatusOK)
	require.GreaterOrEqual(t, took, time.Second)

	body := string(b.do(t, http.MethodGet, "/metrics", "", nil).Body)
	re := regexp.MustCompile(`gateway_http_request_duration_seconds_sum\{method="GET",route="/v1/translations/:id"\} (\S+)`)
	m := re.FindStringSubmatch(body)
	require.NotNil(t, m, body)
	sum, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	require.Less(t, sum, 0.9, "the second waited is left out")
}
