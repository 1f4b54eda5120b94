package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

func TestBreakerOpensAndProbes(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		key := store.BreakerKey{ProviderID: "flaky", Service: jobs.LLMTasks}
		cfg := breaker.Defaults()
		cfg.MinCalls, cfg.Window, cfg.OpenFor = 5, 2*time.Second, time.Second
		now := time.Now().UTC()

		got, err := s.Breakers.Breakers(ctx)
		require.NoError(t, err)
		require.Empty(t, got, "no call seen: no row")

		var opened []breaker.Transition
		for i := range 5 {
			o := breaker.Failure
			if i%2 == 1 {
				o = breaker.Success
			}
			_, tr, err := s.Breakers.RecordBreakerOutcome(ctx, key, cfg, o, now.Add(time.Duration(i)*10*time.Millisecond))
			require.NoError(t, err)
			if tr.Changed() {
				opened = append(opened, tr)
			}
		}
		require.Equal(t, []breaker.Transition{{From: breaker.Closed, To: breaker.Open, Reason: "failure rate"}}, opened, "3 of 5 failed")

		got, err = s.Breakers.Breakers(ctx)
		require.NoError(t, err)
		b := got[key]
		require.Equal(t, breaker.Open, b.Effective(now.Add(100*time.Millisecond)))
		calls, failures := b.Counts(cfg, now.Add(100*time.Millisecond))
		require.Equal(t, []int{5, 3}, []int{calls, failures}, "the window round-trips")
		require.Equal(t, 1, b.Opens)
		require.WithinDuration(t, now.Add(40*time.Millisecond+time.Second), b.OpenUntil, time.Millisecond)

		ok, _, err := s.Breakers.TakeBreakerProbe(ctx, key, cfg, now.Add(500*time.Millisecond))
		require.NoError(t, err)
		require.False(t, ok, "still open")
		later := now.Add(2 * time.Second)
		ok, tr, err := s.Breakers.TakeBreakerProbe(ctx, key, cfg, later)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, breaker.HalfOpen, tr.To)

		b, err = s.Breakers.ForceBreaker(ctx, key, breaker.Open, "ops@example.com", later)
		require.NoError(t, err)
		got, err = s.Breakers.Breakers(ctx)
		require.NoError(t, err)
		require.Equal(t, breaker.Open, got[key].Effective(later.Add(time.Hour)))
		require.Equal(t, "ops@example.com", got[key].ForcedBy)
		require.WithinDuration(t, later, got[key].ForcedAt, time.Millisecond)
		require.Equal(t, b.Forced, got[key].Forced)
	})
}

// TestBreakerCountsConcurrentOutcomes: two workers recording at the same
// time lose none of each other's outcomes.
func TestBreakerCountsConcurrentOutcomes(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		key := store.BreakerKey{ProviderID: "busy", Service: jobs.Transcriptions}
		cfg := breaker.Defaults()
		cfg.MinCalls = 1000 // never opens here
		now := time.Now().UTC()
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() {
				for i := range 40 {
					o := breaker.Success
					if w == 0 {
						o = breaker.Failure
					}
					_, _, err := s.Breakers.RecordBreakerOutcome(ctx, key, cfg, o, now.Add(time.Duration(i)*time.Millisecond))
					require.NoError(t, err)
				}
			})
		}
		wg.Wait()
		got, err := s.Breakers.Breakers(ctx)
		require.NoError(t, err)
		calls, failures := got[key].Counts(cfg, now.Add(time.Second))
		require.Equal(t, 80, calls)
		require.Equal(t, 40, failures)
	})
}
