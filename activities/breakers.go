package activities

import (
	"context"
	"errors"
	"log/slog"
	"sync"
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
	RecordBreakerOutcomes(ctx context.Context, key store.BreakerKey, cfg breaker.Config, calls []breaker.Call) (breaker.Breaker, []breaker.Transition, error)
	TakeBreakerProbe(ctx context.Context, key store.BreakerKey, cfg breaker.Config, now time.Time) (bool, breaker.Transition, error)
}

// Breakers are the providers' circuit breakers as the activities use
// them (docs/providers.md, Circuit breakers): provider calls record how
// they ended, routing reads the states and takes half-open probes. A nil
// *Breakers does nothing.
//
// The successes of a breaker this process last saw closed are recorded
// together, at most successBatch after the first (one transaction for
// many calls instead of one each); a failure, and any outcome of a
// breaker that is not closed, is recorded at once, after the successes
// waiting before it.
type Breakers struct {
	Store     BreakerStore
	Providers *providers.Registry
	Metrics   *metrics.Metrics
	Logger    *slog.Logger

	// writing orders this process's writes of outcomes: a failure is
	// written after the successes waiting before it, and a flush never
	// races it.
	writing sync.Mutex
	mu      sync.Mutex
	// seen is the state of each breaker as this process last wrote it.
	seen map[store.BreakerKey]breaker.State
	// waiting are the successes not recorded yet; a flush is scheduled
	// while there are any.
	waiting map[store.BreakerKey][]breaker.Call
}

// successBatch is how long a success of a closed breaker may wait to be
// recorded with others.
const successBatch = 250 * time.Millisecond

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
	call := breaker.Call{Outcome: o, At: time.Now().UTC()}
	if o == breaker.Success && b.wait(key, call) {
		return
	}
	b.writing.Lock()
	defer b.writing.Unlock()
	if err := b.write(ctx, key, append(b.take(key), call)); err != nil {
		activity.GetLogger(ctx).Warn("circuit breaker outcome not recorded", "provider", providerID, "service", service, "error", err)
	}
}

// wait holds a success of a breaker last seen closed for the next flush.
func (b *Breakers) wait(key store.BreakerKey, call breaker.Call) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if state, ok := b.seen[key]; !ok || state != breaker.Closed {
		return false
	}
	if len(b.waiting) == 0 {
		time.AfterFunc(successBatch, b.flush)
	}
	if b.waiting == nil {
		b.waiting = map[store.BreakerKey][]breaker.Call{}
	}
	b.waiting[key] = append(b.waiting[key], call)
	return true
}

// take removes and returns the successes of key waiting.
func (b *Breakers) take(key store.BreakerKey) []breaker.Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	calls := b.waiting[key]
	delete(b.waiting, key)
	return calls
}

// flush records every success waiting.
func (b *Breakers) flush() {
	b.writing.Lock()
	defer b.writing.Unlock()
	b.mu.Lock()
	waiting := b.waiting
	b.waiting = nil
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for key, calls := range waiting {
		if err := b.write(ctx, key, calls); err != nil {
			b.logger().Warn("circuit breaker outcomes not recorded", "provider", key.ProviderID, "service", key.Service, "calls", len(calls), "error", err)
		}
	}
}

// write records calls of key's breaker in the store, then logs and counts
// the transitions they made.
func (b *Breakers) write(ctx context.Context, key store.BreakerKey, calls []breaker.Call) error {
	br, ts, err := b.Store.RecordBreakerOutcomes(ctx, key, b.config(key.ProviderID), calls)
	if err != nil {
		return err
	}
	b.saw(key, br.Effective(time.Now()))
	for _, t := range ts {
		b.transition(key, t)
	}
	return nil
}

// saw notes key's breaker's state as this process last wrote it.
func (b *Breakers) saw(key store.BreakerKey, state breaker.State) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen == nil {
		b.seen = map[store.BreakerKey]breaker.State{}
	}
	b.seen[key] = state
}

func (b *Breakers) logger() *slog.Logger {
	if b.Logger != nil {
		return b.Logger
	}
	return slog.Default()
}

// transition logs and counts a change of state.
func (b *Breakers) transition(key store.BreakerKey, t breaker.Transition) {
	if !t.Changed() {
		return
	}
	b.logger().Info("circuit breaker changed state", "provider", key.ProviderID, "service", key.Service,
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
	state := breaker.HalfOpen // routing asks only half-open breakers for probes
	if t.Changed() {
		state = t.To
	}
	b.saw(key, state)
	b.transition(key, t)
	return ok, nil
}
