package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	b := setupConfigured(t, storetest.SQLite, func(cfg *api.Config) { cfg.Metrics = metrics.New() })
	job := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusPending})
	b.do(t, http.MethodGet, jobPath("transcriptions", job.ID, ""), b.readToken(t), nil).requireStatus(t, http.StatusOK)
	b.do(t, http.MethodGet, jobPath("transcriptions", job.ID, ""), "", nil).requireStatus(t, http.StatusUnauthorized)

	r := b.do(t, http.MethodGet, "/metrics", "", nil)
	r.requireStatus(t, http.StatusOK)
	body := string(r.Body)
	require.Contains(t, body, `gateway_http_requests_total{method="GET",route="/v1/transcriptions/:id",status="200"} 1`)
	require.Contains(t, body, `gateway_http_requests_total{method="GET",route="/v1/transcriptions/:id",status="401"} 1`)
	require.NotContains(t, body, job.ID, "no job id in a label")
	require.NotContains(t, body, tenantA, "no tenant in a label")
}

// Methods and paths come from outside: /metrics must not grow a series for
// each one a client makes up (docs/operations.md, Metrics).
func TestMetricsStayBoundedUnderMadeUpMethodsAndPaths(t *testing.T) {
	t.Parallel()
	b := setupConfigured(t, storetest.SQLite, func(cfg *api.Config) { cfg.Metrics = metrics.New() })
	send := func(from, to int) {
		for i := from; i < to; i++ {
			method := fmt.Sprintf("M%dX", i)
			path := fmt.Sprintf("/made-up/%d", i)
			if i%3 == 0 {
				path = "/v1/jobs" // a known route, a made-up method
			}
			req, err := http.NewRequest(method, b.server.URL+path, nil)
			require.NoError(t, err)
			resp, err := b.server.Client().Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
		}
	}
	size := func() int { return len(b.do(t, http.MethodGet, "/metrics", "", nil).Body) }

	send(0, 50)
	before := size()
	send(50, 1050)
	after := size()
	require.Less(t, after-before, 2048, "1,000 made-up methods and paths added %d bytes to /metrics", after-before)
	body := string(b.do(t, http.MethodGet, "/metrics", "", nil).Body)
	require.Contains(t, body, `method="OTHER"`)
	require.NotContains(t, body, `M1049X`)
	require.NotContains(t, body, `/made-up/`)
}
