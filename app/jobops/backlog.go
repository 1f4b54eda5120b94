package jobops

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
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
type BacklogGuard struct {
	Store  BacklogStore
	Limits BacklogLimits
	Logger *slog.Logger

	counts atomic.Pointer[backlogCounts]
}

type backlogCounts struct {
	byTenant map[string]int64
	total    int64
	at       time.Time
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
	c := &backlogCounts{byTenant: byTenant, at: time.Now()}
	for _, n := range byTenant {
		c.total += n
	}
	g.counts.Store(c)
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
