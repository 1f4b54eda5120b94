package api_test

import (
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
