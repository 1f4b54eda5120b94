package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/metrics"
)

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	return string(body)
}

func TestMetricsAreExposed(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.HTTPRequest("/v1/transcriptions/:id", "GET", 200, 3*time.Millisecond)
	m.HTTPRequest("", "GET", 404, time.Millisecond)
	m.JobCreated("transcriptions")
	m.JobFinished("transcriptions", "sandbox-fast", "failed", "PROVIDERS_EXHAUSTED")
	m.RoutingDecision("transcriptions", "failover", "none")
	m.Failover("transcriptions", "sandbox-flaky")
	m.ProviderCall("transcriptions", "sandbox-fast", "ok", 2*time.Second)
	m.WebhookDelivery("gone", 40*time.Millisecond)
	m.MediaStep("extract", "ok", time.Second)
	m.StoreWrite("save_job", nil, 3*time.Millisecond)
	m.StoreWrite("update_progress", errors.New("database is down"), time.Second)
	m.Housekeeping("work_files", "ok", 12)
	m.Housekeeping("work_files", "ok", 3)
	m.Housekeeping("routing_decisions", "skipped", 0)
	m.JobReconciled("WORKFLOW_CLOSED")
	m.RetentionSweep("ok")
	m.RetentionExpired("results", 4)
	m.RetentionExpired("jobs", 0)
	m.RetentionExpired("jobs", 2)

	body := scrape(t, m)
	for _, line := range []string{
		`gateway_http_requests_total{method="GET",route="/v1/transcriptions/:id",status="200"} 1`,
		`gateway_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`gateway_http_request_duration_seconds_count{method="GET",route="/v1/transcriptions/:id"} 1`,
		`gateway_jobs_accepted_total{service="transcriptions"} 1`,
		`gateway_jobs_finished_total{error_code="PROVIDERS_EXHAUSTED",provider="sandbox-fast",service="transcriptions",status="failed"} 1`,
		`gateway_routing_decisions_total{policy_source="none",reason="failover",service="transcriptions"} 1`,
		`gateway_failovers_total{provider="sandbox-flaky",service="transcriptions"} 1`,
		`gateway_provider_call_duration_seconds_bucket{outcome="ok",provider="sandbox-fast",service="transcriptions",le="2.5"} 1`,
		`gateway_webhook_deliveries_total{outcome="gone"} 1`,
		`gateway_media_step_duration_seconds_count{outcome="ok",step="extract"} 1`,
		`gateway_store_write_duration_seconds_bucket{operation="save_job",outcome="ok",le="0.005"} 1`,
		`gateway_store_write_duration_seconds_count{operation="update_progress",outcome="failed"} 1`,
		`gateway_housekeeping_runs_total{outcome="ok",sweep="work_files"} 2`,
		`gateway_housekeeping_removed_total{sweep="work_files"} 15`,
		`gateway_housekeeping_runs_total{outcome="skipped",sweep="routing_decisions"} 1`,
		`gateway_jobs_reconciled_total{code="WORKFLOW_CLOSED"} 1`,
		`gateway_retention_sweeps_total{outcome="ok"} 1`,
		`gateway_retention_expired_total{kind="results"} 4`,
		`gateway_retention_expired_total{kind="jobs"} 2`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		require.Contains(t, body, line)
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	t.Parallel()
	recordOneOfEach(nil) // panics if a method is not nil-safe
}

// recordOneOfEach records one sample of every gateway metric.
func recordOneOfEach(m *metrics.Metrics) {
	m.HTTPRequest("/x", "GET", 200, time.Millisecond)
	m.JobCreated("llm-tasks")
	m.JobFinished("llm-tasks", "p", "completed", "")
	m.RoutingDecision("llm-tasks", "default", "none")
	m.Failover("llm-tasks", "p")
	m.ProviderCall("llm-tasks", "p", "ok", time.Millisecond)
	m.WebhookDelivery("delivered", time.Millisecond)
	m.MediaStep("fetch", "ok", time.Millisecond)
	m.StoreWrite("save_job", nil, time.Millisecond)
	m.Housekeeping("work_files", "ok", 1)
	m.JobReconciled("JOB_NOT_STARTED")
	m.RetentionSweep("ok")
	m.RetentionExpired("results", 1)
	m.BreakerTransition("llm-tasks", "p", "closed", "open")
	if m != nil {
		m.Breakers(func(context.Context) ([]metrics.BreakerSample, error) {
			return []metrics.BreakerSample{{Service: "llm-tasks", Provider: "p", State: 2}}, nil
		})
	}
}

func TestBacklogIsCountedWhenScraped(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	n := int64(3)
	m.Backlog(func(context.Context) (int64, error) { return n, nil })
	require.Contains(t, scrape(t, m), "gateway_job_starts_pending 3")
	n = 7
	require.Contains(t, scrape(t, m), "gateway_job_starts_pending 7", "read at every scrape")

	down := metrics.New()
	down.Backlog(func(context.Context) (int64, error) { return 0, errors.New("database down") })
	require.Contains(t, scrape(t, down), "gateway_job_starts_pending -1")
}
