package main

import (
	"context"
	"slices"
	"time"

	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// breakerReader reads the providers' circuit breakers.
type breakerReader interface {
	Breakers(ctx context.Context) (map[store.BreakerKey]breaker.Breaker, error)
}

// breakerGaugeValues are gateway_provider_breaker_state's values.
var breakerGaugeValues = map[breaker.State]float64{breaker.Closed: 0, breaker.HalfOpen: 1, breaker.Open: 2}

// breakerSamples reads the state of every breaker of the catalog for
// gateway_provider_breaker_state (docs/providers.md, Circuit breakers).
func breakerSamples(st breakerReader, registry *providers.Registry) func(context.Context) ([]metrics.BreakerSample, error) {
	return func(ctx context.Context) ([]metrics.BreakerSample, error) {
		all, err := st.Breakers(ctx)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		var out []metrics.BreakerSample
		for _, p := range registry.Catalog().Providers {
			services := make([]jobs.ServiceID, 0, len(p.Services))
			for id := range p.Services {
				services = append(services, id)
			}
			slices.Sort(services)
			for _, service := range services {
				b := all[store.BreakerKey{ProviderID: p.ID, Service: service}]
				out = append(out, metrics.BreakerSample{Service: string(service), Provider: p.ID, State: breakerGaugeValues[b.Effective(now)]})
			}
		}
		return out, nil
	}
}
