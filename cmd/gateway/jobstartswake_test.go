package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/store"
)

// fakeClaims answers claims with rows starts each.
type fakeClaims struct {
	jobops.Outbox
	rows atomic.Int32
}

func (f *fakeClaims) ClaimJobStarts(context.Context, time.Time, time.Duration, int) ([]store.JobStart, error) {
	return make([]store.JobStart, f.rows.Load()), nil
}

func TestWakeGateBacksOffWhileAnotherWorkerTakesTheStarts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outbox := &fakeClaims{}
	watch := &claimWatch{Outbox: outbox}
	wakes := make(chan time.Time, 16)
	gate := newWakeGate(watch, func() { wakes <- time.Now() })
	gate.pause = 200 * time.Millisecond
	go gate.run(ctx)
	claim := func() {
		_, err := watch.ClaimJobStarts(ctx, time.Now(), time.Second, 8)
		require.NoError(t, err)
	}
	notifyAndClaim := func() time.Duration {
		at := time.Now()
		gate.notify()
		woke := <-wakes
		claim()
		return woke.Sub(at)
	}

	outbox.rows.Store(1)
	require.Less(t, notifyAndClaim(), 100*time.Millisecond, "its claims find starts: woken at once")
	outbox.rows.Store(0)
	claim() // a sweep that finds nothing: not after a notification
	require.Less(t, notifyAndClaim(), 100*time.Millisecond, "one empty claim may be its own doing")
	require.Less(t, notifyAndClaim(), 100*time.Millisecond)
	require.True(t, watch.losing(), "two in a row: another worker took the starts")

	at := time.Now()
	for range 5 {
		gate.notify()
	}
	woke := <-wakes
	require.GreaterOrEqual(t, woke.Sub(at), 200*time.Millisecond, "losing: after the pause")
	claim()
	select {
	case <-wakes:
		t.Fatal("the notifications during the pause were coalesced into one wake")
	case <-time.After(300 * time.Millisecond):
	}

	outbox.rows.Store(wakeBusy - 1)
	claim()
	require.True(t, watch.losing(), "a few starts, announced during the pause")
	outbox.rows.Store(wakeBusy)
	claim() // starts pile up: the others do not keep up
	require.False(t, watch.losing())
	require.Less(t, notifyAndClaim(), 100*time.Millisecond)
}

func TestALosingWorkerForgetsOnceItsClaimsStopComingBackEmpty(t *testing.T) {
	t.Parallel()
	watch := &claimWatch{Outbox: &fakeClaims{}, forget: 100 * time.Millisecond}
	for range lostAfter {
		watch.woken.Store(true)
		_, err := watch.ClaimJobStarts(t.Context(), time.Now(), time.Second, 8)
		require.NoError(t, err)
	}
	require.True(t, watch.losing())
	require.Eventually(t, func() bool { return !watch.losing() }, 5*time.Second, 10*time.Millisecond,
		"a worker alone whose claims came back empty by chance claims at once again")
}

func TestAWorkerHearsServesReports(t *testing.T) {
	t.Parallel()
	var reports []jobops.PaceReport
	wakes := 0
	hear := func(payload string) {
		hearServe(payload, func(r jobops.PaceReport) { reports = append(reports, r) }, func() { wakes++ })
	}
	hear(`{"accepted":2,"slow":1}`)
	require.Equal(t, []jobops.PaceReport{{Accepted: 2, Slow: 1}}, reports)
	require.Equal(t, 1, wakes, "new starts: claim them")

	hear(`{"accepted":0,"shed":5}`)
	require.Len(t, reports, 2)
	require.Equal(t, 1, wakes, "creates shed alone add no start to claim")

	hear("")
	require.Len(t, reports, 2, "an older serve's notification reports nothing")
	require.Equal(t, 2, wakes, "… but announces new starts")
}

// A serve that does not pace (--accept-latency-target 0) sends what an
// older serve sends, so that its workers start unpaced too.
func TestServeThatDoesNotPaceReportsNothing(t *testing.T) {
	t.Parallel()
	report := jobops.PaceReport{Accepted: 2, Slow: 1}
	require.JSONEq(t, `{"accepted":2,"slow":1}`, notice(config{AcceptTarget: 10 * time.Millisecond}, report))
	require.Empty(t, notice(config{}, report))
}
