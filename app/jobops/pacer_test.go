package jobops

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/ai-job-gateway/gateway/store"
)

// window records a window's acceptances (fast and slow ones) and starts,
// and closes it.
func (p *pacer) window(fast, slow, started int) rate.Limit {
	for range fast {
		p.answered(p.target / 2)
	}
	for range slow {
		p.answered(2 * p.target)
	}
	for range started {
		p.startedJob()
	}
	return p.closeWindow(paceWindow)
}

// perWindow is the start rate of n starts a window.
func perWindow(n int) rate.Limit { return rate.Limit(float64(n) / paceWindow.Seconds()) }

func TestStartsAreNotPacedWithoutABurst(t *testing.T) {
	t.Parallel()
	p := newPacer(3 * time.Millisecond)
	require.Equal(t, rate.Inf, p.window(0, paceMinBurst-1, 0), "too few acceptances for a burst, however slow")
	require.Equal(t, rate.Inf, p.window(10, 10, 10), "a steady load: jobs start as fast as they come")
	require.Equal(t, rate.Inf, p.window(0, 0, 0))
}

func TestSlowAcceptancesDuringABurstHalveTheStartRate(t *testing.T) {
	t.Parallel()
	p := newPacer(3 * time.Millisecond)
	require.Equal(t, perWindow(10)/2, p.window(40, 10, 10), "from the rate starts were made at")
	require.Equal(t, perWindow(10)/4, p.window(40, 10, 5))
	for range 10 {
		p.window(40, 10, 1)
	}
	require.Equal(t, paceMinRate, p.window(40, 10, 1), "never below the floor")
}

func TestOneSlowAcceptanceInTwentyIsTolerated(t *testing.T) {
	t.Parallel()
	p := newPacer(3 * time.Millisecond)
	require.Equal(t, perWindow(10)+paceStep, p.window(19*paceMinBurst, paceMinBurst, 10))
	require.Equal(t, perWindow(10)/2, newPacer(3*time.Millisecond).window(19*paceMinBurst-1, paceMinBurst, 10))
}

func TestFastAcceptancesDuringABurstRaiseTheStartRate(t *testing.T) {
	t.Parallel()
	p := newPacer(3 * time.Millisecond)
	require.Equal(t, perWindow(10)/2, p.window(40, 10, 10)) // 20 a second
	require.Equal(t, perWindow(5)+paceStep, p.window(40, 0, 5), "one step beyond the starts made")
	require.Equal(t, perWindow(5)+2*paceStep, p.window(40, 0, 6), "the starts reached the limit: one step beyond it")
	require.Equal(t, perWindow(4)+paceStep, p.window(40, 0, 4), "not beyond what the starts made, whatever the limit")
}

func TestOneSlowAcceptanceAloneIsTolerated(t *testing.T) {
	t.Parallel()
	require.Equal(t, perWindow(5)+paceStep, newPacer(3*time.Millisecond).window(30, 1, 5))
	require.Equal(t, perWindow(5)/2, newPacer(3*time.Millisecond).window(30, 2, 5))
}

func TestAPacedRateDoesNotKeepItselfGoing(t *testing.T) {
	t.Parallel()
	p := newPacer(3 * time.Millisecond)
	for range 8 { // a steady load: 32 jobs a second, started as they come
		require.Equal(t, rate.Inf, p.window(8, 0, 8))
	}
	require.Equal(t, rate.Inf, p.window(5, 3, 2), "a window of few starts and slow acceptances is no burst against the usual rate")
}

func TestTheFloorMakesAFullQueueWithinALease(t *testing.T) {
	t.Parallel()
	lease := NewDispatcher(DispatcherConfig{}).cfg.Lease
	require.GreaterOrEqual(t, float64(paceMinRate)*lease.Seconds(), 2.0*queueSize,
		"at the slowest pace the last of a full queue starts well before its lease runs out")
}

func TestABurstThatEndsStopsThePacing(t *testing.T) {
	t.Parallel()
	p := newPacer(3 * time.Millisecond)
	require.NotEqual(t, rate.Inf, p.window(40, 10, 10))
	require.Equal(t, rate.Inf, p.window(0, 0, 10), "no new jobs: the backlog starts at full speed")
	require.Equal(t, perWindow(8)/2, p.window(40, 10, 8), "the next burst starts from the rate starts were made at")
}

// Eight starters wait for the pacer at 2 starts a second; the rate is
// raised to 100 after the first start. The places they wait for are taken
// one at a time, so the raise reaches the next start, not the ninth.
func TestARaisedRateReachesTheWaitingStarters(t *testing.T) {
	t.Parallel()
	p := newPacer(3 * time.Millisecond)
	p.limiter.SetLimit(2)
	const starters = 8
	done := make(chan struct{}, starters)
	for range starters {
		go func() {
			if paced, err := p.waitOr(t.Context(), nil, 0); paced && err == nil {
				done <- struct{}{}
			}
		}()
	}
	<-done // the limiter's one token
	require.Eventually(t, func() bool { return len(p.turn) > 0 }, time.Second, time.Millisecond, "the next starter waits")
	time.Sleep(50 * time.Millisecond) // and the others, had they taken places too
	began := time.Now()
	p.limiter.SetLimit(100)
	for range starters - 1 {
		<-done
	}
	require.Less(t, time.Since(began), 1500*time.Millisecond,
		"places taken at 2 a second would keep the last starter waiting 3.5 s")
}

// A starter waiting for its turn gives its place up when within passes,
// as one waiting for the pacer does.
func TestAStarterGivesUpWhileWaitingForItsTurn(t *testing.T) {
	t.Parallel()
	p := newPacer(3 * time.Millisecond)
	p.turn <- struct{}{} // another starter waits for the pacer
	type result struct {
		paced bool
		err   error
	}
	waited := make(chan result, 1)
	go func() {
		paced, err := p.waitOr(t.Context(), nil, 50*time.Millisecond)
		waited <- result{paced, err}
	}()
	select {
	case r := <-waited:
		require.NoError(t, r.err)
		require.False(t, r.paced)
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting for the turn after 5 s")
	}
	<-p.turn
}

func TestAZeroTargetNeverPaces(t *testing.T) {
	t.Parallel()
	p := newPacer(0)
	require.Equal(t, rate.Inf, p.window(0, 4*paceMinBurst, 0))
	p.run(t.Context(), nil) // returns at once
	require.Equal(t, rate.Inf, p.limiter.Limit())
}

func TestOfferReportsHowLongAcceptingTheJobTook(t *testing.T) {
	t.Parallel()
	d := NewDispatcher(DispatcherConfig{AcceptTarget: 3 * time.Millisecond})
	due := store.JobStart{JobID: "j", NextAttemptAt: time.Now().Add(-time.Second)} // left to a sweep: no queue, no store
	d.Offer(due, time.Millisecond)
	d.Offer(due, 10*time.Millisecond)
	d.pace.mu.Lock()
	defer d.pace.mu.Unlock()
	require.Equal(t, 2, d.pace.accepted)
	require.Equal(t, 1, d.pace.slow)
}

func TestShedCreatesCountAsAnswered(t *testing.T) {
	t.Parallel()
	d := NewDispatcher(DispatcherConfig{AcceptTarget: 3 * time.Millisecond})
	d.Shed(time.Millisecond)
	d.Shed(10 * time.Millisecond)
	d.pace.mu.Lock()
	defer d.pace.mu.Unlock()
	require.Equal(t, 2, d.pace.accepted, "demand the starts do not meet")
	require.Equal(t, 1, d.pace.slow)
}
