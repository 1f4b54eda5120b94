package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BreakerTransition counts a change of state of a provider's circuit
// breaker for a service (docs/providers.md, Circuit breakers).
func (m *Metrics) BreakerTransition(service, provider, from, to string) {
	if m != nil {
		m.breakerTransitions.WithLabelValues(service, provider, from, to).Inc()
	}
}

// BreakerSample is a breaker's state for gateway_provider_breaker_state:
// 0 closed, 1 half-open, 2 open.
type BreakerSample struct {
	Service, Provider string
	State             float64
}

var breakerStateDesc = prometheus.NewDesc("gateway_provider_breaker_state",
	"State of a provider's circuit breaker for a service, as the store holds it when scraped: 0 closed, 1 half-open, 2 open.",
	[]string{"service", "provider"}, nil)

// Breakers registers gateway_provider_breaker_state, read by read when
// Prometheus scrapes; a failed read reports no breaker.
func (m *Metrics) Breakers(read func(context.Context) ([]BreakerSample, error)) {
	m.registry.MustRegister(breakerCollector(read))
}

type breakerCollector func(context.Context) ([]BreakerSample, error)

func (c breakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- breakerStateDesc }

func (c breakerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	samples, err := c(ctx)
	if err != nil {
		return
	}
	for _, s := range samples {
		ch <- prometheus.MustNewConstMetric(breakerStateDesc, prometheus.GaugeValue, s.State, s.Service, s.Provider)
	}
}
