// Package metrics holds the gateway's Prometheus metrics (docs/operations.md,
// Metrics). Labels never carry a tenant or a job id: their number must stay
// small whatever the traffic.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// Metrics are one process's metrics. A nil *Metrics records nothing, so
// code can take one optionally.
type Metrics struct {
	registry *prometheus.Registry

	httpRequests     *prometheus.CounterVec
	httpDuration     *prometheus.HistogramVec
	jobsCreated      *prometheus.CounterVec
	jobsFinished     *prometheus.CounterVec
	routingDecisions *prometheus.CounterVec
	failovers        *prometheus.CounterVec
	providerCalls    *prometheus.HistogramVec
	webhooks         *prometheus.CounterVec
	webhookDuration  *prometheus.HistogramVec
	mediaSteps       *prometheus.HistogramVec
	storeWrites      *prometheus.HistogramVec
	housekeepingRuns *prometheus.CounterVec
	housekept        *prometheus.CounterVec
	jobsReconciled   *prometheus.CounterVec
	retentionSweeps  *prometheus.CounterVec
	retained         *prometheus.CounterVec
	usage            usageMetrics

	breakerTransitions *prometheus.CounterVec
}

// New registers the gateway's metrics, and the Go runtime's and the
// process's, in a registry of their own.
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := factory{r}
	latency := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	slow := []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900}
	return &Metrics{
		registry: r,
		httpRequests: f.counter("gateway_http_requests_total", "HTTP requests answered, by route template, method and status code.",
			"route", "method", "status"),
		httpDuration: f.histogram("gateway_http_request_duration_seconds", "Time to answer an HTTP request, by route template and method.",
			latency, "route", "method"),
		jobsCreated: f.counter("gateway_jobs_accepted_total", "Create requests answered 202 (an idempotent replay too), by service.", "service"),
		jobsFinished: f.counter("gateway_jobs_finished_total", "Jobs that reached completed or failed, by service, provider, status and error code.",
			"service", "provider", "status", "error_code"),
		routingDecisions: f.counter("gateway_routing_decisions_total", "Routing decisions, by service, reason and policy source; no provider left counts as reason none.",
			"service", "reason", "policy_source"),
		failovers: f.counter("gateway_failovers_total", "Provider calls that failed and made the job fail over, by service and the provider that failed.",
			"service", "provider"),
		providerCalls: f.histogram("gateway_provider_call_duration_seconds", "Provider calls, by service, provider and outcome (ok, retryable, permanent, input, cancelled).",
			slow, "service", "provider", "outcome"),
		webhooks: f.counter("gateway_webhook_deliveries_total", "Webhook delivery attempts, by outcome (delivered, failed, gone, refused).", "outcome"),
		webhookDuration: f.histogram("gateway_webhook_delivery_duration_seconds", "Time of a webhook delivery attempt, by outcome.",
			latency, "outcome"),
		mediaSteps: f.histogram("gateway_media_step_duration_seconds", "Media stage steps, by step (fetch, probe, extract) and outcome (ok, failed).",
			slow, "step", "outcome"),
		storeWrites: f.histogram("gateway_store_write_duration_seconds", "Writes of job state to the store by the workers, by operation (save_job, update_progress) and outcome (ok, failed).",
			latency, "operation", "outcome"),
		housekeepingRuns: f.counter("gateway_housekeeping_runs_total", "Rounds of the workers' housekeeping sweeps, by sweep and outcome (ok, failed, skipped: another process ran or runs the round).",
			"sweep", "outcome"),
		housekept: f.counter("gateway_housekeeping_removed_total", "Files and rows the workers' housekeeping sweeps removed, by sweep.", "sweep"),
		jobsReconciled: f.counter("gateway_jobs_reconciled_total", "Jobs the reconciliation sweep failed because their workflow had ended (WORKFLOW_CLOSED) or never started (JOB_NOT_STARTED) while the store held them open, by code.",
			"code"),
		retentionSweeps: f.counter("gateway_retention_sweeps_total", "Retention sweeps, by outcome (ok, failed).", "outcome"),
		retained: f.counter("gateway_retention_expired_total", "What the retention sweeps expired, by kind (results: results erased; jobs: jobs deleted; erasures: unfinished erasures started again).",
			"kind"),
		usage: newUsageMetrics(f),
		breakerTransitions: f.counter("gateway_provider_breaker_transitions_total", "Changes of state of providers' circuit breakers, by service, provider, from and to (closed, open, half_open).",
			"service", "provider", "from", "to"),
	}
}

type factory struct{ r prometheus.Registerer }

func (f factory) counter(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.r.MustRegister(c)
	return c
}

func (f factory) histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.r.MustRegister(h)
	return h
}

// Registerer is where other parts of the process (the Temporal SDK's
// metrics, the dispatcher's backlog) register their collectors.
func (m *Metrics) Registerer() prometheus.Registerer { return m.registry }

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// HTTPRequest records one answered request; route is the route template
// ("/v1/transcriptions/:id"), or "unmatched".
func (m *Metrics) HTTPRequest(route, method string, status int, took time.Duration) {
	if m == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	method = methodLabel(method)
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(took.Seconds())
}

// methodLabel is method when it is one of HTTP's, else "OTHER": a client
// may send any token as a method, and labels must stay few.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// JobCreated records an accepted job.
func (m *Metrics) JobCreated(service string) {
	if m != nil {
		m.jobsCreated.WithLabelValues(service).Inc()
	}
}

// JobFinished records a job that reached a terminal status.
func (m *Metrics) JobFinished(service, provider, status, errorCode string) {
	if m != nil {
		m.jobsFinished.WithLabelValues(service, provider, status, errorCode).Inc()
	}
}

// RoutingDecision records one routing decision.
func (m *Metrics) RoutingDecision(service, reason, policySource string) {
	if m != nil {
		m.routingDecisions.WithLabelValues(service, reason, policySource).Inc()
	}
}

// Failover records a provider whose failure made a job fail over.
func (m *Metrics) Failover(service, provider string) {
	if m != nil {
		m.failovers.WithLabelValues(service, provider).Inc()
	}
}

// ProviderCall records one provider call.
func (m *Metrics) ProviderCall(service, provider, outcome string, took time.Duration) {
	if m != nil {
		m.providerCalls.WithLabelValues(service, provider, outcome).Observe(took.Seconds())
	}
}

// WebhookDelivery records one delivery attempt.
func (m *Metrics) WebhookDelivery(outcome string, took time.Duration) {
	if m != nil {
		m.webhooks.WithLabelValues(outcome).Inc()
		m.webhookDuration.WithLabelValues(outcome).Observe(took.Seconds())
	}
}

// MediaStep records one step of the media stage.
func (m *Metrics) MediaStep(step, outcome string, took time.Duration) {
	if m != nil {
		m.mediaSteps.WithLabelValues(step, outcome).Observe(took.Seconds())
	}
}

// StoreWrite records one write of job state to the store.
func (m *Metrics) StoreWrite(operation string, err error, took time.Duration) {
	if m != nil {
		outcome := "ok"
		if err != nil {
			outcome = "failed"
		}
		m.storeWrites.WithLabelValues(operation, outcome).Observe(took.Seconds())
	}
}

// Housekeeping records one round of a housekeeping sweep, and what it
// removed.
func (m *Metrics) Housekeeping(sweep, outcome string, removed int) {
	if m != nil {
		m.housekeepingRuns.WithLabelValues(sweep, outcome).Inc()
		m.housekept.WithLabelValues(sweep).Add(float64(removed))
	}
}

// JobReconciled records a job the reconciliation sweep failed with code.
func (m *Metrics) JobReconciled(code string) {
	if m != nil {
		m.jobsReconciled.WithLabelValues(code).Inc()
	}
}

// RetentionSweep records a retention sweep that ended with outcome.
func (m *Metrics) RetentionSweep(outcome string) {
	if m != nil {
		m.retentionSweeps.WithLabelValues(outcome).Inc()
	}
}

// RetentionExpired records n things of kind that a retention sweep
// expired.
func (m *Metrics) RetentionExpired(kind string, n int) {
	if m != nil && n > 0 {
		m.retained.WithLabelValues(kind).Add(float64(n))
	}
}

// TemporalHandler is the Temporal SDK's metrics handler, exporting the
// SDK's own metrics (temporal_*: workflow and activity task latencies,
// poller counts, sticky cache) into this registry through OpenTelemetry's
// Prometheus exporter.
func (m *Metrics) TemporalHandler() (client.MetricsHandler, error) {
	exporter, err := otelprometheus.New(otelprometheus.WithRegisterer(m.registry), otelprometheus.WithoutScopeInfo())
	if err != nil {
		return nil, err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: provider.Meter("temporal-sdk-go"),
		// A metric the exporter refuses must not take the worker down.
		OnError: func(error) {},
	}), nil
}

// Backlog registers gateway_job_starts_pending: accepted jobs whose
// workflow is not started yet (the outbox), counted by count when
// Prometheus scrapes; a failed count reports -1.
func (m *Metrics) Backlog(count func(context.Context) (int64, error)) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gateway_job_starts_pending",
		Help: "Accepted jobs whose workflow is not started yet (the outbox of job starts); -1 when it cannot be counted.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, err := count(ctx)
		if err != nil {
			return -1
		}
		return float64(n)
	}))
}
