package breaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/breaker"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// record applies outcomes one per 100 ms from at and returns the breaker
// and the transitions that happened.
func record(b breaker.Breaker, cfg breaker.Config, at time.Time, outcomes ...breaker.Outcome) (breaker.Breaker, []breaker.Transition) {
	var ts []breaker.Transition
	for i, o := range outcomes {
		var t breaker.Transition
		b, t = b.Record(cfg, o, at.Add(time.Duration(i)*100*time.Millisecond))
		if t.Changed() {
			ts = append(ts, t)
		}
	}
	return b, ts
}

func repeat(o breaker.Outcome, n int) []breaker.Outcome {
	out := make([]breaker.Outcome, n)
	for i := range out {
		out[i] = o
	}
	return out
}

func TestOpensOnRateOnlyAfterMinCalls(t *testing.T) {
	t.Parallel()
	cfg := breaker.Defaults()
	b, ts := record(breaker.Breaker{}, cfg, t0, repeat(breaker.Failure, 19)...)
	require.Empty(t, ts, "19 failures are fewer than the 20 calls the rate needs")
	require.Equal(t, breaker.Closed, b.Effective(t0.Add(2*time.Second)))
	calls, failures := b.Counts(cfg, t0.Add(2*time.Second))
	require.Equal(t, 19, calls)
	require.Equal(t, 19, failures)

	b, ts = record(b, cfg, t0.Add(2*time.Second), breaker.Failure)
	require.Equal(t, []breaker.Transition{{From: breaker.Closed, To: breaker.Open, Reason: "failure rate"}}, ts)
	require.Equal(t, breaker.Open, b.Effective(t0.Add(3*time.Second)))
	require.Equal(t, t0.Add(2*time.Second+30*time.Second), b.OpenUntil)
	require.Equal(t, 1, b.Opens)
}

func TestRateBelowThresholdStaysClosed(t *testing.T) {
	t.Parallel()
	cfg := breaker.Defaults()
	var outcomes []breaker.Outcome
	for range 20 {
		outcomes = append(outcomes, breaker.Success, breaker.Success, breaker.Failure) // a third fail
	}
	b, ts := record(breaker.Breaker{}, cfg, t0, outcomes...)
	require.Empty(t, ts)
	require.InDelta(t, 1.0/3, b.FailureRate(cfg, t0.Add(6*time.Second)), 0.01)
}

func TestWindowSlides(t *testing.T) {
	t.Parallel()
	cfg := breaker.Defaults()
	b, _ := record(breaker.Breaker{}, cfg, t0, repeat(breaker.Failure, 15)...)
	// A minute later the old failures have left the window.
	b, ts := record(b, cfg, t0.Add(61*time.Second), repeat(breaker.Failure, 10)...)
	require.Empty(t, ts)
	calls, _ := b.Counts(cfg, t0.Add(62*time.Second))
	require.Equal(t, 10, calls)
	require.LessOrEqual(t, len(b.Window.Buckets), 10, "the window is kept in at most ten buckets")
}

func TestOpensOnConsecutiveFailures(t *testing.T) {
	t.Parallel()
	cfg := breaker.Defaults()
	cfg.ConsecutiveFailures = 5
	b, ts := record(breaker.Breaker{}, cfg, t0, breaker.Failure, breaker.Failure, breaker.Failure, breaker.Failure, breaker.Success)
	require.Empty(t, ts, "a success ends the run")
	require.Zero(t, b.ConsecutiveFailures)
	_, ts = record(b, cfg, t0.Add(time.Second), repeat(breaker.Failure, 5)...)
	require.Equal(t, []breaker.Transition{{From: breaker.Closed, To: breaker.Open, Reason: "consecutive failures"}}, ts)
}

func TestOpenIntervalDoublesAndIsCapped(t *testing.T) {
	t.Parallel()
	cfg := breaker.Defaults()
	cfg.OpenFor, cfg.MaxOpenFor = 10*time.Second, 35*time.Second
	require.Equal(t, 10*time.Second, breaker.OpenInterval(cfg, 1))
	require.Equal(t, 20*time.Second, breaker.OpenInterval(cfg, 2))
	require.Equal(t, 35*time.Second, breaker.OpenInterval(cfg, 3))
	require.Equal(t, 35*time.Second, breaker.OpenInterval(cfg, 64))

	cfg.ConsecutiveFailures = 1
	b, _ := record(breaker.Breaker{}, cfg, t0, breaker.Failure)
	require.Equal(t, t0.Add(10*time.Second), b.OpenUntil)
	// The interval ends: a probe goes through and fails: open again, twice as long.
	now := t0.Add(10 * time.Second)
	b, ok, tr := b.TakeProbe(cfg, now)
	require.True(t, ok)
	require.Equal(t, breaker.Transition{From: breaker.Open, To: breaker.HalfOpen, Reason: "open interval ended"}, tr)
	b, tr = b.Record(cfg, breaker.Failure, now)
	require.Equal(t, breaker.Transition{From: breaker.HalfOpen, To: breaker.Open, Reason: "a probe failed"}, tr)
	require.Equal(t, now.Add(20*time.Second), b.OpenUntil)
	require.Equal(t, 2, b.Opens)
	require.Equal(t, now.Add(20*time.Second), b.NextProbe(now))
}

func TestHalfOpenLetsProbesThroughAndClosesAfterK(t *testing.T) {
	t.Parallel()
	cfg := breaker.Defaults()
	cfg.ConsecutiveFailures, cfg.Probes, cfg.CloseAfter = 1, 2, 3
	b, _ := record(breaker.Breaker{}, cfg, t0, breaker.Failure)
	_, ok, _ := b.TakeProbe(cfg, t0.Add(time.Second))
	require.False(t, ok, "open: no call goes through")

	now := b.OpenUntil
	require.Equal(t, breaker.HalfOpen, b.Effective(now))
	b, ok, _ = b.TakeProbe(cfg, now)
	require.True(t, ok)
	b, ok, _ = b.TakeProbe(cfg, now)
	require.True(t, ok)
	b, ok, _ = b.TakeProbe(cfg, now)
	require.False(t, ok, "two probes at a time")

	b, tr := b.Record(cfg, breaker.Success, now)
	require.False(t, tr.Changed())
	b, tr = b.Record(cfg, breaker.Success, now)
	require.False(t, tr.Changed(), "two successes of three")
	// Probes whose outcome never came are given back after OpenFor.
	b, ok, _ = b.TakeProbe(cfg, now.Add(time.Second))
	require.False(t, ok)
	later := now.Add(cfg.OpenFor)
	b, ok, _ = b.TakeProbe(cfg, later)
	require.True(t, ok)
	b, tr = b.Record(cfg, breaker.Success, later)
	require.Equal(t, breaker.Transition{From: breaker.HalfOpen, To: breaker.Closed, Reason: "probes succeeded"}, tr)
	require.Equal(t, breaker.Closed, b.Effective(later))
	require.Zero(t, b.Opens, "a close starts the doubling over")
	calls, _ := b.Counts(cfg, later)
	require.Zero(t, calls, "and the window")
}

func TestForcedStateWins(t *testing.T) {
	t.Parallel()
	cfg := breaker.Defaults()
	cfg.ConsecutiveFailures = 1
	b := breaker.Breaker{}.Force(breaker.Closed, "ops@example.com", t0)
	b, ts := record(b, cfg, t0, repeat(breaker.Failure, 30)...)
	require.Empty(t, ts, "forced closed never opens")
	require.Equal(t, breaker.Closed, b.Effective(t0.Add(time.Hour)))
	require.Equal(t, 30, b.ConsecutiveFailures, "but counts")

	b = b.Force(breaker.Open, "ops@example.com", t0.Add(time.Minute))
	_, ok, _ := b.TakeProbe(cfg, t0.Add(time.Hour))
	require.False(t, ok)
	require.Equal(t, breaker.Open, b.Effective(t0.Add(time.Hour)))
	require.True(t, b.NextProbe(t0.Add(time.Hour)).IsZero(), "a forced breaker probes nothing")

	b = b.Force("", "ops@example.com", t0.Add(2*time.Minute))
	require.Equal(t, breaker.Closed, b.Effective(t0.Add(2*time.Minute)))
	require.Equal(t, "ops@example.com", b.ForcedBy, "who returned it to automatic stays recorded")
	require.Zero(t, b.ConsecutiveFailures)
}

func TestDisabledNeverOpens(t *testing.T) {
	t.Parallel()
	cfg := breaker.Defaults()
	cfg.Disabled, cfg.ConsecutiveFailures = true, 1
	b, ts := record(breaker.Breaker{}, cfg, t0, repeat(breaker.Failure, 50)...)
	require.Empty(t, ts)
	require.Equal(t, breaker.Closed, b.Effective(t0))
}

func TestACallRecordedLateKeepsTheNewerBuckets(t *testing.T) {
	t.Parallel()
	cfg := breaker.Defaults() // 6 s buckets
	b, _ := record(breaker.Breaker{}, cfg, t0.Add(7*time.Second), breaker.Failure, breaker.Failure)
	// A success that ended in the previous bucket, recorded after them.
	b, _ = record(b, cfg, t0.Add(5*time.Second), breaker.Success)
	calls, failures := b.Counts(cfg, t0.Add(8*time.Second))
	require.Equal(t, 3, calls)
	require.Equal(t, 2, failures, "the failures recorded first are still counted")
	require.Len(t, b.Window.Buckets, 2)
	require.Less(t, b.Window.Buckets[0].Index, b.Window.Buckets[1].Index, "buckets stay in order")
	// One too old for the window counts nothing in it.
	b, _ = record(b, cfg, t0.Add(-2*time.Minute), breaker.Success)
	calls, _ = b.Counts(cfg, t0.Add(8*time.Second))
	require.Equal(t, 3, calls)
}
