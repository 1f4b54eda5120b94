package jobops

import (
	"context"
	"sync/atomic"
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
	p := newPacer(3*time.Millisecond, false)
	require.Equal(t, rate.Inf, p.window(0, paceMinBurst-1, 0), "too few acceptances for a burst, however slow")
	require.Equal(t, rate.Inf, p.window(10, 10, 10), "a steady load: jobs start as fast as they come")
	require.Equal(t, rate.Inf, p.window(0, 0, 0))
}

func TestSlowAcceptancesDuringABurstHalveTheStartRate(t *testing.T) {
	t.Parallel()
	p := newPacer(3*time.Millisecond, false)
	require.Equal(t, perWindow(10)/2, p.window(40, 10, 10), "from the rate starts were made at")
	require.Equal(t, perWindow(10)/4, p.window(40, 10, 5))
	for range 10 {
		p.window(40, 10, 1)
	}
	require.Equal(t, paceMinRate, p.window(40, 10, 1), "never below the floor")
}

func TestOneSlowAcceptanceInTwentyIsTolerated(t *testing.T) {
	t.Parallel()
	p := newPacer(3*time.Millisecond, false)
	require.Equal(t, perWindow(10)+paceStep, p.window(19*paceMinBurst, paceMinBurst, 10))
	require.Equal(t, perWindow(10)/2, newPacer(3*time.Millisecond, false).window(19*paceMinBurst-1, paceMinBurst, 10))
}

func TestFastAcceptancesDuringABurstRaiseTheStartRate(t *testing.T) {
	t.Parallel()
	p := newPacer(3*time.Millisecond, false)
	require.Equal(t, perWindow(10)/2, p.window(40, 10, 10)) // 20 a second
	require.Equal(t, perWindow(5)+paceStep, p.window(40, 0, 5), "one step beyond the starts made")
	require.Equal(t, perWindow(5)+2*paceStep, p.window(40, 0, 6), "the starts reached the limit: one step beyond it")
	require.Equal(t, perWindow(4)+paceStep, p.window(40, 0, 4), "not beyond what the starts made, whatever the limit")
}

func TestOneSlowAcceptanceAloneIsTolerated(t *testing.T) {
	t.Parallel()
	require.Equal(t, perWindow(5)+paceStep, newPacer(3*time.Millisecond, false).window(30, 1, 5))
	require.Equal(t, perWindow(5)/2, newPacer(3*time.Millisecond, false).window(30, 2, 5))
}

func TestAPacedRateDoesNotKeepItselfGoing(t *testing.T) {
	t.Parallel()
	p := newPacer(3*time.Millisecond, false)
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
	p := newPacer(3*time.Millisecond, false)
	require.NotEqual(t, rate.Inf, p.window(40, 10, 10))
	require.Equal(t, rate.Inf, p.window(0, 0, 10), "no new jobs: the backlog starts at full speed")
	require.Equal(t, perWindow(8)/2, p.window(40, 10, 8), "the next burst starts from the rate starts were made at")
}

// Eight starters wait for the pacer at 2 starts a second; the rate is
// raised to 100 after the first start. The places they wait for are taken
// one at a time, so the raise reaches the next start, not the ninth.
func TestARaisedRateReachesTheWaitingStarters(t *testing.T) {
	t.Parallel()
	p := newPacer(3*time.Millisecond, false)
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
	p := newPacer(3*time.Millisecond, false)
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
	p := newPacer(0, false)
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

// A worker's dispatcher paces its starts by serve's creates, which it
// hears of (Paced); one that does not hear them ignores them.
func TestHeardCreatesPaceAWorker(t *testing.T) {
	t.Parallel()
	worker := NewDispatcher(DispatcherConfig{HearsPace: true})
	worker.Paced(PaceReport{Accepted: 30, Shed: 20, Slow: 10})
	for range 10 {
		worker.pace.startedJob()
	}
	require.Equal(t, perWindow(10)/2, worker.pace.closeWindow(paceWindow), "a burst of slow creates halves the starts")

	worker.Paced(PaceReport{Accepted: 50})
	for range 5 {
		worker.pace.startedJob()
	}
	require.Equal(t, perWindow(5)+paceStep, worker.pace.closeWindow(paceWindow), "fast creates let the starts grow")

	worker.Paced(PaceReport{Shed: 2, Slow: 5})
	worker.pace.mu.Lock()
	require.Equal(t, 2, worker.pace.slow, "no more slow creates than creates")
	worker.pace.mu.Unlock()

	deaf := NewDispatcher(DispatcherConfig{})
	deaf.Paced(PaceReport{Accepted: 50, Slow: 50})
	require.Equal(t, rate.Inf, deaf.pace.closeWindow(paceWindow))
}

// Every worker hears of all of serve's creates and makes only its share
// of the starts: a burst is judged against how fast starts leave the
// outbox, every worker's together, when serve measured it.
func TestABurstIsJudgedAgainstEveryProcesssStarts(t *testing.T) {
	t.Parallel()
	steady := func(measured bool) rate.Limit { // 80 slow creates a second, 32 started here
		p := newPacer(0, true)
		if measured {
			p.outboxLeft(80) // the other workers made the rest
		}
		p.heard(20, 20)
		for range 8 {
			p.startedJob()
		}
		return p.closeWindow(paceWindow)
	}
	require.Equal(t, rate.Inf, steady(true), "the workers together keep up with the creates")
	require.Equal(t, perWindow(8)/2, steady(false), "not measured: judged against this worker's starts")

	p := newPacer(0, true)
	p.outboxLeft(80)
	p.heard(80, 20) // 320 creates a second, a quarter slow
	for range 8 {
		p.startedJob()
	}
	require.Equal(t, perWindow(8)/2, p.closeWindow(paceWindow), "a burst beyond what every worker starts: paced from the starts made here")

	p.outboxLeft(80)
	for range outboxRateWindows {
		p.closeWindow(paceWindow)
	}
	p.mu.Lock()
	require.Zero(t, p.outboxFresh, "a rate not measured again lapses")
	p.mu.Unlock()

	deaf := newPacer(0, false)
	deaf.outboxLeft(80)
	require.Zero(t, deaf.outboxFresh, "a pacer that does not pace keeps nothing")
}

// A worker takes the rate starts leave the outbox from serve's report.
func TestTheOutboxRateTravelsToTheWorkers(t *testing.T) {
	t.Parallel()
	worker := NewDispatcher(DispatcherConfig{HearsPace: true})
	perSecond := 42.5
	worker.Paced(PaceReport{Accepted: 3, StartsPerSecond: &perSecond})
	worker.pace.mu.Lock()
	defer worker.pace.mu.Unlock()
	require.Equal(t, rate.Limit(42.5), worker.pace.outboxRate)
	require.Equal(t, outboxRateWindows, worker.pace.outboxFresh)
}

// The usual rate of starts a burst is judged against is the outbox's
// when it was measured, not the share of it this worker made.
func TestTheUsualRateIsEveryProcesss(t *testing.T) {
	t.Parallel()
	p := newPacer(0, true)
	for range 8 { // 80 creates a second, 8 of them started here
		p.outboxLeft(80)
		p.heard(20, 0)
		p.startedJob()
		p.startedJob()
		require.Equal(t, rate.Inf, p.closeWindow(paceWindow))
	}
	for range outboxRateWindows { // no creates: the rate lapses
		p.closeWindow(paceWindow)
	}
	p.heard(25, 25) // 100 slow creates a second, not measured: against the usual rate (58 a second by now)
	p.startedJob()
	p.startedJob()
	require.Equal(t, rate.Inf, p.closeWindow(paceWindow), "no more than twice the usual rate of every process's starts")
}

// Once the measured rate lapses, a burst is judged against the starts
// made here again.
func TestALapsedRateIsNotUsed(t *testing.T) {
	t.Parallel()
	p := newPacer(0, true)
	p.outboxLeft(80)
	for range outboxRateWindows {
		p.closeWindow(paceWindow)
	}
	p.mu.Lock()
	p.unpaced = 0 // the usual rate aside
	p.mu.Unlock()
	p.heard(20, 20) // 80 slow creates a second
	for range 8 {   // 32 started here
		p.startedJob()
	}
	require.Equal(t, perWindow(8)/2, p.closeWindow(paceWindow))
}

// serve measures how fast starts leave the outbox over the reads of the
// last two seconds, once they span one.
func TestTheOutboxMeterSpansSeveralReads(t *testing.T) {
	t.Parallel()
	var m outboxMeter
	t0 := time.Now()
	read := func(after time.Duration, cleared int64) (rate.Limit, bool) {
		return m.add(outboxRead{at: t0.Add(after), cleared: cleared})
	}
	_, ok := read(0, 1000)
	require.False(t, ok)
	_, ok = read(500*time.Millisecond, 1010)
	require.False(t, ok, "under a second: not yet")
	r, ok := read(time.Second, 1020)
	require.True(t, ok)
	require.Equal(t, rate.Limit(20), r)
	r, _ = read(1500*time.Millisecond, 1020) // a stall: the deletes are held
	require.InDelta(t, 13.3, float64(r), 0.1)
	r, _ = read(2*time.Second, 1100) // and let through, 80 at once
	require.Equal(t, rate.Limit(50), r, "100 over the two seconds, not 80 over the last half (160 a second)")
	r, _ = read(2500*time.Millisecond, 1100)
	require.Equal(t, rate.Limit(45), r, "the first read dropped: 90 over the 2 s since the second")
	r, _ = read(3*time.Second, 500) // the sequence was reset
	require.Zero(t, r, "never below nothing")
}

// A rate measured longer ago than outboxRateStale is no longer reported.
func TestAStaleOutboxRateIsNotReported(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var clock atomic.Int64
	reports := make(chan PaceReport, 4)
	d := NewDispatcher(DispatcherConfig{
		AcceptTarget: 3 * time.Millisecond,
		HandOff:      func(_ context.Context, r PaceReport) error { reports <- r; return nil },
		Now:          func() time.Time { return now.Add(time.Duration(clock.Load())) },
	})
	go d.handOff(t.Context())
	d.outboxLeft(40, now)
	d.reportAnswered(1, 0, time.Millisecond)
	report := <-reports
	require.NotNil(t, report.StartsPerSecond)
	require.Equal(t, 40.0, *report.StartsPerSecond)
	clock.Store(int64(outboxRateStale + time.Millisecond))
	d.reportAnswered(1, 0, time.Millisecond)
	require.Nil(t, (<-reports).StartsPerSecond, "the reads failed since: no rate")
}

func TestPaceReportsTravelAsJSON(t *testing.T) {
	t.Parallel()
	r := PaceReport{Accepted: 3, Shed: 2, Slow: 1}
	require.JSONEq(t, `{"accepted":3,"shed":2,"slow":1}`, r.Payload())
	back, ok := ParsePaceReport(r.Payload())
	require.True(t, ok)
	require.Equal(t, r, back)
	perSecond := 12.5
	r.StartsPerSecond = &perSecond
	require.JSONEq(t, `{"accepted":3,"shed":2,"slow":1,"starts_per_second":12.5}`, r.Payload())
	back, ok = ParsePaceReport(r.Payload())
	require.True(t, ok)
	require.Equal(t, r, back)
	_, ok = ParsePaceReport("")
	require.False(t, ok, "an older serve's notification carries no report")
	_, ok = ParsePaceReport("not json")
	require.False(t, ok)
}
