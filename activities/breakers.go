package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// BreakerStore keeps the providers' circuit breakers (store.Cache: read
// at most a TTL old).
type BreakerStore interface {
	Breakers(ctx context.Context) (map[store.BreakerKey]breaker.Breaker, error)
	RecordBreakerOutcome(ctx context.Context, key store.BreakerKey, cfg breaker.Config, o breaker.Outcome, now time.Time) (breaker.Breaker, breaker.Transition, error)
	TakeBreakerProbe(ctx context.Context, key store.BreakerKey, cfg breaker.Config, now time.Time) (bool, breaker.Transition, error)
}

// Breakers are the providers' circuit breakers as the activities use
// them (docs/providers.md, Circuit breakers): provider calls record how
// they ended, routing reads the states and takes half-open probes. A nil
// *Breakers does nothing.
type Breakers struct {
	Store     BreakerStore
	Providers *providers.Registry
	Metrics   *metrics.Metrics
}

func (b *Breakers) config(providerID string) breaker.Config {
	catalog := b.Providers.Catalog()
	p, _ := catalog.Lookup(providerID)
	return catalog.BreakerConfig(p)
}

// breakerOutcome is what a call's end means to its provider's breaker: a
// retryable provider error (5xx, timeout, connection error, 429) is a
// failure; a refusal or the job's own input error, and a cancelled call,
// count as nothing.
func breakerOutcome(ctx context.Context, err error) (breaker.Outcome, bool) {
	if err == nil {
		return breaker.Success, true
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return 0, false
	}
	var perr *providers.Error
	if errors.As(err, &perr) && perr.Kind != providers.KindRetryable {
		return 0, false
	}
	return breaker.Failure, true
}

// record counts how a call to a provider for a service ended. A failure
// to record it is logged: it must not fail the job.
func (b *Breakers) record(ctx context.Context, providerID string, service jobs.ServiceID, err error) {
	if b == nil || b.Store == nil {
		return
	}
	o, counts := breakerOutcome(ctx, err)
	if !counts {
		return
	}
	key := store.BreakerKey{ProviderID: providerID, Service: service}
	_, t, err := b.Store.RecordBreakerOutcome(ctx, key, b.config(providerID), o, time.Now().UTC())
	if err != nil {
		activity.GetLogger(ctx).Warn("circuit breaker outcome not recorded", "provider", providerID, "service", service, "error", err)
		return
	}
	b.transition(ctx, key, t)
}

// transition logs and counts a change of state.
func (b *Breakers) transition(ctx context.Context, key store.BreakerKey, t breaker.Transition) {
	if !t.Changed() {
		return
	}
	activity.GetLogger(ctx).Info("circuit breaker changed state", "provider", key.ProviderID, "service", key.Service,
		"from", t.From, "to", t.To, "reason", t.Reason)
	b.Metrics.BreakerTransition(string(key.Service), key.ProviderID, string(t.From), string(t.To))
}

// circuits reads the breakers of a service's providers for routing.
func (b *Breakers) circuits(ctx context.Context, service jobs.ServiceID, now time.Time) (map[string]policy.Circuit, error) {
	if b == nil || b.Store == nil {
		return nil, nil
	}
	all, err := b.Store.Breakers(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]policy.Circuit{}
	for key, br := range all {
		if key.Service != service {
			continue
		}
		c := policy.Circuit{State: br.Effective(now), Forced: br.Forced != "", NextProbe: br.NextProbe(now)}
		if !c.Forced && b.config(key.ProviderID).Disabled {
			continue // a breaker turned off since it opened is closed
		}
		out[key.ProviderID] = c
	}
	return out, nil
}

// takeProbe lets a routing decision through a half-open breaker if it has
// a probe left.
func (b *Breakers) takeProbe(ctx context.Context, providerID string, service jobs.ServiceID, now time.Time) (bool, error) {
	key := store.BreakerKey{ProviderID: providerID, Service: service}
	ok, t, err := b.Store.TakeBreakerProbe(ctx, key, b.config(providerID), now)
	if err != nil {
		return false, err
	}
	b.transition(ctx, key, t)
	return ok, nil
}
