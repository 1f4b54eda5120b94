package main

import (
	"context"
	"flag"
	"log/slog"
	"strconv"

	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/store"
)

// Default bounds of the outbox of accepted jobs (docs/operations.md,
// Overload): far above a healthy backlog, low enough that a flood is shed
// before it takes the database's disk.
const (
	defaultBacklogPerTenant = 20_000
	defaultBacklogTotal     = 100_000
)

// registerBacklogFlags binds --max-backlog-per-tenant and --max-backlog
// (dev and serve).
func (c *config) registerBacklogFlags(fs *flag.FlagSet) {
	fs.Int64Var(&c.Backlog.PerTenant, "max-backlog-per-tenant",
		envOr("GATEWAY_MAX_BACKLOG_PER_TENANT", int64(defaultBacklogPerTenant), parseInt64, -1),
		"accepted jobs of one tenant that may wait to start; past it that tenant's creates answer 429 RATE_LIMITED with Retry-After; 0: no bound (env GATEWAY_MAX_BACKLOG_PER_TENANT)")
	fs.Int64Var(&c.Backlog.Total, "max-backlog", envOr("GATEWAY_MAX_BACKLOG", int64(defaultBacklogTotal), parseInt64, -1),
		"accepted jobs of every tenant that may wait to start; past it creates answer 429 RATE_LIMITED with Retry-After; 0: no bound (env GATEWAY_MAX_BACKLOG)")
}

func parseInt64(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }

func (c *config) validateBacklog() []string {
	var problems []string
	if c.Backlog.PerTenant < 0 {
		problems = append(problems, "--max-backlog-per-tenant (GATEWAY_MAX_BACKLOG_PER_TENANT) must be a whole number of at least 0")
	}
	if c.Backlog.Total < 0 {
		problems = append(problems, "--max-backlog (GATEWAY_MAX_BACKLOG) must be a whole number of at least 0")
	}
	return problems
}

// startBacklogGuard counts the outbox in the background until ctx ends,
// for the API to shed creates past its bounds.
func startBacklogGuard(ctx context.Context, cfg config, st *store.Store, logger *slog.Logger) *jobops.BacklogGuard {
	g := &jobops.BacklogGuard{Store: st.Jobs, Limits: cfg.Backlog, Logger: logger.With("component", "backlog")}
	go g.Run(ctx)
	return g
}
