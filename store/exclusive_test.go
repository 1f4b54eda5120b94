package store_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func noop(context.Context) error { return nil }

// hold runs TryExclusive(name) with an fn that waits for release, and
// returns once fn runs; the result arrives on the returned channel.
func hold(t *testing.T, s *store.Store, name string) (release func(), result <-chan error) {
	t.Helper()
	held, done, out := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		ran, err := s.Housekeeping.TryExclusive(context.Background(), name, func(context.Context) error {
			close(held)
			<-done
			return nil
		})
		if err == nil && !ran {
			err = errors.New("did not run")
		}
		out <- err
	}()
	select {
	case <-held:
	case err := <-out:
		t.Fatalf("fn never ran: %v", err)
	}
	return func() { close(done) }, out
}

func TestTryExclusiveSkipsWhileHeldAndReleasesAfter(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		release, result := hold(t, s, "sweep")
		require.False(t, tryExclusive(t, s, "sweep", func(context.Context) error {
			t.Error("ran while another caller held the lock")
			return nil
		}), "the second caller skips")
		require.True(t, tryExclusive(t, s, "other", noop), "another name is another lock")
		release()
		require.NoError(t, <-result)

		require.True(t, tryExclusive(t, s, "sweep", noop), "released once fn returned")

		boom := errors.New("boom")
		ran, err := s.Housekeeping.TryExclusive(ctx, "sweep", func(context.Context) error { return boom })
		require.True(t, ran)
		require.ErrorIs(t, err, boom)
		require.True(t, tryExclusive(t, s, "sweep", noop), "released after fn failed")

		require.PanicsWithValue(t, "boom", func() {
			_, _ = s.Housekeeping.TryExclusive(ctx, "sweep", func(context.Context) error { panic("boom") })
		})
		require.True(t, tryExclusive(t, s, "sweep", noop), "released after fn panicked")
	})
}

// tryExclusive runs s.TryExclusive(name, fn), which must not fail, and
// says whether fn ran.
func tryExclusive(t *testing.T, s *store.Store, name string, fn func(context.Context) error) bool {
	t.Helper()
	ran, err := s.Housekeeping.TryExclusive(context.Background(), name, fn)
	require.NoError(t, err)
	return ran
}

// TestTryExclusiveAcrossProcesses: processes on one PostgreSQL database
// never run fn at once; those that find it running skip.
func TestTryExclusiveAcrossProcesses(t *testing.T) {
	t.Parallel()
	databaseURL := storetest.FreshPostgresURL(t)
	a, b := storetest.Open(t, databaseURL), storetest.Open(t, databaseURL)
	ctx := context.Background()

	release, result := hold(t, a, "sweep")
	require.False(t, tryExclusive(t, b, "sweep", noop), "another process holds it")
	require.True(t, tryExclusive(t, storetest.Postgres(t), "sweep", noop), "a deployment in another schema of the database has a lock of its own")
	release()
	require.NoError(t, <-result)
	require.True(t, tryExclusive(t, b, "sweep", noop), "released")

	require.Panics(t, func() {
		_, _ = a.Housekeeping.TryExclusive(ctx, "sweep", func(context.Context) error { panic("boom") })
	})
	require.True(t, tryExclusive(t, b, "sweep", noop), "released after a panic")

	// Many callers at once: fn never runs twice at a time.
	var inside, overlaps, runs, skips atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		s := []*store.Store{a, b}[i%2]
		wg.Go(func() {
			for range 20 {
				ran, err := s.Housekeeping.TryExclusive(ctx, "sweep", func(context.Context) error {
					if inside.Add(1) > 1 {
						overlaps.Add(1)
					}
					defer inside.Add(-1)
					time.Sleep(2 * time.Millisecond)
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				if ran {
					runs.Add(1)
				} else {
					skips.Add(1)
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, overlaps.Load(), "one at a time")
	require.Positive(t, runs.Load())
	require.Positive(t, skips.Load())
}

// TestTryExclusiveIsReleasedWhenItsSessionDies: a process that dies while
// it holds the lock (its session ended) does not keep the others out.
func TestTryExclusiveIsReleasedWhenItsSessionDies(t *testing.T) {
	t.Parallel()
	databaseURL := storetest.FreshPostgresURL(t)
	a, b := storetest.Open(t, databaseURL), storetest.Open(t, databaseURL)
	admin := storetest.PostgresDB(t, databaseURL)
	ctx := context.Background()

	release, result := hold(t, a, "sweep")
	var ended int
	require.NoError(t, admin.QueryRowContext(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_locks"+
		" WHERE locktype = 'advisory' AND objsubid = 1 AND (classid::bigint << 32 | objid::bigint) = "+store.AdvisoryKey,
		"sweep").Scan(&ended))
	require.Equal(t, 1, ended, "the session holding the lock")
	require.Eventually(t, func() bool {
		ran, err := b.Housekeeping.TryExclusive(ctx, "sweep", noop)
		return err == nil && ran
	}, 5*time.Second, 10*time.Millisecond, "PostgreSQL released the lock with the session")
	release()
	require.NoError(t, <-result, "fn ran; its lost lock is not fn's error")
	require.True(t, tryExclusive(t, a, "sweep", noop), "the dead connection went back to no one")
}

func TestClaimRoundTakesOneRoundPerInterval(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
		claimed, _, err := s.Housekeeping.ClaimRound(ctx, "work_files", time.Hour, start)
		require.NoError(t, err)
		require.True(t, claimed, "the first round")

		claimed, last, err := s.Housekeeping.ClaimRound(ctx, "work_files", time.Hour, start.Add(30*time.Minute))
		require.NoError(t, err)
		require.False(t, claimed, "another process ran it half an hour ago")
		require.True(t, start.Equal(last), "last: %v", last)
		claimed, _, err = s.Housekeeping.ClaimRound(ctx, "result_files", time.Hour, start.Add(30*time.Minute))
		require.NoError(t, err)
		require.True(t, claimed, "rounds are per sweep")

		claimed, _, err = s.Housekeeping.ClaimRound(ctx, "work_files", time.Hour, start.Add(time.Hour))
		require.NoError(t, err)
		require.True(t, claimed, "the next round")

		// Processes asking at once: one wins.
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				claimed, _, err := s.Housekeeping.ClaimRound(ctx, "work_files", time.Hour, start.Add(2*time.Hour))
				if err != nil {
					t.Error(err)
				}
				if claimed {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		require.Equal(t, int32(1), wins.Load())
	})
}
