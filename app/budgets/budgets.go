// Package budgets reserves jobs' estimated usage against their tenant's
// budgets and notifies the thresholds reservations cross (docs/api.md,
// Budgets). It is of the application layer (app/), above store and
// activities: the budget activity reaches it through an interface the
// activities declare.
package budgets

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// Store is what reservations need of the store.
type Store interface {
	ReserveBudget(ctx context.Context, jobID, tenant string, charges []store.BudgetCharge, now time.Time) (store.BudgetOutcome, error)
	ReleaseBudget(ctx context.Context, jobID string) error
}

// Reserver reserves jobs against budgets.
type Reserver struct {
	Store   Store
	Prices  *providers.PriceBook
	Metrics *metrics.Metrics
	Logger  *slog.Logger
}

// Exceeded is a reservation refused: the budget the estimate does not fit.
type Exceeded struct {
	Budget store.Budget
	Spent  int64
}

// Is matches jobs.ErrBudgetExceeded, what the budget activity looks for.
func (e *Exceeded) Is(target error) bool { return target == jobs.ErrBudgetExceeded }

func (e *Exceeded) Error() string {
	return fmt.Sprintf("budget %s (%s) of tenant has used %s of %s %s; the job's estimate does not fit",
		e.Budget.ID, e.Budget.Period, decimal(e.Spent), decimal(e.Budget.Limit), measure(e.Budget))
}

func measure(b store.Budget) string {
	if b.Currency != "" {
		return b.Currency
	}
	return b.Unit
}

// decimal is n/1e9.
func decimal(n int64) string { return strconv.FormatFloat(float64(n)/1e9, 'f', -1, 64) }

// Applies reports whether any of the tenant's budgets covers the jobs of
// application created with the API key apiKey ("" for none).
func Applies(t *store.Tenant, application, apiKey string) bool {
	if t == nil {
		return false
	}
	for _, b := range t.Budgets {
		if b.Applies(application, apiKey) {
			return true
		}
	}
	return false
}

// TokensBudgetPrefix starts the id of the budget an API key's
// tokens_per_minute is (KeyTokens).
const TokensBudgetPrefix = "tokens_per_minute:"

// LimitsTokens reports whether a job of service created with an API key
// of limits is held to the key's tokens_per_minute: llm-tasks are.
func LimitsTokens(service jobs.ServiceID, limits store.KeyLimits) bool {
	return service == jobs.LLMTasks && limits.TokensPerMinute > 0
}

// KeyTokens is the budget an API key's tokens_per_minute is: the tokens
// of the key's llm-tasks in each clock minute, each job's estimate
// reserved at create and settled to its real count, as budgets are
// (docs/api.md, API keys).
func KeyTokens(apiKey string, tokensPerMinute int) store.Budget {
	return store.Budget{ID: TokensBudgetPrefix + apiKey, APIKey: &apiKey, Period: store.PeriodMinute, Unit: "token",
		Limit: int64(tokensPerMinute) * 1e9}
}

// IsKeyTokens reports whether b is an API key's tokens_per_minute.
func IsKeyTokens(b store.Budget) bool { return b.Period == store.PeriodMinute }

// Charges are a job's estimates against each of its tenant's budgets that
// covers it, at the highest price of the providers that may run it, and
// against its API key's tokens_per_minute, in tokens. t may be nil (no
// record).
func (r *Reserver) Charges(t *store.Tenant, j jobs.Reservation) []store.BudgetCharge {
	var usages []jobs.JobUsage
	if j.Known {
		usages = r.Prices.Estimates(j.Provider, j.Service, j.Usage)
	}
	var out []store.BudgetCharge
	if j.TokensPerMinute > 0 && j.APIKey != "" && j.Service == jobs.LLMTasks {
		var tokens int64
		for _, n := range []*int64{j.Usage.InputTokens, j.Usage.OutputTokens} {
			if n != nil {
				tokens += *n
			}
		}
		out = append(out, store.BudgetCharge{Budget: KeyTokens(j.APIKey, j.TokensPerMinute), Amount: tokens * 1e9})
	}
	if t == nil {
		return out
	}
	for _, b := range t.Budgets {
		if !b.Applies(j.Application, j.APIKey) {
			continue
		}
		var amount int64
		for _, u := range usages {
			switch {
			case b.Currency != "" && u.Cost.Currency == b.Currency:
				amount = max(amount, u.Cost.Nanos)
			case b.Unit != "" && u.Unit == b.Unit:
				amount = max(amount, int64(math.Round(u.Quantity*1e9)))
			}
		}
		out = append(out, store.BudgetCharge{Budget: b, Amount: amount})
	}
	return out
}

// Reserve reserves j's estimate against t's budgets; *Exceeded when it
// does not fit. The thresholds it crosses are logged and counted, and
// their events queued in the store for a Notifier.
func (r *Reserver) Reserve(ctx context.Context, t *store.Tenant, j jobs.Reservation, now time.Time) error {
	charges := r.Charges(t, j)
	if len(charges) == 0 {
		return nil
	}
	out, err := r.Store.ReserveBudget(ctx, j.JobID, t.ID, charges, now)
	if err != nil {
		return err
	}
	for _, c := range out.Crossed {
		r.crossed(t, c)
	}
	if !out.OK {
		return &Exceeded{Budget: *out.Exceeded, Spent: out.Spent}
	}
	return nil
}

// Release gives back a job's open reservations.
func (r *Reserver) Release(ctx context.Context, jobID string) error {
	return r.Store.ReleaseBudget(ctx, jobID)
}

// Event is the body of a budget.threshold event.
type Event struct {
	Event string    `json:"event"`
	Data  EventData `json:"data"`
}

// EventData says which threshold of which budget was crossed.
type EventData struct {
	Tenant      string      `json:"tenant"`
	Budget      string      `json:"budget"`
	Application *string     `json:"application"`
	APIKey      *string     `json:"api_key"`
	PeriodStart time.Time   `json:"period_start"`
	Threshold   int         `json:"threshold"`
	Spent       json.Number `json:"spent"`
	Limit       json.Number `json:"limit"`
	Currency    string      `json:"currency,omitempty"`
	Unit        string      `json:"unit,omitempty"`
	Period      string      `json:"period"`
}

// crossed logs and counts a crossed threshold; the store queued its
// event, which a Notifier delivers.
func (r *Reserver) crossed(t *store.Tenant, c store.BudgetCrossing) {
	r.Metrics.BudgetThreshold(c.Threshold)
	logger := r.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Warn("budget threshold crossed", "tenant", t.ID, "budget", c.Budget.ID, "threshold", c.Threshold,
		"spent", decimal(c.Spent), "limit", decimal(c.Budget.Limit), "measure", measure(c.Budget), "period_start", c.PeriodStart)
}
