package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm/clause"

	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// SetIdempotencyDeleteBatch sets how many keys one delete takes.
func SetIdempotencyDeleteBatch(n int) { idempotencyDeleteBatch = n }

// NewCacheAt is NewCache with a clock.
func NewCacheAt(s *Store, ttl time.Duration, now func() time.Time) *Cache {
	return newCache(s, ttl, now)
}

// Clock is a clock tests move by hand.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a Clock showing now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// RollbackMigration undoes the applied migration id alone, as if the
// database had not reached it yet.
func (s *Store) RollbackMigration(ctx context.Context, id string) error {
	m := gormigrate.New(s.db.WithContext(ctx), &gormigrate.Options{
		TableName:      "schema_migrations",
		IDColumnName:   "id",
		IDColumnSize:   255,
		UseTransaction: true,
	}, migrations)
	for _, mig := range migrations {
		if mig.ID == id {
			return m.RollbackMigration(mig)
		}
	}
	return fmt.Errorf("no migration %s", id)
}

// AdvisoryKey is the SQL of the advisory lock key named $1.
const AdvisoryKey = advisoryKey

// Setting reads a server setting over the store's connection.
func (s *Store) Setting(ctx context.Context, name string) (string, error) {
	var v string
	err := s.db.WithContext(ctx).Raw("SELECT current_setting(?)", name).Scan(&v).Error
	return v, err
}

// MaxOpenConns is the bound on the store's open connections.
func (s *Store) MaxOpenConns() int {
	db, err := s.db.DB()
	if err != nil {
		return -1
	}
	return db.Stats().MaxOpenConnections
}

// SynchronousCommit is PostgreSQL's synchronous_commit of the session a
// statement runs on.
func (s *Store) SynchronousCommit(ctx context.Context) (string, error) {
	var setting string
	err := s.db.WithContext(ctx).Raw("SHOW synchronous_commit").Scan(&setting).Error
	return setting, err
}

// SynchronousCommitWhereUnsynced is PostgreSQL's synchronous_commit
// inside a statement whose condition is unsyncedCommit.
func (s *Store) SynchronousCommitWhereUnsynced(ctx context.Context) (string, error) {
	var setting string
	err := s.db.WithContext(ctx).Raw("SELECT current_setting('synchronous_commit') WHERE " + unsyncedCommit).Scan(&setting).Error
	return setting, err
}

// HoldProgress raises a processing job's progress as UpdateProgress does,
// with its event, in a transaction it leaves open, holding the job's row,
// until commit is called.
func (s *Store) HoldProgress(ctx context.Context, id string, progress int) (commit func() error, err error) {
	tx := s.db.WithContext(ctx).Begin()
	if tx.Error != nil {
		return nil, tx.Error
	}
	var job jobs.Record
	res := tx.Model(&job).Clauses(clause.Returning{Columns: eventColumns}).Where("id = ?", id).
		Updates(map[string]any{"progress": progress, "updated_at": time.Now().UTC()})
	if res.Error == nil {
		res.Error = appendJobEvent(tx, &job)
	}
	if res.Error != nil {
		tx.Rollback()
		return nil, res.Error
	}
	return func() error { return tx.Commit().Error }, nil
}

// StatementsWaitingForLocks counts the statements of this database that
// wait for a lock and contain text.
func (s *Store) StatementsWaitingForLocks(ctx context.Context, text string) (int, error) {
	var n int
	err := s.db.WithContext(ctx).Raw("SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "+
		"AND wait_event_type = 'Lock' AND strpos(query, ?) > 0", text).Scan(&n).Error
	return n, err
}

// ProjectInOneStatement is projectInOneStatement.
func (s *Store) ProjectInOneStatement(ctx context.Context, job *jobs.Record, entry *UsageEntry) (bool, error) {
	job.UpdatedAt = time.Now().UTC()
	return s.projectInOneStatement(ctx, job, entry)
}

// SequenceExists reports whether the PostgreSQL schema has the sequence.
func (s *Store) SequenceExists(ctx context.Context, name string) (bool, error) {
	var n int64
	err := s.db.WithContext(ctx).Raw("SELECT count(*) FROM pg_class WHERE relkind = 'S' AND relname = ? AND relnamespace = current_schema()::regnamespace", name).Scan(&n).Error
	return n > 0, err
}

// Readers and writers only tests use.

// RecordBreakerOutcome counts how a call to a provider for a service ended
// and returns its breaker afterwards, with the transition it made.
func (s *BreakerStore) RecordBreakerOutcome(ctx context.Context, key BreakerKey, cfg breaker.Config, o breaker.Outcome, now time.Time) (breaker.Breaker, breaker.Transition, error) {
	b, ts, err := s.RecordBreakerOutcomes(ctx, key, cfg, []breaker.Call{{Outcome: o, At: now}})
	var t breaker.Transition
	if len(ts) > 0 {
		t = ts[0]
	}
	return b, t, err
}

// NextTurn advances a shared round-robin counter and returns the turn this
// caller got (0 for the first), in one statement.
func (s *RoutingStore) NextTurn(ctx context.Context, key string) (int64, error) {
	return nextTurn(s.db.WithContext(ctx), key)
}

// SumUsage adds up the ledger entries f selects, by service, unit and
// currency; the costs are exact.
func (s *UsageStore) SumUsage(ctx context.Context, f UsageFilter) ([]UsageSum, error) {
	q := s.db.WithContext(ctx).Table("usage_ledger").
		Select("service, unit, currency, COUNT(*) AS entries, COALESCE(SUM(quantity), 0) AS quantity, "+
			"CAST(COALESCE(SUM(cost_nanos), 0) AS BIGINT) AS cost_nanos").
		Where("tenant = ? AND billed_at >= ? AND billed_at < ?", f.Tenant, f.From.UTC(), f.To.UTC())
	if f.Application != nil {
		q = q.Where("application = ?", *f.Application)
	}
	var sums []UsageSum
	err := q.Group("service, unit, currency").Order("service, unit, currency").Scan(&sums).Error
	return sums, err
}

// UsageEntries lists a job's ledger entries by attempt.
func (s *UsageStore) UsageEntries(ctx context.Context, jobID string) ([]UsageEntry, error) {
	var entries []UsageEntry
	err := s.db.WithContext(ctx).Where("job_id = ?", jobID).Order("attempt").Find(&entries).Error
	return entries, err
}

// BudgetReservations lists a job's reservations by budget id.
func (s *UsageStore) BudgetReservations(ctx context.Context, jobID string) ([]JobReservation, error) {
	var rows []budgetReservation
	if err := s.db.WithContext(ctx).Where("job_id = ?", jobID).Order("budget_id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]JobReservation, 0, len(rows))
	for _, r := range rows {
		out = append(out, JobReservation{BudgetID: r.BudgetID, PeriodStart: r.PeriodStart.UTC(), Amount: r.Amount,
			Settled: r.Settled, State: r.State, Currency: r.Currency, Unit: r.Unit})
	}
	return out, nil
}

// BudgetNotificationState reads notification id's state and attempts.
// ErrNotFound when there is none.
func (s *UsageStore) BudgetNotificationState(ctx context.Context, id string) (state string, attempts int, err error) {
	r, err := take[budgetNotification](s.db.WithContext(ctx).Where("id = ?", id))
	if err != nil {
		return "", 0, err
	}
	return r.State, r.Attempts, nil
}

// InsertJob records a job without a start unless a record with its id
// exists already. The API uses CreateJob; this seeds tests and tools.
func (s *JobStore) InsertJob(ctx context.Context, job *jobs.Record) error {
	return s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(job).Error
}

// JobReservation is a job's reservation against one budget.
type JobReservation struct {
	BudgetID       string
	PeriodStart    time.Time
	Amount         int64
	Settled        int64
	State          string
	Currency, Unit string
}

// UsageFilter selects ledger entries: a tenant's, of one application
// when Application is set, billed in [From, To).
type UsageFilter struct {
	Tenant      string
	Application *string
	From, To    time.Time
}

// UsageSum is the usage of the entries of one service, unit and currency.
type UsageSum struct {
	Service   jobs.ServiceID
	Unit      string
	Currency  string
	Entries   int64
	Quantity  float64
	CostNanos int64
}
