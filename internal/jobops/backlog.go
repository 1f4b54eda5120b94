package jobops

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// BacklogStore counts the outbox of job starts by tenant.
type BacklogStore interface {
	JobStartBacklog(ctx context.Context) (map[string]int64, error)
}

// BacklogLimits bound the outbox of accepted jobs whose workflows are not
// started yet (docs/operations.md, Overload): past a bound, creates are
// shed with 429 RATE_LIMITED and Retry-After instead of growing the
// backlog. 0 is no bound.
type BacklogLimits struct {
	PerTenant int64
	Total     int64
}

// backlogRefresh is how often a BacklogGuard counts the outbox; between
// counts, a burst may pass a bound by what it creates in that time.
const backlogRefresh = 500 * time.Millisecond

// BacklogGuard sheds creates past the backlog's bounds, from a count of
// the outbox it refreshes in the background (Run), so a create pays a map
// lookup, never a query.
//
// Given the Starts of a serve that hands its starts off to the workers,
// it also measures from consecutive counts how fast starts leave the
// outbox, every process's together, and tells Starts (OutboxLeft), whose
// reports carry it to the workers' pacers.
type BacklogGuard struct {
	Store  BacklogStore
	Limits BacklogLimits
	Logger *slog.Logger
	Starts *Dispatcher

	counts atomic.Pointer[backlogCounts]
	// recent are the counts of the last outboxRateSpan, oldest first.
	recentMu sync.Mutex
	recent   []*backlogCounts
}

// outboxRateSpan is the span of counts a rate starts left the outbox at
// is measured over: a few counts, so that one stall of the database (its
// deletes held, then made at once) does not read as a spike.
const outboxRateSpan = 2 * time.Second

type backlogCounts struct {
	byTenant map[string]int64
	total    int64
	at       time.Time
	// accepted is Starts' count of jobs accepted, read before counting.
	accepted int64
}

// backlogKept is how long a count stands when counting again fails (the
// database is slow or away): shedding holds through a short stall.
const backlogKept = 5 * time.Second

// Run counts the outbox every backlogRefresh until ctx ends.
func (g *BacklogGuard) Run(ctx context.Context) {
	if g.Limits == (BacklogLimits{}) {
		return
	}
	ticker := time.NewTicker(backlogRefresh)
	defer ticker.Stop()
	for {
		g.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Refresh counts the outbox now.
func (g *BacklogGuard) Refresh(ctx context.Context) {
	var accepted int64
	if g.Starts != nil {
		accepted = g.Starts.accepted.Load()
	}
	byTenant, err := g.Store.JobStartBacklog(ctx)
	if err != nil {
		if ctx.Err() == nil && g.Logger != nil {
			g.Logger.Warn("count the outbox of job starts; the last count stands for 5 s", "error", err)
		}
		if last := g.counts.Load(); last != nil && time.Since(last.at) > backlogKept {
			g.counts.Store(nil) // shed nothing on a stale count
		}
		return
	}
	c := &backlogCounts{byTenant: byTenant, at: time.Now(), accepted: accepted}
	for _, n := range byTenant {
		c.total += n
	}
	g.counts.Store(c)
	if g.Starts != nil {
		g.measureStarts(c)
	}
}

// measureStarts tells Starts how fast starts left the outbox over the
// counts of the last outboxRateSpan, c the newest: what was there at the
// first, and was accepted since, less what is there now.
func (g *BacklogGuard) measureStarts(c *backlogCounts) {
	g.recentMu.Lock()
	defer g.recentMu.Unlock()
	g.recent = append(g.recent, c)
	for len(g.recent) > 1 && c.at.Sub(g.recent[0].at) > outboxRateSpan {
		g.recent = g.recent[1:]
	}
	first := g.recent[0]
	if first == c {
		return
	}
	left := first.total + (c.accepted - first.accepted) - c.total
	g.Starts.OutboxLeft(rate.Limit(float64(max(left, 0)) / c.at.Sub(first.at).Seconds()))
}

// check refuses a create of tenant's past a bound: ErrRateLimited with a
// Retry-After.
func (g *BacklogGuard) check(tenant string) error {
	if g == nil {
		return nil
	}
	c := g.counts.Load()
	if c == nil {
		return nil
	}
	var e *Error
	switch {
	case g.Limits.PerTenant > 0 && c.byTenant[tenant] >= g.Limits.PerTenant:
		e = refuse(ErrRateLimited, "tenant %s has %d accepted jobs waiting to start, the most the gateway holds for one tenant; retry after the Retry-After seconds",
			tenant, c.byTenant[tenant])
	case g.Limits.Total > 0 && c.total >= g.Limits.Total:
		e = refuse(ErrRateLimited, "the gateway has %d accepted jobs waiting to start, the most it holds; retry after the Retry-After seconds", c.total)
	default:
		return nil
	}
	e.RetryAfter = time.Second
	return e
}
