package jobstart

import (
	"context"
	"log/slog"
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
// than they start, starts are paced: the rate drops by half in any window
// where more than one acceptance in paceSlowShare took longer than the
// target, and grows by paceStep starts a second in each window where they
// did not. Once new jobs stop coming, or come no faster than they start
// (a steady load), starts run as fast as Concurrency allows again.
type pacer struct {
	target  time.Duration
	limiter *rate.Limiter

	mu       sync.Mutex
	accepted int // jobs accepted this window
	slow     int // of which took longer than target
	started  int // starts made this window
	limit    rate.Limit
}

// How the pacer reads a window and moves the rate.
const (
	paceWindow = 250 * time.Millisecond
	// A burst: at least paceMinBurst jobs accepted in a window (20 a
	// second), more than paceBurstFactor times the starts made.
	paceMinBurst    = 5
	paceBurstFactor = 2
	// More than one acceptance in paceSlowShare over target slows starts.
	paceSlowShare = 20
	paceStep      = rate.Limit(2)   // starts a second added per calm window
	paceMinRate   = rate.Limit(5)   // never fewer starts a second than this
	paceMaxRate   = rate.Limit(1e3) // a paced rate beyond this is no pacing
)

// newPacer paces to keep accepting a job within target; 0 never paces.
func newPacer(target time.Duration) *pacer {
	return &pacer{target: target, limiter: rate.NewLimiter(rate.Inf, 1)}
}

// acceptedJob records that the API accepted a job, which took took.
func (p *pacer) acceptedJob(took time.Duration) {
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
	p.mu.Lock()
	p.started++
	p.mu.Unlock()
}

// wait returns when the next start may be made.
func (p *pacer) wait(ctx context.Context) error {
	return p.limiter.Wait(ctx)
}

// run closes a window every paceWindow until ctx ends.
func (p *pacer) run(ctx context.Context, logger *slog.Logger) {
	if p.target <= 0 {
		return
	}
	ticker := time.NewTicker(paceWindow)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			limit := p.closeWindow()
			if limit != p.limiter.Limit() {
				logger.Debug("job start pace", "starts_per_second", float64(limit))
			}
			p.limiter.SetLimit(limit)
		}
	}
}

// closeWindow reads the window that ends and returns the start rate for
// the next one.
func (p *pacer) closeWindow() rate.Limit {
	p.mu.Lock()
	defer p.mu.Unlock()
	accepted, slow, started := p.accepted, p.slow, p.started
	p.accepted, p.slow, p.started = 0, 0, 0
	if accepted < paceMinBurst || accepted <= paceBurstFactor*started {
		p.limit = 0
		return rate.Inf
	}
	made := rate.Limit(float64(started) / paceWindow.Seconds())
	if p.limit == 0 { // a burst begins: from the rate starts were made at
		p.limit = made
	}
	if slow*paceSlowShare > accepted {
		p.limit /= 2
	} else {
		// Not beyond what the starts made: a limit they do not reach
		// would not hold them back when acceptances slow down.
		p.limit = min(p.limit, made) + paceStep
	}
	p.limit = max(paceMinRate, min(p.limit, paceMaxRate))
	return p.limit
}
