package jobops

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// A pacer slows the dispatcher's starts down during a burst of new jobs,
// when they share the machine with the API. A started job's workflow,
// activities and Temporal's own work cost tens of times what accepting
// it does; started as fast as the workers allow, a burst's jobs take every
// core while more of the burst still waits for its 202. The jobs are
// safe in the outbox meanwhile, so while jobs are accepted much faster
// than they start (than they started before pacing, too: a paced rate
// does not keep itself going), starts are paced: the rate drops by half
// in any window where more than one acceptance in paceSlowShare (and
// more than one) took longer than the target, and otherwise grows by
// paceStep starts a second beyond the starts made. Once new jobs stop
// coming, or come no faster than they start (a steady load), starts run
// as fast as Concurrency allows again.
//
// Creates shed with 429 count as acceptances here (answered): they are
// demand the starts do not meet, and their latency suffers as much from
// the starts' load. Only the creates of the pacer's own process count: a
// worker's dispatcher, which hears of serve's creates only as new
// starts, does not pace (docs/operations.md, Durability).
type pacer struct {
	target  time.Duration
	limiter *rate.Limiter
	turn    chan struct{} // held by the starter waiting for its place

	mu       sync.Mutex
	accepted int // jobs accepted this window
	slow     int // of which took longer than target
	started  int // starts made this window
	limit    rate.Limit
	// unpaced is the rate starts were made at in unpaced windows
	// (a moving average): a burst is judged against it as well.
	unpaced rate.Limit
}

// How the pacer reads a window and moves the rate.
const (
	paceWindow = 250 * time.Millisecond
	// A burst: at least paceMinBurst jobs accepted in a window (20 a
	// second), more than paceBurstFactor times the starts made, and the
	// starts made before pacing.
	paceMinBurst    = 5
	paceBurstFactor = 2
	// More than one acceptance in paceSlowShare over target slows starts.
	paceSlowShare = 20
	paceStep      = rate.Limit(2) // starts a second added per calm window
	// Never fewer starts a second than this: the dispatcher's full queue
	// is then made well within a start's lease (pacer_test.go).
	paceMinRate = rate.Limit(10)
)

// newPacer paces to keep accepting a job within target; 0 never paces.
func newPacer(target time.Duration) *pacer {
	return &pacer{target: target, limiter: rate.NewLimiter(rate.Inf, 1), turn: make(chan struct{}, 1)}
}

// answered records that the API accepted or shed a job's create, which
// took took.
func (p *pacer) answered(took time.Duration) {
	if p.target <= 0 {
		return
	}
	p.mu.Lock()
	p.accepted++
	if took > p.target {
		p.slow++
	}
	p.mu.Unlock()
}

// startedJob records a start made.
func (p *pacer) startedJob() {
	if p.target <= 0 {
		return
	}
	p.mu.Lock()
	p.started++
	p.mu.Unlock()
}

// waitOr waits for the pacer to let a start go (true), or for interrupt
// or, when within is positive, for within to pass (false, the start's
// place given back), or for ctx to end.
//
// One starter at a time holds a place (turn): places taken by every
// starter at once would keep the spacing of the rate they were taken at
// for as many starts as there are starters, and a raised rate would reach
// the starts made only after them, too late for the next window to see.
func (p *pacer) waitOr(ctx context.Context, interrupt <-chan struct{}, within time.Duration) (bool, error) {
	var giveUp <-chan time.Time
	if within > 0 {
		t := time.NewTimer(within)
		defer t.Stop()
		giveUp = t.C
	}
	select {
	case p.turn <- struct{}{}:
	case <-interrupt:
		return false, nil
	case <-giveUp:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-p.turn }()
	r := p.limiter.Reserve()
	delay := r.Delay()
	if delay == 0 {
		return true, nil
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true, nil
	case <-interrupt:
	case <-giveUp:
	case <-ctx.Done():
		r.Cancel()
		return false, ctx.Err()
	}
	r.Cancel()
	return false, nil
}

// run closes a window every paceWindow until ctx ends.
func (p *pacer) run(ctx context.Context, logger *slog.Logger) {
	if p.target <= 0 {
		return
	}
	ticker := time.NewTicker(paceWindow)
	defer ticker.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			limit := p.closeWindow(now.Sub(last))
			last = now
			switch {
			case limit == p.limiter.Limit():
			case limit == rate.Inf:
				logger.Debug("job starts unpaced")
			default:
				logger.Debug("job starts paced", "starts_per_second", math.Round(float64(limit)))
			}
			p.limiter.SetLimit(limit)
		}
	}
}

// closeWindow reads the window that ends, elapsed long (about
// paceWindow), and returns the start rate for the next one.
func (p *pacer) closeWindow(elapsed time.Duration) rate.Limit {
	p.mu.Lock()
	defer p.mu.Unlock()
	accepted, slow, started := p.accepted, p.slow, p.started
	p.accepted, p.slow, p.started = 0, 0, 0
	seconds := max(elapsed, time.Millisecond).Seconds()
	acceptedRate := rate.Limit(float64(accepted) / seconds)
	made := rate.Limit(float64(started) / seconds)
	burst := float64(accepted) >= paceMinBurst*seconds/paceWindow.Seconds() &&
		acceptedRate > paceBurstFactor*max(made, p.unpaced)
	if !burst {
		if p.limit == 0 {
			p.unpaced = (3*p.unpaced + made) / 4
		}
		p.limit = 0
		return rate.Inf
	}
	if p.limit == 0 { // a burst begins: from the rate starts were made at
		p.limit = made
	}
	if slow > 1 && slow*paceSlowShare > accepted {
		p.limit /= 2
	} else {
		// Not beyond what the starts made: a limit they do not reach
		// would not hold them back when acceptances slow down.
		p.limit = min(p.limit, made) + paceStep
	}
	p.limit = max(paceMinRate, p.limit)
	return p.limit
}
