package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// providerRow is one provider's service in `gateway providers` (docs/
// operations.md, Providers from the command line).
type providerRow struct {
	Provider            string         `json:"provider"`
	Service             jobs.ServiceID `json:"service"`
	Status              string         `json:"status"`
	Health              breaker.State  `json:"health"`
	FailureRate         float64        `json:"failure_rate"`
	CallsInWindow       int            `json:"calls_in_window"`
	ConsecutiveFailures int            `json:"consecutive_failures"`
	Opens               int            `json:"opens"`
	NextProbeAt         *time.Time     `json:"next_probe_at,omitempty"`
	Forced              breaker.State  `json:"forced,omitempty"`
	ForcedBy            string         `json:"forced_by,omitempty"`
}

// runProviders prints the catalog's providers, per service, with their
// statuses and circuit breakers as the store has them.
func runProviders(ctx context.Context, cfg config, output string, stdout io.Writer) error {
	if output != "text" && output != "json" {
		return usageErrorf("-o %q: use text or json", output)
	}
	catalog, err := providers.LoadCatalog(cfg.ProvidersFile)
	if err != nil {
		return err
	}
	st, err := openJobStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	statuses, err := st.Routing.ProviderStatuses(ctx)
	if err != nil {
		return err
	}
	breakers, err := st.Breakers.Breakers(ctx)
	if err != nil {
		return err
	}
	rows := providerRows(catalog, statuses, breakers, time.Now())
	if output == "json" {
		return writeJSON(stdout, rows)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PROVIDER\tSERVICE\tSTATUS\tHEALTH\tFAILURE RATE\tCALLS\tOPENS\tNEXT PROBE\tFORCED")
	for _, r := range rows {
		probe := "-"
		if r.NextProbeAt != nil {
			probe = r.NextProbeAt.Format(time.RFC3339)
		}
		forced := "-"
		if r.Forced != "" {
			forced = fmt.Sprintf("%s by %s", r.Forced, r.ForcedBy)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%.0f%%\t%d\t%d\t%s\t%s\n", r.Provider, r.Service, r.Status, r.Health,
			100*r.FailureRate, r.CallsInWindow, r.Opens, probe, forced)
	}
	return w.Flush()
}

// providerRows are the catalog's providers and services, in catalog and
// service order, at now.
func providerRows(catalog *providers.Catalog, statuses map[string]store.ProviderStatus, breakers map[store.BreakerKey]breaker.Breaker, now time.Time) []providerRow {
	var rows []providerRow
	for _, p := range catalog.Providers {
		services := make([]jobs.ServiceID, 0, len(p.Services))
		for id := range p.Services {
			services = append(services, id)
		}
		slices.Sort(services)
		cfg := catalog.BreakerConfig(p)
		for _, service := range services {
			var override *policy.ProviderOverride
			if ps, ok := statuses[p.ID]; ok {
				override = ps.Override()
			}
			_, status := policy.EffectiveStatus(p, service, override)
			b := breakers[store.BreakerKey{ProviderID: p.ID, Service: service}]
			calls, _ := b.Counts(cfg, now)
			row := providerRow{Provider: p.ID, Service: service, Status: string(status), Health: b.Effective(now),
				FailureRate: b.FailureRate(cfg, now), CallsInWindow: calls, ConsecutiveFailures: b.ConsecutiveFailures,
				Opens: b.Opens, Forced: b.Forced, ForcedBy: b.ForcedBy}
			if cfg.Disabled && b.Forced == "" {
				row.Health = breaker.Closed
			} else if t := b.NextProbe(now); !t.IsZero() {
				t = t.UTC()
				row.NextProbeAt = &t
			}
			rows = append(rows, row)
		}
	}
	return rows
}
