package providers

import (
	"fmt"
	"time"

	"github.com/ai-job-gateway/gateway/internal/breaker"
)

// CircuitBreaker is a circuit_breaker block of the catalog
// (docs/providers.md, Circuit breakers): at the top level the
// deployment's defaults, in a provider its overrides. Absent fields keep
// the defaults.
type CircuitBreaker struct {
	Enabled             *bool    `yaml:"enabled"`
	FailureRatePercent  *float64 `yaml:"failure_rate_percent"`
	MinimumCalls        *int     `yaml:"minimum_calls"`
	WindowSeconds       *float64 `yaml:"window_seconds"`
	ConsecutiveFailures *int     `yaml:"consecutive_failures"`
	OpenSeconds         *float64 `yaml:"open_seconds"`
	MaxOpenSeconds      *float64 `yaml:"max_open_seconds"`
	HalfOpenProbes      *int     `yaml:"half_open_probes"`
	CloseAfterSuccesses *int     `yaml:"close_after_successes"`
}

// validate checks the block; each message starts with the field.
func (cb *CircuitBreaker) validate() []string {
	if cb == nil {
		return nil
	}
	var msgs []string
	if v := cb.FailureRatePercent; v != nil && (*v <= 0 || *v > 100) {
		msgs = append(msgs, fmt.Sprintf("failure_rate_percent %v is out of range; use a number above 0, at most 100", *v))
	}
	positive := func(name string, v *float64) {
		if v != nil && *v <= 0 {
			msgs = append(msgs, fmt.Sprintf("%s %v must be above 0", name, *v))
		}
	}
	positive("window_seconds", cb.WindowSeconds)
	positive("open_seconds", cb.OpenSeconds)
	positive("max_open_seconds", cb.MaxOpenSeconds)
	atLeast := func(name string, v *int, least int) {
		if v != nil && *v < least {
			msgs = append(msgs, fmt.Sprintf("%s %d must be at least %d", name, *v, least))
		}
	}
	atLeast("minimum_calls", cb.MinimumCalls, 1)
	atLeast("consecutive_failures", cb.ConsecutiveFailures, 0)
	atLeast("half_open_probes", cb.HalfOpenProbes, 1)
	atLeast("close_after_successes", cb.CloseAfterSuccesses, 1)
	return msgs
}

// apply sets the fields the block gives on cfg.
func (cb *CircuitBreaker) apply(cfg *breaker.Config) {
	if cb == nil {
		return
	}
	seconds := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
	if cb.Enabled != nil {
		cfg.Disabled = !*cb.Enabled
	}
	if cb.FailureRatePercent != nil {
		cfg.FailureRate = *cb.FailureRatePercent / 100
	}
	if cb.MinimumCalls != nil {
		cfg.MinCalls = *cb.MinimumCalls
	}
	if cb.WindowSeconds != nil {
		cfg.Window = seconds(*cb.WindowSeconds)
	}
	if cb.ConsecutiveFailures != nil {
		cfg.ConsecutiveFailures = *cb.ConsecutiveFailures
	}
	if cb.OpenSeconds != nil {
		cfg.OpenFor = seconds(*cb.OpenSeconds)
	}
	if cb.MaxOpenSeconds != nil {
		cfg.MaxOpenFor = seconds(*cb.MaxOpenSeconds)
	}
	if cb.HalfOpenProbes != nil {
		cfg.Probes = *cb.HalfOpenProbes
	}
	if cb.CloseAfterSuccesses != nil {
		cfg.CloseAfter = *cb.CloseAfterSuccesses
	}
}

// BreakerConfig is the circuit breaker of a provider: breaker.Defaults,
// then the catalog's circuit_breaker, then the provider's.
func (c *Catalog) BreakerConfig(p *Provider) breaker.Config {
	cfg := breaker.Defaults()
	c.CircuitBreaker.apply(&cfg)
	if p != nil {
		p.CircuitBreaker.apply(&cfg)
	}
	return cfg
}
