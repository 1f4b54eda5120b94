package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/store"
)

// With --job-starts workers, serve's notification of new starts wakes
// every worker's dispatcher, and each claims the outbox; with two workers
// half of those claims found nothing, the other worker having taken the
// starts (docs/operations.md, Sizing workers). A worker whose claims keep
// coming back empty after a notification lets the others take new starts
// and claims at most once per wakePause meanwhile, coalescing the
// notifications, until a claim finds starts piling up (wakeBusy or more:
// the others do not keep up).

// wakePause is how long a worker that keeps losing the outbox to others
// waits before it claims after a notification.
const wakePause = 100 * time.Millisecond

// wakeBusy is how many starts a claim of a losing worker must find for it
// to claim at once again; fewer are those announced during its pause.
const wakeBusy = 4

// lostAfter is how many claims in a row after a notification must find
// nothing: one can be a worker's own doing (its previous claim took the
// starts the notification announced); two are another worker's.
const lostAfter = 2

// wakeForget is how long a losing worker stays so without a claim after a
// notification finding nothing: a worker alone, whose few claims came
// back empty by chance (its own sweep took the starts first), claims at
// once again instead of pausing every start of a quiet outbox.
const wakeForget = 2 * time.Second

// claimWatch is a worker dispatcher's outbox: the store, counting the
// claims after a notification that found nothing.
type claimWatch struct {
	jobops.Outbox
	woken atomic.Bool  // the next claim answers a notification
	empty atomic.Int32 // such claims in a row that found nothing
	// lastEmpty is when the last of them was made (Unix nanoseconds).
	lastEmpty atomic.Int64
	// forget is wakeForget (tests shorten it).
	forget time.Duration
}

func (w *claimWatch) ClaimJobStarts(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.JobStart, error) {
	claimed, err := w.Outbox.ClaimJobStarts(ctx, now, lease, limit)
	if err != nil {
		return claimed, err
	}
	woken := w.woken.Swap(false)
	switch {
	case len(claimed) >= wakeBusy || len(claimed) > 0 && !w.losing():
		w.empty.Store(0)
	case woken && len(claimed) == 0:
		w.empty.Add(1)
		w.lastEmpty.Store(time.Now().UnixNano())
	}
	return claimed, nil
}

// losing reports whether other workers take the new starts.
func (w *claimWatch) losing() bool {
	forget := w.forget
	if forget <= 0 {
		forget = wakeForget
	}
	return w.empty.Load() >= lostAfter && time.Since(time.Unix(0, w.lastEmpty.Load())) < forget
}

// wakeGate passes serve's notifications on to the dispatcher: at once,
// or after wakePause while its claims are losing.
type wakeGate struct {
	watch    *claimWatch
	wake     func()
	pause    time.Duration
	notified chan struct{}
}

func newWakeGate(watch *claimWatch, wake func()) *wakeGate {
	return &wakeGate{watch: watch, wake: wake, pause: wakePause, notified: make(chan struct{}, 1)}
}

// notify records a notification; it never blocks.
func (g *wakeGate) notify() {
	select {
	case g.notified <- struct{}{}:
	default: // one is pending: it covers this one
	}
}

// run wakes the dispatcher until ctx ends.
func (g *wakeGate) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.notified:
		}
		if g.watch.losing() {
			t := time.NewTimer(g.pause)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			select {
			case <-g.notified: // coalesced into this wake
			default:
			}
		}
		g.watch.woken.Store(true)
		g.wake()
	}
}
