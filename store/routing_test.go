package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestReserveRateEnforcesLimits(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
		for i := range 3 {
			ok, err := s.ReserveRate(ctx, "p", "llm-tasks", 3, 5, now)
			require.NoError(t, err)
			require.True(t, ok, "request %d fits", i+1)
		}
		ok, err := s.ReserveRate(ctx, "p", "llm-tasks", 3, 5, now)
		require.NoError(t, err)
		require.False(t, ok, "the fourth request in a minute is over the limit")

		counts, err := s.RateCounts(ctx, "llm-tasks", []string{"p", "q"}, now)
		require.NoError(t, err)
		require.Equal(t, store.RateCount{Minute: 3, Day: 3}, counts["p"], "a refused request is not counted")
		require.Equal(t, store.RateCount{}, counts["q"])

		// The next minute has room again, until the day is full.
		next := now.Add(time.Minute)
		for range 2 {
			ok, err = s.ReserveRate(ctx, "p", "llm-tasks", 3, 5, next)
			require.NoError(t, err)
			require.True(t, ok)
		}
		ok, err = s.ReserveRate(ctx, "p", "llm-tasks", 3, 5, next)
		require.NoError(t, err)
		require.False(t, ok, "the day's limit of 5 is reached")

		// Other services and unlimited providers are unaffected.
		ok, err = s.ReserveRate(ctx, "p", "translations", 3, 5, now)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.ReserveRate(ctx, "unlimited", "llm-tasks", 0, 0, now)
		require.NoError(t, err)
		require.True(t, ok)

		require.NoError(t, s.PruneRateCounters(ctx, now.Add(72*time.Hour)))
		counts, err = s.RateCounts(ctx, "llm-tasks", []string{"p"}, now)
		require.NoError(t, err)
		require.Equal(t, store.RateCount{}, counts["p"])
	})
}

func TestReserveRateUnderConcurrency(t *testing.T) {
	t.Parallel()
	s := storetest.Postgres(t)
	ctx := context.Background()
	now := time.Now()
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.ReserveRate(ctx, "p", "llm-tasks", 25, 0, now)
			if err == nil && ok {
				granted.Add(1)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int64(25), granted.Load(), "exactly the limit is granted")
}

func TestNextTurnIsShared(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		seen := map[int64]bool{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				turn, err := s.NextTurn(ctx, "policy-1")
				require.NoError(t, err)
				mu.Lock()
				seen[turn] = true
				mu.Unlock()
			}()
		}
		wg.Wait()
		require.Len(t, seen, 20, "every caller gets its own turn")
		for turn := range int64(20) {
			require.True(t, seen[turn], "turn %d handed out", turn)
		}
		turn, err := s.NextTurn(ctx, "policy-2")
		require.NoError(t, err)
		require.Equal(t, int64(0), turn, "counters are per key")
	})
}

func TestLatencyMovingAverage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		require.NoError(t, s.RecordLatency(ctx, "p", "llm-tasks", 100*time.Millisecond))
		require.NoError(t, s.RecordLatency(ctx, "p", "llm-tasks", 200*time.Millisecond))
		got, err := s.Latencies(ctx, "llm-tasks")
		require.NoError(t, err)
		require.InDelta(t, 120.0, got["p"], 0.001, "0.8 × 100 + 0.2 × 200")
		other, err := s.Latencies(ctx, "translations")
		require.NoError(t, err)
		require.Empty(t, other)
	})
}
