package ttlcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// counting returns a load that counts its calls and returns the count.
func counting() (func(context.Context) (int, error), *atomic.Int64) {
	var calls atomic.Int64
	return func(context.Context) (int, error) { return int(calls.Add(1)), nil }, &calls
}

func TestTTLCacheServesUntilExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	c := New[string, int](time.Second, 10, clock.Now)
	load, calls := counting()

	v, err := c.Get(ctx, "a", load)
	require.NoError(t, err)
	require.Equal(t, 1, v)
	clock.Advance(999 * time.Millisecond)
	v, err = c.Get(ctx, "a", load)
	require.NoError(t, err)
	require.Equal(t, 1, v, "a hit within the TTL")
	require.EqualValues(t, 1, calls.Load())

	v, err = c.Get(ctx, "b", load)
	require.NoError(t, err)
	require.Equal(t, 2, v, "keys are cached apart")

	clock.Advance(time.Millisecond)
	v, err = c.Get(ctx, "a", load)
	require.NoError(t, err)
	require.Equal(t, 3, v, "loaded again once the TTL passed")
}

func TestTTLCacheForgetsAndKeepsNoError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newClock(time.Now())
	c := New[string, int](time.Hour, 10, clock.Now)
	load, calls := counting()

	_, _ = c.Get(ctx, "a", load)
	_, _ = c.Get(ctx, "b", load)
	c.Forget("a")
	v, _ := c.Get(ctx, "a", load)
	require.Equal(t, 3, v, "a forgotten key is loaded again")
	v, _ = c.Get(ctx, "b", load)
	require.Equal(t, 2, v, "forget drops only its key")
	c.Clear()
	v, _ = c.Get(ctx, "b", load)
	require.Equal(t, 4, v, "clear drops every key")

	boom := errors.New("boom")
	_, err := c.Get(ctx, "c", func(context.Context) (int, error) { return 0, boom })
	require.ErrorIs(t, err, boom)
	v, _ = c.Get(ctx, "c", load)
	require.Equal(t, 5, v, "an error is not kept")
	require.EqualValues(t, 5, calls.Load())
}

func TestTTLCacheDropsLoadsThatOverlapAWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := New[string, string](time.Hour, 10, time.Now)
	v, err := c.Get(ctx, "a", func(context.Context) (string, error) {
		c.Forget("a") // a write lands while the old value is being read
		return "old", nil
	})
	require.NoError(t, err)
	require.Equal(t, "old", v, "the caller still gets what it read")
	v, err = c.Get(ctx, "a", func(context.Context) (string, error) { return "new", nil })
	require.NoError(t, err)
	require.Equal(t, "new", v, "but the cache did not keep it")
}

func TestTTLCacheZeroAndNegativeTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newClock(time.Now())

	off := New[string, int](0, 10, clock.Now)
	load, _ := counting()
	_, _ = off.Get(ctx, "a", load)
	v, _ := off.Get(ctx, "a", load)
	require.Equal(t, 2, v, "a TTL of 0 keeps nothing")

	forever := New[string, int](-1, 10, clock.Now)
	load, _ = counting()
	_, _ = forever.Get(ctx, "a", load)
	clock.Advance(365 * 24 * time.Hour)
	v, _ = forever.Get(ctx, "a", load)
	require.Equal(t, 1, v, "a negative TTL never expires")
}

func TestTTLCacheIsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newClock(time.Now())
	c := New[int, int](time.Second, 3, clock.Now)
	load, _ := counting()
	for k := range 3 {
		_, _ = c.Get(ctx, k, load)
	}
	clock.Advance(2 * time.Second)
	_, _ = c.Get(ctx, 0, load) // reloads 0; 1 and 2 have expired
	_, _ = c.Get(ctx, 3, load)
	require.Len(t, c.entries, 2, "expired entries go first")
	require.Contains(t, c.entries, 0)
	require.Contains(t, c.entries, 3)

	for k := range 100 {
		_, _ = c.Get(ctx, 10+k, load)
		require.LessOrEqual(t, len(c.entries), 3)
	}
}

func TestTTLCacheConcurrentUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := New[string, string](time.Minute, 4, time.Now)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 500 {
				key := fmt.Sprint(i % 6)
				v, err := c.Get(ctx, key, func(context.Context) (string, error) { return "v" + key, nil })
				if err != nil || v != "v"+key {
					t.Errorf("get %s = %q, %v", key, v, err)
					return
				}
				if (g+i)%50 == 0 {
					c.Forget(key)
				}
				if i%200 == 0 {
					c.Clear()
				}
			}
		})
	}
	wg.Wait()
}

// clock is a clock the tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock(now time.Time) *clock { return &clock{now: now} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A cache full of fresh entries makes room for a tenth of them at once,
// so that the next new ones find room without another scan.
func TestTTLCacheFullOfFreshEntriesDropsATenth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := New[int, int](time.Minute, 20, time.Now)
	load, _ := counting()
	for k := range 20 {
		_, _ = c.Get(ctx, k, load)
	}
	_, _ = c.Get(ctx, 20, load)
	require.Len(t, c.entries, 19, "two dropped, the new one kept")
	_, _ = c.Get(ctx, 21, load)
	require.Len(t, c.entries, 20, "room without dropping")
}

// TestTTLCacheMissesShareOneLoad: callers that miss a key while its load
// is running wait for that load instead of starting their own, so an
// expiry is one query.
func TestTTLCacheMissesShareOneLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := New[string, int](time.Minute, 10, time.Now)
	var calls atomic.Int64
	release := make(chan struct{})
	load := func(context.Context) (int, error) {
		calls.Add(1)
		<-release
		return 7, nil
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			v, err := c.Get(ctx, "k", load)
			if err != nil || v != 7 {
				t.Errorf("get = %d, %v", v, err)
			}
		})
	}
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // the others are surely waiting by now
	close(release)
	wg.Wait()
	require.Equal(t, int64(1), calls.Load(), "twenty misses, one load")
	v, err := c.Get(ctx, "k", load)
	require.NoError(t, err)
	require.Equal(t, 7, v)
	require.Equal(t, int64(1), calls.Load(), "and it was kept")
}

// TestTTLCacheSharedLoadKeepsItsCallersContext: the load runs under the
// context of the caller that began it, deadline included; a caller that
// waited for it, when that context ended it, loads again under its own.
func TestTTLCacheSharedLoadKeepsItsCallersContext(t *testing.T) {
	t.Parallel()
	c := New[string, int](time.Minute, 10, time.Now)
	first, cancel := context.WithTimeout(context.Background(), time.Hour)
	started := make(chan struct{})
	var calls atomic.Int64
	load := func(ctx context.Context) (int, error) {
		if calls.Add(1) == 1 {
			_, ok := ctx.Deadline()
			require.True(t, ok, "the caller's deadline reaches its load")
			close(started)
			<-ctx.Done()
			return 0, ctx.Err()
		}
		return 8, nil
	}
	firstErr := make(chan error)
	go func() {
		_, err := c.Get(first, "k", load)
		firstErr <- err
	}()
	<-started
	second := make(chan int)
	go func() {
		v, err := c.Get(context.Background(), "k", load)
		require.NoError(t, err)
		second <- v
	}()
	time.Sleep(20 * time.Millisecond) // the second waits for the first's load
	cancel()
	require.ErrorIs(t, <-firstErr, context.Canceled)
	require.Equal(t, 8, <-second, "the second loaded again")
	require.Equal(t, int64(2), calls.Load())
}

// TestTTLCacheLoadThatPanics: a load's panic is its caller's, to recover
// as any panic of a request; the cache goes on.
func TestTTLCacheLoadThatPanics(t *testing.T) {
	t.Parallel()
	c := New[string, int](time.Minute, 10, time.Now)
	require.Panics(t, func() {
		_, _ = c.Get(context.Background(), "k", func(context.Context) (int, error) { panic("nil store") })
	})
	v, err := c.Get(context.Background(), "k", func(context.Context) (int, error) { return 9, nil })
	require.NoError(t, err)
	require.Equal(t, 9, v)
}

// TestTTLCacheLoadBeforeAWriteIsNotShared: a caller that comes after a
// write does not wait for a load that began before it; it reads anew.
func TestTTLCacheLoadBeforeAWriteIsNotShared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := New[string, string](time.Minute, 10, time.Now)
	started, release := make(chan struct{}), make(chan struct{})
	old := make(chan string)
	go func() {
		v, _ := c.Get(ctx, "k", func(context.Context) (string, error) {
			close(started)
			<-release
			return "old", nil
		})
		old <- v
	}()
	<-started
	c.Forget("k") // a write through this cache
	v, err := c.Get(ctx, "k", func(context.Context) (string, error) { return "new", nil })
	require.NoError(t, err)
	require.Equal(t, "new", v)
	close(release)
	require.Equal(t, "old", <-old)
	v, err = c.Get(ctx, "k", func(context.Context) (string, error) { return "newer", nil })
	require.NoError(t, err)
	require.Equal(t, "new", v, "the load after the write was kept, not the one before it")
}
