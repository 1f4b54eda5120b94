package store_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestReserveRateEnforcesLimits(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
		for i := range 3 {
			ok, err := s.Routing.ReserveRate(ctx, "p", "llm-tasks", 3, 5, now)
			require.NoError(t, err)
			require.True(t, ok, "request %d fits", i+1)
		}
		ok, err := s.Routing.ReserveRate(ctx, "p", "llm-tasks", 3, 5, now)
		require.NoError(t, err)
		require.False(t, ok, "the fourth request in a minute is over the limit")

		counts, err := s.Routing.RateCounts(ctx, "llm-tasks", []string{"p", "q"}, now)
		require.NoError(t, err)
		require.Equal(t, store.RateCount{Minute: 3, Day: 3}, counts["p"], "a refused request is not counted")
		require.Equal(t, store.RateCount{}, counts["q"])

		// The next minute has room again, until the day is full.
		next := now.Add(time.Minute)
		for range 2 {
			ok, err = s.Routing.ReserveRate(ctx, "p", "llm-tasks", 3, 5, next)
			require.NoError(t, err)
			require.True(t, ok)
		}
		ok, err = s.Routing.ReserveRate(ctx, "p", "llm-tasks", 3, 5, next)
		require.NoError(t, err)
		require.False(t, ok, "the day's limit of 5 is reached")

		// Other services and unlimited providers are unaffected.
		ok, err = s.Routing.ReserveRate(ctx, "p", "translations", 3, 5, now)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.Routing.ReserveRate(ctx, "unlimited", "llm-tasks", 0, 0, now)
		require.NoError(t, err)
		require.True(t, ok)

		removed, err := s.Routing.DeleteExpiredRateCounters(ctx, now.Add(72*time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 5, removed, "two minutes and a day of llm-tasks, a minute and a day of translations")
		counts, err = s.Routing.RateCounts(ctx, "llm-tasks", []string{"p"}, now)
		require.NoError(t, err)
		require.Equal(t, store.RateCount{}, counts["p"])
	})
}

func TestReserveRateCountsBothWindowsOrNeither(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
		reserve := func(at time.Time) bool {
			t.Helper()
			ok, err := s.Routing.ReserveRate(ctx, "p", "llm-tasks", 2, 3, at)
			require.NoError(t, err)
			return ok
		}
		counts := func(at time.Time) store.RateCount {
			t.Helper()
			c, err := s.Routing.RateCounts(ctx, "llm-tasks", []string{"p"}, at)
			require.NoError(t, err)
			return c["p"]
		}
		require.True(t, reserve(now))
		require.True(t, reserve(now))
		require.False(t, reserve(now), "the minute is full")
		require.Equal(t, store.RateCount{Minute: 2, Day: 2}, counts(now), "the day did not count the refused request")

		next := now.Add(time.Minute)
		require.True(t, reserve(next))
		require.False(t, reserve(next), "the day is full, the minute is not")
		require.Equal(t, store.RateCount{Minute: 1, Day: 3}, counts(next), "the minute did not count the refused request")

		// Only the limited window is counted.
		ok, err := s.Routing.ReserveRate(ctx, "q", "llm-tasks", 0, 1, now)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.Routing.ReserveRate(ctx, "q", "llm-tasks", 0, 1, now)
		require.NoError(t, err)
		require.False(t, ok)
		c, err := s.Routing.RateCounts(ctx, "llm-tasks", []string{"q"}, now)
		require.NoError(t, err)
		require.Equal(t, store.RateCount{Day: 1}, c["q"])
	})
}

// TestReserveRateUnderConcurrency reserves from many goroutines over
// several stores on one database, as several workers do: whichever window
// is the tighter, exactly its limit is granted, and a refused request is
// counted in neither window.
func TestReserveRateUnderConcurrency(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		perMinute, perDay int
	}{{"minute", 25, 1000}, {"day", 1000, 25}, {"minute only", 25, 0}} {
		// One case at a time, at most 12 requests in flight: enough to
		// race, without taking PostgreSQL's connections from the tests of
		// other packages running meanwhile.
		t.Run(tc.name, func(t *testing.T) {
			eachShared(t, 3, func(t *testing.T, stores []*store.Store) {
				ctx := context.Background()
				now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
				var granted atomic.Int64
				var wg sync.WaitGroup
				inFlight := make(chan struct{}, 12)
				for i := range 60 {
					wg.Go(func() {
						inFlight <- struct{}{}
						defer func() { <-inFlight }()
						ok, err := stores[i%len(stores)].Routing.ReserveRate(ctx, "p", "llm-tasks", tc.perMinute, tc.perDay, now)
						if err != nil {
							t.Errorf("reserve: %v", err)
						}
						if ok {
							granted.Add(1)
						}
					})
				}
				wg.Wait()
				require.Equal(t, int64(25), granted.Load(), "exactly the limit is granted")
				counts, err := stores[0].Routing.RateCounts(ctx, "llm-tasks", []string{"p"}, now)
				require.NoError(t, err)
				want := store.RateCount{Minute: 25, Day: 25}
				if tc.perDay == 0 {
					want.Day = 0
				}
				require.Equal(t, want, counts["p"])
			})
		})
	}
}

// eachShared runs fn with n stores on one database, as n processes have,
// on PostgreSQL and on SQLite.
func eachShared(t *testing.T, n int, fn func(t *testing.T, stores []*store.Store)) {
	for name, databaseURL := range map[string]func(testing.TB) string{
		"postgres": storetest.FreshPostgresURL,
		"sqlite":   func(t testing.TB) string { return "sqlite:" + filepath.Join(t.TempDir(), "gateway.db") },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			u := databaseURL(t)
			stores := make([]*store.Store, n)
			for i := range stores {
				s, err := store.Open(ctx, u)
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				if i == 0 {
					require.NoError(t, s.Migrate(ctx))
				}
				stores[i] = s
			}
			fn(t, stores)
		})
	}
}

func TestCacheReserveRateRemembersFullWindows(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		cache := store.NewCache(s, time.Second)
		now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
		reserve := func(perMinute int, at time.Time) bool {
			t.Helper()
			ok, err := cache.ReserveRate(ctx, "p", "llm-tasks", perMinute, 100, at)
			require.NoError(t, err)
			return ok
		}
		require.True(t, reserve(2, now))
		require.True(t, reserve(2, now), "the second request fills the minute")

		// The cache knows the minute is full: it refuses without asking
		// the database, even once the counters are gone.
		_, err := db.Exec("DELETE FROM rate_counters")
		require.NoError(t, err)
		require.False(t, reserve(2, now.Add(29*time.Second)))
		ok, err := s.Routing.ReserveRate(ctx, "p", "llm-tasks", 2, 100, now)
		require.NoError(t, err)
		require.True(t, ok, "the database has room again")
		require.True(t, reserve(3, now), "a higher limit is asked again")

		// The next minute is asked again; a refusal by the database (other
		// workers took the slots) is remembered too.
		next := now.Add(30 * time.Second)
		require.True(t, reserve(2, next))
		ok, err = s.Routing.ReserveRate(ctx, "p", "llm-tasks", 2, 100, next)
		require.NoError(t, err)
		require.True(t, ok, "another worker takes the last slot")
		require.False(t, reserve(2, next))
		_, err = db.Exec("DELETE FROM rate_counters")
		require.NoError(t, err)
		require.False(t, reserve(2, next), "remembered")
		require.True(t, reserve(2, next.Add(time.Minute)))
	})
}

func TestNextTurnIsShared(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		seen := map[int64]bool{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				turn, err := s.Routing.NextTurn(ctx, "policy-1")
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
		turn, err := s.Routing.NextTurn(ctx, "policy-2")
		require.NoError(t, err)
		require.Equal(t, int64(0), turn, "counters are per key")
	})
}

func TestLatencyMovingAverage(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		require.NoError(t, s.Routing.RecordLatency(ctx, "p", "llm-tasks", 100*time.Millisecond))
		require.NoError(t, s.Routing.RecordLatency(ctx, "p", "llm-tasks", 200*time.Millisecond))
		got, err := s.Routing.Latencies(ctx, "llm-tasks")
		require.NoError(t, err)
		require.InDelta(t, 120.0, got["p"], 0.001, "0.8 × 100 + 0.2 × 200")
		other, err := s.Routing.Latencies(ctx, "translations")
		require.NoError(t, err)
		require.Empty(t, other)
	})
}

// samples reads how many observations the stored average holds.
func samples(t *testing.T, db *sql.DB, provider string) int {
	t.Helper()
	var n int
	err := db.QueryRow("SELECT samples FROM provider_latencies WHERE provider_id = '" + provider + "' AND service = 'llm-tasks'").Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0
	}
	require.NoError(t, err)
	return n
}

func TestCacheBatchesLatencies(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		clock := store.NewClock(time.Now())
		cache := store.NewCacheAt(s, time.Hour, clock.Now)
		stored := func(provider string) float64 {
			t.Helper()
			got, err := s.Routing.Latencies(ctx, "llm-tasks")
			require.NoError(t, err)
			return got[provider]
		}

		// The first observation is written at once, those within the TTL
		// after it wait.
		require.NoError(t, cache.RecordLatency(ctx, "p", "llm-tasks", 100*time.Millisecond))
		require.InDelta(t, 100.0, stored("p"), 0.001)
		require.NoError(t, cache.RecordLatency(ctx, "p", "llm-tasks", 200*time.Millisecond))
		require.NoError(t, cache.RecordLatency(ctx, "p", "llm-tasks", 300*time.Millisecond))
		require.NoError(t, cache.RecordLatency(ctx, "q", "llm-tasks", 50*time.Millisecond))
		require.InDelta(t, 100.0, stored("p"), 0.001, "not written yet")
		require.Equal(t, 1, samples(t, db, "p"))
		require.InDelta(t, 50.0, stored("q"), 0.001, "another provider's first is written at once")

		// Once the TTL has passed, the next observation writes them all,
		// folded in order: the same average as one write each.
		clock.Advance(time.Hour)
		require.NoError(t, cache.RecordLatency(ctx, "p", "llm-tasks", 400*time.Millisecond))
		want := ((100*0.8+200*0.2)*0.8+300*0.2)*0.8 + 400*0.2
		require.InDelta(t, want, stored("p"), 0.001)
		require.Equal(t, 4, samples(t, db, "p"))

		// Flush writes what is left; a new average starts with its first
		// observation.
		require.NoError(t, cache.RecordLatency(ctx, "p", "llm-tasks", 500*time.Millisecond))
		require.NoError(t, cache.RecordLatency(ctx, "r", "llm-tasks", 10*time.Millisecond))
		require.NoError(t, cache.RecordLatency(ctx, "r", "llm-tasks", 20*time.Millisecond))
		require.NoError(t, cache.Flush(ctx))
		require.InDelta(t, want*0.8+500*0.2, stored("p"), 0.001)
		require.Equal(t, 5, samples(t, db, "p"))
		require.InDelta(t, 12.0, stored("r"), 0.001, "0.8 × 10 + 0.2 × 20")
		require.Equal(t, 2, samples(t, db, "r"))

		// A write that fails keeps its observations for the next.
		clock.Advance(time.Hour)
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		require.Error(t, cache.RecordLatency(canceled, "r", "llm-tasks", 30*time.Millisecond))
		require.Equal(t, 2, samples(t, db, "r"))
		require.NoError(t, cache.Flush(ctx))
		require.Equal(t, 3, samples(t, db, "r"))
		require.InDelta(t, 12*0.8+30*0.2, stored("r"), 0.001)
	})
}

func TestCacheWritesLatenciesInTheBackground(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		cache := store.NewCache(s, 5*time.Millisecond)
		for _, ms := range []time.Duration{100, 200, 300} {
			require.NoError(t, cache.RecordLatency(ctx, "p", "llm-tasks", ms*time.Millisecond))
		}
		require.Eventually(t, func() bool { return samples(t, db, "p") == 3 }, 5*time.Second, 2*time.Millisecond,
			"what waited is written once the TTL has passed, without another observation")
	})
}

// TestReserveRateOnceCountsADecisionOnce: a retried decision gets its
// reservation back, even from a window it filled, without being counted
// again; other decisions are counted as before.
func TestReserveRateOnceCountsADecisionOnce(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
		first := store.DecisionKey{JobID: "job-1", Attempt: 1}
		reserve := func(key store.DecisionKey, provider string, at time.Time) bool {
			t.Helper()
			ok, err := s.Routing.ReserveRateOnce(ctx, key, provider, "llm-tasks", 2, 5, at)
			require.NoError(t, err)
			return ok
		}
		counts := func(provider string, at time.Time) store.RateCount {
			t.Helper()
			c, err := s.Routing.RateCounts(ctx, "llm-tasks", []string{provider}, at)
			require.NoError(t, err)
			return c[provider]
		}

		require.True(t, reserve(first, "p", now))
		require.True(t, reserve(first, "p", now), "the retry")
		require.Equal(t, store.RateCount{Minute: 1, Day: 1}, counts("p", now))
		second := store.DecisionKey{JobID: "job-2", Attempt: 1}
		require.True(t, reserve(second, "p", now), "the second request fills the minute")
		require.True(t, reserve(second, "p", now), "a retry of the decision that filled it still fits")
		require.False(t, reserve(store.DecisionKey{JobID: "job-3", Attempt: 1}, "p", now))
		require.Equal(t, store.RateCount{Minute: 2, Day: 2}, counts("p", now))
		// The job's next attempt is another decision.
		require.True(t, reserve(store.DecisionKey{JobID: "job-1", Attempt: 2}, "p", now.Add(time.Minute)))
		require.Equal(t, store.RateCount{Minute: 1, Day: 3}, counts("p", now.Add(time.Minute)))

		// A retry that decided on another provider counts that one.
		require.True(t, reserve(first, "q", now))
		require.Equal(t, store.RateCount{Minute: 1, Day: 1}, counts("q", now))
		require.Equal(t, store.RateCount{Minute: 2, Day: 3}, counts("p", now), "the first stays counted")

		// Expired decisions are deleted; a later retry counts anew.
		later := now.Add(3 * time.Hour)
		removed, err := s.Routing.DeleteExpiredRoutingDecisions(ctx, later)
		require.NoError(t, err)
		require.EqualValues(t, 3, removed, "job-1 twice and job-2; job-3's refusal kept none")
		_, err = s.Routing.DeleteExpiredRateCounters(ctx, later)
		require.NoError(t, err)
		require.True(t, reserve(first, "q", later))
		require.Equal(t, store.RateCount{Minute: 1, Day: 2}, counts("q", later))
	})
}

// TestReserveRateOnceUnderConcurrency: attempts of one decision at the same
// time count once, over several stores on one database.
func TestReserveRateOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	eachShared(t, 3, func(t *testing.T, stores []*store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
		var wg sync.WaitGroup
		for i := range 12 {
			key := store.DecisionKey{JobID: "job-" + string(rune('a'+i%3)), Attempt: 1}
			wg.Go(func() {
				ok, err := stores[i%len(stores)].Routing.ReserveRateOnce(ctx, key, "p", "llm-tasks", 100, 0, now)
				if err != nil || !ok {
					t.Errorf("reserve: %v, %v", ok, err)
				}
			})
		}
		wg.Wait()
		counts, err := stores[0].Routing.RateCounts(ctx, "llm-tasks", []string{"p"}, now)
		require.NoError(t, err)
		require.Equal(t, 3, counts["p"].Minute, "three decisions")
	})
}

func TestCacheReserveRateOnceInAFullWindow(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		cache := store.NewCache(s, time.Second)
		now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
		reserve := func(job string) bool {
			t.Helper()
			ok, err := cache.ReserveRateOnce(ctx, store.DecisionKey{JobID: job, Attempt: 1}, "p", "llm-tasks", 1, 0, now)
			require.NoError(t, err)
			return ok
		}
		require.True(t, reserve("job-1"), "fills the minute")
		require.False(t, reserve("job-2"))
		require.True(t, reserve("job-1"), "the retry of the decision that filled it")
		ok, err := cache.ReserveRate(ctx, "p", "llm-tasks", 1, 0, now)
		require.NoError(t, err)
		require.False(t, ok, "the window is still full for everyone else")
		counts, err := s.Routing.RateCounts(ctx, "llm-tasks", []string{"p"}, now)
		require.NoError(t, err)
		require.Equal(t, 1, counts["p"].Minute)
	})
}

func TestNextTurnOnceTakesADecisionsTurnOnce(t *testing.T) {
	t.Parallel()
	eachShared(t, 3, func(t *testing.T, stores []*store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
		turns := make([]int64, 12)
		var wg sync.WaitGroup
		for i := range turns {
			key := store.DecisionKey{JobID: "job-" + string(rune('a'+i%3)), Attempt: 1}
			wg.Go(func() {
				turn, err := stores[i%len(stores)].Routing.NextTurnOnce(ctx, key, "policy-1", now)
				if err != nil {
					t.Errorf("next turn: %v", err)
				}
				turns[i] = turn
			})
		}
		wg.Wait()
		for i := range turns {
			require.Equal(t, turns[i%3], turns[i], "attempts of one decision get one turn")
		}
		require.ElementsMatch(t, []int64{0, 1, 2}, turns[:3], "three decisions, three turns")
		turn, err := stores[0].Routing.NextTurn(ctx, "policy-1")
		require.NoError(t, err)
		require.Equal(t, int64(3), turn, "the counter advanced once per decision")

		// A decision that reserved first still takes its turn once.
		key := store.DecisionKey{JobID: "job-d", Attempt: 1}
		_, err = stores[0].Routing.ReserveRateOnce(ctx, key, "p", "llm-tasks", 10, 0, now)
		require.NoError(t, err)
		for range 2 {
			turn, err = stores[1].Routing.NextTurnOnce(ctx, key, "policy-1", now)
			require.NoError(t, err)
			require.Equal(t, int64(4), turn)
		}
		_, err = stores[0].Routing.DeleteExpiredRoutingDecisions(ctx, now.Add(2*time.Hour))
		require.NoError(t, err)
		turn, err = stores[0].Routing.NextTurnOnce(ctx, key, "policy-1", now.Add(2*time.Hour))
		require.NoError(t, err)
		require.Equal(t, int64(5), turn, "pruned: a new turn")
	})
}
