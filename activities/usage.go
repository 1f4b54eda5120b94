package activities

import (
	"context"
	"encoding/json"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// bill measures and prices a completed job (docs/api.md, Usage and cost):
// it sets row's usage, takes result.usage out of the stored result unless
// the job set options.include_usage (adapters always report it), and
// returns the job's ledger entry. Failed attempts are not billed: no
// adapter reports that a failed call was charged.
func bill(prices *providers.PriceBook, snap jobs.Snapshot, row *jobs.Record) (*store.UsageEntry, bool, error) {
	native, estimated := jobs.MeasureUsage(snap.Service, snap.Input, snap.Result)
	usage, priced := prices.Price(snap.Provider, snap.Service, native)
	usage.Estimated = estimated
	body, err := json.Marshal(usage)
	if err != nil {
		return nil, false, err
	}
	nativeJSON, err := json.Marshal(usage.Native)
	if err != nil {
		return nil, false, err
	}
	row.Usage = string(body)
	row.Result = string(withoutUsage(snap.Options, snap.Result))

	attempt := len(snap.RoutingHistory)
	if snap.Routing != nil && snap.Routing.Attempt > 0 {
		attempt = snap.Routing.Attempt
	}
	billedAt := time.Now().UTC()
	if snap.CompletedAt != nil {
		billedAt = snap.CompletedAt.UTC()
	}
	return &store.UsageEntry{
		JobID: snap.ID, Attempt: max(attempt, 1), Tenant: snap.Tenant, Application: snap.Application,
		APIKey:  jobs.CallerKey(snap.UserID),
		Service: snap.Service, Provider: snap.Provider, Unit: usage.Unit, Quantity: usage.Quantity,
		Native: string(nativeJSON), CostNanos: usage.Cost.Nanos, Currency: usage.Cost.Currency,
		PriceVersion: usage.PriceVersion, Estimated: usage.Estimated, BilledAt: billedAt,
		Unbudgeted: !snap.Budgeted,
	}, priced, nil
}

// withoutUsage is the result without its usage member when the job's
// options did not set include_usage.
func withoutUsage(options, result json.RawMessage) json.RawMessage {
	var opts struct {
		IncludeUsage bool `json:"include_usage"`
	}
	_ = json.Unmarshal(options, &opts)
	if opts.IncludeUsage {
		return result
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(result, &members) != nil || members == nil {
		return result
	}
	if _, ok := members["usage"]; !ok {
		return result
	}
	delete(members, "usage")
	out, err := json.Marshal(members)
	if err != nil {
		return result
	}
	return out
}

// recordUsage counts a billed job in the metrics; a job nothing prices is
// logged at WARN, never silently free.
func (p *Projections) recordUsage(ctx context.Context, e *store.UsageEntry, priced bool) {
	p.Metrics.Usage(string(e.Service), e.Provider, e.Unit, e.Quantity, e.Currency, float64(e.CostNanos)/1e9, !priced)
	if !priced && activity.IsActivity(ctx) {
		activity.GetLogger(ctx).Warn("completed job costed at zero: nothing prices it (docs/api.md, Usage and cost)",
			"job", e.JobID, "service", e.Service, "provider", e.Provider, "unit", e.Unit, "price_version", e.PriceVersion)
	}
}
