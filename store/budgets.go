package store

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Budget periods.
const (
	PeriodDay   = "day"
	PeriodMonth = "month"
	// PeriodMinute is a clock minute: an API key's tokens_per_minute is a
	// budget of this period (docs/api.md, API keys), never a tenant's.
	PeriodMinute = "minute"
)

// Budget is a limit on what a tenant's jobs, or those of one application
// or one API key, may use in a period (docs/api.md, Budgets): a cost in
// Currency or a quantity in Unit (a usage unit: minute, character,
// token, ...).
type Budget struct {
	ID          string  `json:"id"`
	Application *string `json:"application,omitempty"`
	APIKey      *string `json:"api_key,omitempty"` // the key's id
	Period      string  `json:"period"`
	Currency    string  `json:"currency,omitempty"`
	Unit        string  `json:"unit,omitempty"`
	// Limit is in 1e-9 of the currency or unit.
	Limit int64 `json:"limit_nanos"`
	// Thresholds are percents of Limit, ascending, each notified once a
	// period.
	Thresholds []int `json:"thresholds,omitempty"`
}

// Applies reports whether a job of application, created with the API key
// apiKey ("" for none), counts against b: it must match both the
// application and the key b names.
func (b Budget) Applies(application, apiKey string) bool {
	return (b.Application == nil || *b.Application == application) &&
		(b.APIKey == nil || *b.APIKey == apiKey)
}

// NamesAPIKey reports whether any of budgets is limited to one API key's
// jobs.
func NamesAPIKey(budgets []Budget) bool {
	return slices.ContainsFunc(budgets, func(b Budget) bool { return b.APIKey != nil })
}

// PeriodStart is the start of b's period that holds now: midnight UTC, or
// the first of the month.
func (b Budget) PeriodStart(now time.Time) time.Time {
	now = now.UTC()
	if b.Period == PeriodMinute {
		return now.Truncate(time.Minute)
	}
	if b.Period == PeriodMonth {
		return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
}

// PeriodEnd is the end of the period starting at start.
func (b Budget) PeriodEnd(start time.Time) time.Time {
	if b.Period == PeriodMinute {
		return start.Add(time.Minute)
	}
	if b.Period == PeriodMonth {
		return start.AddDate(0, 1, 0)
	}
	return start.AddDate(0, 0, 1)
}

func cloneBudgets(in []Budget) []Budget {
	if in == nil {
		return nil
	}
	out := make([]Budget, len(in))
	for i, b := range in {
		b.Application = clonePointer(b.Application)
		b.APIKey = clonePointer(b.APIKey)
		b.Thresholds = slices.Clone(b.Thresholds)
		out[i] = b
	}
	return out
}

// BudgetCharge is a job's estimate against one budget, in 1e-9 of its
// currency or unit.
type BudgetCharge struct {
	Budget Budget
	Amount int64
}

// BudgetCrossing is a threshold a reservation crossed.
type BudgetCrossing struct {
	Tenant      string
	Budget      Budget
	PeriodStart time.Time
	Threshold   int
	// Spent is what the budget has used, reservations included, in 1e-9
	// of its currency or unit.
	Spent int64
}

// BudgetOutcome is the outcome of ReserveBudget: OK, or the budget the
// estimate does not fit (Exceeded, with what it has used), and the
// thresholds crossed, whose events are queued for delivery
// (DueBudgetNotifications).
type BudgetOutcome struct {
	OK       bool
	Exceeded *Budget
	Spent    int64
	Crossed  []BudgetCrossing
}

// Reservation states.
const (
	reservationReserved = "reserved"
	reservationSettled  = "settled"
	reservationReleased = "released"
)

// budgetCounter is what a budget used in one period.
type budgetCounter struct {
	Tenant      string    `gorm:"primaryKey"`
	BudgetID    string    `gorm:"primaryKey"`
	PeriodStart time.Time `gorm:"primaryKey"`
	Settled     int64
	Reserved    int64
	Notified    int
	UpdatedAt   time.Time
}

func (budgetCounter) TableName() string { return "budget_counters" }

// budgetReservation is a job's reservation against one budget.
type budgetReservation struct {
	JobID       string `gorm:"primaryKey"`
	BudgetID    string `gorm:"primaryKey"`
	Tenant      string
	PeriodStart time.Time
	Currency    string
	Unit        string
	Amount      int64
	Settled     int64
	State       string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (budgetReservation) TableName() string { return "budget_reservations" }

// ReserveBudget reserves a job's estimates against its tenant's budgets,
// all or none: in one transaction that holds each budget's counter row
// (SELECT ... FOR UPDATE on PostgreSQL; SQLite serialises writers), every
// budget must keep settled + reserved + estimate within its limit. A job
// with open reservations keeps them: a repeat, also a concurrent one, is
// OK and crosses nothing; a deleted job reserves nothing. A period's
// counter starts from the ledger's sum of the period.
func (s *UsageStore) ReserveBudget(ctx context.Context, jobID, tenant string, charges []BudgetCharge, now time.Time) (BudgetOutcome, error) {
	charges = slices.Clone(charges)
	// One lock order for every transaction: no deadlocks.
	sort.Slice(charges, func(i, k int) bool { return charges[i].Budget.ID < charges[k].Budget.ID })
	now = now.UTC().Truncate(time.Microsecond)
	var out BudgetOutcome
	err := s.write(ctx, func(tx *gorm.DB) error {
		out = BudgetOutcome{}
		// The counters first: a concurrent reservation of the same job
		// (a create retried with its Idempotency-Key, a retried activity)
		// waits here, then finds this one's reservation below.
		counters := make([]budgetCounter, len(charges))
		for i, c := range charges {
			counter, err := s.lockCounter(tx, tenant, c.Budget, c.Budget.PeriodStart(now), now)
			if err != nil {
				return err
			}
			counters[i] = counter
		}
		var open, deleted int64
		if err := tx.Model(&budgetReservation{}).Where("job_id = ? AND state = ?", jobID, reservationReserved).Count(&open).Error; err != nil {
			return err
		}
		if err := tx.Model(&jobs.Tombstone{}).Where("id = ?", jobID).Count(&deleted).Error; err != nil {
			return err
		}
		if open > 0 || deleted > 0 {
			out.OK = true // kept; a deleted job reserves nothing more
			return nil
		}
		for i, c := range charges {
			counter := counters[i]
			spent := counter.Settled + counter.Reserved
			// An unknown estimate (0) still needs room left.
			if spent+c.Amount > c.Budget.Limit || (c.Amount == 0 && spent >= c.Budget.Limit) {
				b := c.Budget
				out.Exceeded, out.Spent = &b, spent
				return nil
			}
		}
		for i, c := range charges {
			counter := counters[i]
			before := counter.Settled + counter.Reserved
			after := before + c.Amount
			notified := counter.Notified
			for _, t := range c.Budget.Thresholds {
				if t > notified && reached(after, c.Budget.Limit, t) {
					out.Crossed = append(out.Crossed, BudgetCrossing{Tenant: tenant, Budget: c.Budget,
						PeriodStart: c.Budget.PeriodStart(now), Threshold: t, Spent: after})
					notified = t
				}
			}
			if err := tx.Model(&budgetCounter{}).
				Where("tenant = ? AND budget_id = ? AND period_start = ?", tenant, c.Budget.ID, c.Budget.PeriodStart(now)).
				Updates(map[string]any{"reserved": gorm.Expr("reserved + ?", c.Amount), "notified": notified, "updated_at": now}).Error; err != nil {
				return err
			}
			r := budgetReservation{JobID: jobID, BudgetID: c.Budget.ID, Tenant: tenant, PeriodStart: c.Budget.PeriodStart(now),
				Currency: c.Budget.Currency, Unit: c.Budget.Unit, Amount: c.Amount, State: reservationReserved,
				CreatedAt: now, UpdatedAt: now}
			if err := tx.Clauses(clause.OnConflict{
				Columns:   []clause.Column{{Name: "job_id"}, {Name: "budget_id"}},
				DoUpdates: clause.AssignmentColumns([]string{"tenant", "period_start", "currency", "unit", "amount", "settled", "state", "updated_at"}),
			}).Create(&r).Error; err != nil {
				return err
			}
		}
		if err := queueNotifications(tx, out.Crossed, now); err != nil {
			return err
		}
		out.OK = true
		return nil
	})
	return out, err
}

// reached reports whether used is at least percent of limit.
func reached(used, limit int64, percent int) bool {
	return float64(used)*100 >= float64(percent)*float64(limit)
}

// lockCounter reads and locks a budget's counter of the period starting
// at start, creating it from the ledger's sum of the period when it is
// the period's first.
func (s *conn) lockCounter(tx *gorm.DB, tenant string, b Budget, start, now time.Time) (budgetCounter, error) {
	var c budgetCounter
	where := "tenant = ? AND budget_id = ? AND period_start = ?"
	err := s.lockForUpdate(tx).Where(where, tenant, b.ID, start).Take(&c).Error
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return c, err
	}
	var settled int64
	if b.Period != PeriodMinute {
		// A minute counts the jobs reserved in it, settled as they are
		// billed, whenever that is: the ledger's minute is another.
		if settled, err = ledgerSpent(tx, tenant, b, start); err != nil {
			return c, err
		}
	}
	c = budgetCounter{Tenant: tenant, BudgetID: b.ID, PeriodStart: start, Settled: settled, UpdatedAt: now}
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&c).Error; err != nil {
		return c, err
	}
	err = s.lockForUpdate(tx).Where(where, tenant, b.ID, start).Take(&c).Error
	return c, err
}

// ledgerSpent is what the ledger billed against b in the period starting
// at start, in 1e-9 of its currency or unit.
func ledgerSpent(tx *gorm.DB, tenant string, b Budget, start time.Time) (int64, error) {
	q := tx.Table("usage_ledger").Where("tenant = ? AND billed_at >= ? AND billed_at < ?", tenant, start, b.PeriodEnd(start))
	if b.Application != nil {
		q = q.Where("application = ?", *b.Application)
	}
	if b.APIKey != nil {
		q = q.Where("api_key = ?", *b.APIKey)
	}
	if b.Currency != "" {
		var sum int64
		err := q.Where("currency = ?", b.Currency).Select("CAST(COALESCE(SUM(cost_nanos), 0) AS BIGINT)").Scan(&sum).Error
		return sum, err
	}
	var sum float64
	err := q.Where("unit = ?", b.Unit).Select("COALESCE(SUM(quantity), 0)").Scan(&sum).Error
	return quantityNanos(sum), err
}

// quantityNanos is a ledger quantity in 1e-9 of its unit.
func quantityNanos(q float64) int64 { return int64(math.Round(q * 1e9)) }

// settleBudgets settles a billed job's open reservations to its ledger
// entry, in the transaction that writes the entry: each budget's counter
// moves the estimate from reserved to what the entry bills in the
// budget's currency or unit.
func (s *conn) settleBudgets(tx *gorm.DB, e *UsageEntry) error {
	actual := func(r budgetReservation) int64 {
		switch {
		case r.Currency != "" && r.Currency == e.Currency:
			return e.CostNanos
		case r.Unit != "" && r.Unit == e.Unit:
			return quantityNanos(e.Quantity)
		case r.Unit == "token":
			// Billed by another unit (per request): the tokens the
			// provider reported.
			return nativeTokens(e.Native) * 1e9
		}
		return 0
	}
	if err := s.closeReservations(tx, e.JobID, reservationSettled, actual); err != nil {
		return err
	}
	return s.settleReleased(tx, e.JobID, actual)
}

// settleReleased counts what a job billed against the budgets whose
// reservations were released before (a job deleted or given up for
// failed while its call ran): its money was spent all the same.
func (s *conn) settleReleased(tx *gorm.DB, jobID string, actual func(budgetReservation) int64) error {
	var released []budgetReservation
	if err := s.lockForUpdate(tx).Where("job_id = ? AND state = ?", jobID, reservationReleased).
		Order("budget_id").Find(&released).Error; err != nil {
		return err
	}
	now := microsNow()
	for _, r := range released {
		settled := actual(r)
		if err := tx.Model(&budgetCounter{}).
			Where("tenant = ? AND budget_id = ? AND period_start = ?", r.Tenant, r.BudgetID, r.PeriodStart.UTC()).
			Updates(map[string]any{"settled": gorm.Expr("settled + ?", settled), "updated_at": now}).Error; err != nil {
			return err
		}
		if err := tx.Model(&budgetReservation{}).Where("job_id = ? AND budget_id = ?", r.JobID, r.BudgetID).
			Updates(map[string]any{"state": reservationSettled, "settled": settled, "updated_at": now}).Error; err != nil {
			return err
		}
	}
	return nil
}

// ReleaseBudget releases a job's open reservations: it ended unbilled.
// Releasing again changes nothing.
func (s *UsageStore) ReleaseBudget(ctx context.Context, jobID string) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		return s.closeReservations(tx, jobID, reservationReleased, releasedAmount)
	})
}

// releasedAmount is what a released reservation settles: nothing.
func releasedAmount(budgetReservation) int64 { return 0 }

// closeReservations moves a job's open reservations to state, with
// actual(r) settled in their counters.
func (s *conn) closeReservations(tx *gorm.DB, jobID, state string, actual func(budgetReservation) int64) error {
	var open []budgetReservation
	if err := s.lockForUpdate(tx).Where("job_id = ? AND state = ?", jobID, reservationReserved).
		Order("budget_id").Find(&open).Error; err != nil {
		return err
	}
	now := microsNow()
	for _, r := range open {
		settled := actual(r)
		if err := tx.Model(&budgetCounter{}).
			Where("tenant = ? AND budget_id = ? AND period_start = ?", r.Tenant, r.BudgetID, r.PeriodStart.UTC()).
			Updates(map[string]any{"reserved": gorm.Expr("reserved - ?", r.Amount),
				"settled": gorm.Expr("settled + ?", settled), "updated_at": now}).Error; err != nil {
			return err
		}
		if err := tx.Model(&budgetReservation{}).Where("job_id = ? AND budget_id = ?", r.JobID, r.BudgetID).
			Updates(map[string]any{"state": state, "settled": settled, "updated_at": now}).Error; err != nil {
			return err
		}
	}
	return nil
}

// BudgetUse is what a budget has used in a period, in 1e-9 of its
// currency or unit.
type BudgetUse struct {
	Settled, Reserved int64
}

// BudgetUsed reads what b has used in the period holding now; a period
// without a counter yet counts the ledger.
func (s *UsageStore) BudgetUsed(ctx context.Context, tenant string, b Budget, now time.Time) (BudgetUse, error) {
	start := b.PeriodStart(now)
	var c budgetCounter
	db := s.db.WithContext(ctx)
	err := db.Where("tenant = ? AND budget_id = ? AND period_start = ?", tenant, b.ID, start).Take(&c).Error
	if err == nil {
		return BudgetUse{Settled: c.Settled, Reserved: c.Reserved}, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return BudgetUse{}, err
	}
	settled, err := ledgerSpent(db, tenant, b, start)
	return BudgetUse{Settled: settled}, err
}

// DeleteMinuteBudgetCountersBefore deletes the counters of minute budgets
// (API keys' tokens_per_minute) whose minute started before t: once past,
// a minute's counter is never read again.
func (s *UsageStore) DeleteMinuteBudgetCountersBefore(ctx context.Context, prefix string, t time.Time) (int64, error) {
	var deleted int64
	err := s.writeStatement(ctx, func(tx *gorm.DB) error {
		res := tx.Where("budget_id LIKE ? AND period_start < ?", prefix+"%", t.UTC()).Delete(&budgetCounter{})
		deleted = res.RowsAffected
		return res.Error
	})
	return deleted, err
}

// nativeTokens is the input and output tokens of a ledger entry's native
// usage (jobs.NativeUsage, JSON); 0 when it has none.
func nativeTokens(native string) int64 {
	var n jobs.NativeUsage
	if json.Unmarshal([]byte(native), &n) != nil {
		return 0
	}
	var tokens int64
	for _, t := range []*int64{n.InputTokens, n.OutputTokens} {
		if t != nil {
			tokens += *t
		}
	}
	return tokens
}
