// Package housekeeping runs a worker's periodic sweeps (docs/operations.md,
// Housekeeping). A sweep of what the deployment shares (the blob store, the
// database) runs once a round in the whole deployment, in the worker that
// claims the round; a sweep of what is the process's own (its scratch
// directory) runs in every worker.
package housekeeping

import (
	"context"
	"log/slog"
	"time"

	"github.com/ai-job-gateway/gateway/internal/metrics"
)

// Sweep is one periodic cleanup.
type Sweep struct {
	// Name labels its logs and metrics (sweep=...).
	Name string
	// Every is the length of its rounds.
	Every time.Duration
	// Shared says that what it removes is the deployment's, not the
	// process's: one worker runs each round.
	Shared bool
	// Run removes what is due at now and returns how many it removed.
	Run func(ctx context.Context, now time.Time) (int, error)
}

// Coordinator decides which worker runs a round of a shared sweep;
// *store.Store is one.
type Coordinator interface {
	// TryExclusive runs fn unless another caller runs it under name now.
	TryExclusive(ctx context.Context, name string, fn func(context.Context) error) (bool, error)
	// ClaimRound takes the round of name starting at now, unless one was
	// taken less than every before (last).
	ClaimRound(ctx context.Context, name string, every time.Duration, now time.Time) (claimed bool, last time.Time, err error)
}

// Runner runs sweeps when they are due.
type Runner struct {
	Sweeps []Sweep
	// Coordinator decides who runs shared sweeps; nil runs them here.
	Coordinator Coordinator
	Metrics     *metrics.Metrics
	Logger      *slog.Logger

	next map[string]time.Time // by sweep
}

// busyRetry is how soon a worker asks again for a round that another one
// was sweeping: it then finds the round taken and waits for the next.
const busyRetry = time.Minute

// Run runs every sweep at once, then each once a round, until ctx ends.
func (r *Runner) Run(ctx context.Context) {
	for {
		timer := time.NewTimer(time.Until(r.RunDue(ctx, time.Now())))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// RunDue runs the sweeps due at now and returns when one is due next.
func (r *Runner) RunDue(ctx context.Context, now time.Time) time.Time {
	if r.next == nil {
		r.next = map[string]time.Time{}
	}
	var wake time.Time
	for _, s := range r.Sweeps {
		if ctx.Err() != nil {
			break
		}
		if !now.Before(r.next[s.Name]) {
			r.next[s.Name] = r.run(ctx, s, now)
		}
		if next := r.next[s.Name]; wake.IsZero() || next.Before(wake) {
			wake = next
		}
	}
	return wake
}

// run runs a round of s, or leaves it to another worker, and returns when
// s is due next.
func (r *Runner) run(ctx context.Context, s Sweep, now time.Time) time.Time {
	logger := r.logger().With("sweep", s.Name)
	next := now.Add(s.Every)
	var removed int
	var err error
	started := time.Now()
	if !s.Shared || r.Coordinator == nil {
		removed, err = s.Run(ctx, now)
	} else {
		var claimed, ran bool
		var last time.Time
		ran, err = r.Coordinator.TryExclusive(ctx, "housekeeping:"+s.Name, func(ctx context.Context) error {
			var err error
			if claimed, last, err = r.Coordinator.ClaimRound(ctx, s.Name, s.Every, now); err != nil || !claimed {
				return err
			}
			removed, err = s.Run(ctx, now)
			return err
		})
		switch {
		case err != nil:
		case !ran:
			logger.Debug("housekeeping skipped: another worker is sweeping")
			r.Metrics.Housekeeping(s.Name, "skipped", 0)
			return now.Add(min(busyRetry, s.Every))
		case !claimed:
			logger.Debug("housekeeping skipped: another worker swept this round", "at", last)
			r.Metrics.Housekeeping(s.Name, "skipped", 0)
			if at := last.Add(s.Every); at.After(now) {
				return at
			}
			return now.Add(min(busyRetry, s.Every))
		}
	}
	if ctx.Err() != nil {
		return next // stopping
	}
	took := time.Since(started).Round(time.Millisecond)
	if err != nil {
		logger.Warn("housekeeping", "removed", removed, "took", took, "error", err)
		r.Metrics.Housekeeping(s.Name, "failed", removed)
		return next
	}
	level := slog.LevelInfo
	if removed == 0 {
		level = slog.LevelDebug
	}
	logger.Log(ctx, level, "housekeeping", "removed", removed, "took", took)
	r.Metrics.Housekeeping(s.Name, "ok", removed)
	return next
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.Default()
	}
	return r.Logger
}
