package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Shared routing state: every worker reads and writes it through the
// database, so limits and round-robin spreads hold across the deployment.

// RateCount is how many requests a provider got for a service in the
// current minute and day.
type RateCount struct {
	Minute int
	Day    int
}

type rateCounter struct {
	ProviderID string `gorm:"primaryKey"`
	Service    string `gorm:"primaryKey"`
	TimeWindow string `gorm:"primaryKey"`
	Count      int
	ExpiresAt  time.Time
}

func (rateCounter) TableName() string { return "rate_counters" }

// rateWindow is one counting window of a limit: a minute or a UTC day.
type rateWindow struct {
	name    string    // time_window: m:YYYYMMDDHHMM or d:YYYYMMDD
	end     time.Time // when the window ends
	expires time.Time // when its counter may be pruned: a window later
	limit   int
}

func minuteWindow(now time.Time, limit int) rateWindow {
	start := now.UTC().Truncate(time.Minute)
	return rateWindow{"m:" + start.Format("200601021504"), start.Add(time.Minute), start.Add(2 * time.Minute), limit}
}

func dayWindow(now time.Time, limit int) rateWindow {
	day := now.UTC().Truncate(24 * time.Hour)
	return rateWindow{"d:" + day.Format("20060102"), day.Add(24 * time.Hour), day.Add(48 * time.Hour), limit}
}

// limitedWindows are the windows of now that have a limit (0 means none).
func limitedWindows(now time.Time, perMinute, perDay int) []rateWindow {
	var out []rateWindow
	if perMinute > 0 {
		out = append(out, minuteWindow(now, perMinute))
	}
	if perDay > 0 {
		out = append(out, dayWindow(now, perDay))
	}
	return out
}

// RateCounts reads the current minute and day counts of providers for a
// service.
func (s *RoutingStore) RateCounts(ctx context.Context, service jobs.ServiceID, providerIDs []string, now time.Time) (map[string]RateCount, error) {
	minute, day := minuteWindow(now, 0).name, dayWindow(now, 0).name
	var rows []rateCounter
	err := s.db.WithContext(ctx).
		Where("service = ? AND provider_id IN ? AND time_window IN ?", service, providerIDs, []string{minute, day}).
		Find(&rows).Error
	if err != nil {
		return nil, err
	}
	out := map[string]RateCount{}
	for _, r := range rows {
		c := out[r.ProviderID]
		if r.TimeWindow == minute {
			c.Minute = r.Count
		} else {
			c.Day = r.Count
		}
		out[r.ProviderID] = c
	}
	return out, nil
}

// ReserveRate counts one request to a provider for a service unless that
// would exceed its per-minute or per-day limit (0 means no limit). It
// reports whether the request fits; a request that does not is counted in
// neither window. Concurrent callers never overshoot: see reserveRate.
func (s *RoutingStore) ReserveRate(ctx context.Context, providerID string, service jobs.ServiceID, perMinute, perDay int, now time.Time) (bool, error) {
	windows := limitedWindows(now, perMinute, perDay)
	if len(windows) == 0 {
		return true, nil
	}
	fits, _, err := s.reserveRate(ctx, nil, providerID, service, windows, now)
	return fits, err
}

// DecisionKey names a routing decision: one attempt of a job. What a
// decision takes under its key (ReserveRateOnce, NextTurnOnce) it takes
// once, however often it is retried: its activity may time out after the
// reservation committed, or its worker die.
type DecisionKey struct {
	JobID   string
	Attempt int
}

// decisionRetention is how long a decision's record is kept: retries of a
// decision come within seconds (a timeout, another worker taking over).
const decisionRetention = time.Hour

// ReserveRateOnce is ReserveRate for a decision: a decision that reserved
// a rate with the provider already gets true without being counted again.
// A decision holds one reservation: reserving with another provider (the
// retry decided otherwise) counts that one and leaves the first counted.
func (s *RoutingStore) ReserveRateOnce(ctx context.Context, key DecisionKey, providerID string, service jobs.ServiceID, perMinute, perDay int, now time.Time) (bool, error) {
	windows := limitedWindows(now, perMinute, perDay)
	if len(windows) == 0 {
		return true, nil
	}
	fits, _, err := s.reserveRate(ctx, &key, providerID, service, windows, now)
	return fits, err
}

// reserveRate counts one request in every window, or in none when one of
// them is at its limit, and returns the windows that are full afterwards.
// It is one statement, an upsert of the windows' counters whose update
// only applies below the limit, and which returns the counters it changed:
// the database checks and increments each counter under its row lock, so
// concurrent callers (also of other processes) never overshoot. With two
// windows, a window that fitted is rolled back when the other did not, in
// the same transaction, so no other caller ever sees the half reservation.
//
// With a decision key (on SQLite; PostgreSQL's is reserveDecisionRate)
// the decision's record is written first, in the same transaction: when
// it already holds the provider (a retry, or another attempt of the
// decision at the same time) nothing is counted.
func (s *RoutingStore) reserveRate(ctx context.Context, key *DecisionKey, providerID string, service jobs.ServiceID, windows []rateWindow, now time.Time) (bool, []rateWindow, error) {
	if key != nil && s.dialect == "postgres" {
		return s.reserveDecisionRate(ctx, *key, providerID, service, windows, now)
	}
	var q strings.Builder
	var args []any
	q.WriteString("INSERT INTO rate_counters (provider_id, service, time_window, count, expires_at) VALUES ")
	for i, w := range windows {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, 1, ?)")
		args = append(args, providerID, service, w.name, w.expires)
	}
	args = countBelowLimits(&q, windows, args)

	var counted []windowCount
	write := s.write // several windows, or a decision's record, reserve all or none
	if len(windows) == 1 && key == nil {
		write = s.writeStatement
	}
	err := write(ctx, func(tx *gorm.DB) error {
		counted = nil
		if key != nil {
			if err := holdReservation(tx, *key, providerID, now); err != nil {
				return err
			}
		}
		if err := tx.Raw(q.String(), args...).Scan(&counted).Error; err != nil {
			return err
		}
		if len(counted) < len(windows) {
			return errRollback
		}
		return nil
	})
	if errors.Is(err, errHeld) {
		return true, nil, nil
	}
	if err != nil && !errors.Is(err, errRollback) {
		return false, nil, fmt.Errorf("reserve rate: %w", err)
	}
	fits := err == nil
	return fits, windowsLeftFull(windows, counted, fits), nil
}

// countBelowLimits ends an insert of rate counters: a counter that exists
// is counted only below its window's limit, and the statement returns the
// counters it changed.
func countBelowLimits(q *strings.Builder, windows []rateWindow, args []any) []any {
	q.WriteString(" ON CONFLICT (provider_id, service, time_window) DO UPDATE SET count = rate_counters.count + 1" +
		" WHERE rate_counters.count < CASE rate_counters.time_window")
	for _, w := range windows {
		q.WriteString(" WHEN ? THEN CAST(? AS INTEGER)")
		args = append(args, w.name, w.limit)
	}
	q.WriteString(" END RETURNING time_window, count")
	return args
}

// windowsLeftFull are the windows that are full after a reservation.
func windowsLeftFull(windows []rateWindow, counted []windowCount, fits bool) []rateWindow {
	var full []rateWindow
	for _, w := range windows {
		i := slices.IndexFunc(counted, func(c windowCount) bool { return c.TimeWindow == w.name })
		if i < 0 || (fits && counted[i].Count >= w.limit) {
			full = append(full, w)
		}
	}
	return full
}

// reserveDecisionRate is reserveRate for a decision on PostgreSQL, whose
// routing decision waits for it: one statement records the decision and,
// if that is new, counts the windows (holdReservation and the counters'
// upsert, the one reading what the other returned); the transaction
// around it is rolled back when a window was full. Three round trips
// where the statements one by one take five. Its commit does not wait for
// the disk (unsyncedCommit).
func (s *RoutingStore) reserveDecisionRate(ctx context.Context, key DecisionKey, providerID string, service jobs.ServiceID, windows []rateWindow, now time.Time) (bool, []rateWindow, error) {
	var q strings.Builder
	args := []any{key.JobID, key.Attempt, providerID, now.UTC().Add(decisionRetention)}
	q.WriteString("WITH decision AS (INSERT INTO routing_decisions (job_id, attempt, provider_id, expires_at) VALUES (?, ?, ?, ?)" +
		" ON CONFLICT (job_id, attempt) DO UPDATE SET provider_id = excluded.provider_id, expires_at = excluded.expires_at" +
		" WHERE routing_decisions.provider_id <> excluded.provider_id RETURNING job_id), " +
		"counted AS (INSERT INTO rate_counters (provider_id, service, time_window, count, expires_at) " +
		"SELECT provider_id, service, time_window, 1, expires_at FROM (VALUES ")
	for i, w := range windows {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, CAST(? AS TIMESTAMPTZ))")
		args = append(args, providerID, service, w.name, w.expires)
	}
	q.WriteString(") AS w (provider_id, service, time_window, expires_at) " +
		"WHERE EXISTS (SELECT 1 FROM decision) AND " + unsyncedCommit)
	args = countBelowLimits(&q, windows, args)
	q.WriteString(") SELECT (SELECT COUNT(*) FROM decision) AS decided, counted.time_window, counted.count " +
		"FROM (SELECT 1) AS one LEFT JOIN counted ON true")

	var rows []struct {
		Decided    int
		TimeWindow *string
		Count      *int
	}
	var counted []windowCount
	held := false
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		rows, counted, held = nil, nil, false
		if err := tx.Raw(q.String(), args...).Scan(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			if r.TimeWindow != nil {
				counted = append(counted, windowCount{TimeWindow: *r.TimeWindow, Count: *r.Count})
			}
		}
		if len(rows) > 0 && rows[0].Decided == 0 {
			held = true
			return errHeld // rolled back: nothing to commit
		}
		if len(counted) < len(windows) {
			return errRollback
		}
		return nil
	})
	if held {
		return true, nil, nil
	}
	if err != nil && !errors.Is(err, errRollback) {
		return false, nil, fmt.Errorf("reserve rate: %w", err)
	}
	fits := err == nil
	return fits, windowsLeftFull(windows, counted, fits), nil
}

// windowCount is a counter reserveRate changed.
type windowCount struct {
	TimeWindow string
	Count      int
}

var errRollback = errors.New("rollback")

// errHeld: the decision holds a reservation with the provider already.
var errHeld = errors.New("reservation held")

// holdReservation records that a decision reserves with a provider, or
// returns errHeld when it did before. On PostgreSQL an attempt of the same
// decision running at the same time waits here for the other to end.
func holdReservation(tx *gorm.DB, key DecisionKey, providerID string, now time.Time) error {
	var changed []string
	err := tx.Raw("INSERT INTO routing_decisions (job_id, attempt, provider_id, expires_at) VALUES (?, ?, ?, ?)"+
		" ON CONFLICT (job_id, attempt) DO UPDATE SET provider_id = excluded.provider_id, expires_at = excluded.expires_at"+
		" WHERE routing_decisions.provider_id <> excluded.provider_id RETURNING job_id",
		key.JobID, key.Attempt, providerID, now.UTC().Add(decisionRetention)).Scan(&changed).Error
	if err != nil {
		return err
	}
	if len(changed) == 0 {
		return errHeld
	}
	return nil
}

// heldReservation is the provider a decision reserved with; "" for none.
func (s *RoutingStore) heldReservation(ctx context.Context, key DecisionKey) (string, error) {
	var held []string
	err := s.db.WithContext(ctx).Model(&routingDecision{}).
		Where("job_id = ? AND attempt = ?", key.JobID, key.Attempt).Pluck("provider_id", &held).Error
	if err != nil || len(held) == 0 {
		return "", err
	}
	return held[0], nil
}

// routingDecision is what a routing decision took (routing_decisions).
type routingDecision struct {
	JobID      string `gorm:"primaryKey"`
	Attempt    int    `gorm:"primaryKey"`
	Turn       *int64
	ProviderID string
	ExpiresAt  time.Time
}

func (routingDecision) TableName() string { return "routing_decisions" }

// ReserveRate is Store.ReserveRate, except that a window this process saw
// full is refused without a statement until it ends: a window's count only
// grows while it lasts.
func (c *Cache) ReserveRate(ctx context.Context, providerID string, service jobs.ServiceID, perMinute, perDay int, now time.Time) (bool, error) {
	windows := limitedWindows(now, perMinute, perDay)
	if len(windows) == 0 {
		return true, nil
	}
	if c.full.any(providerID, service, windows, now) {
		return false, nil
	}
	fits, full, err := c.Store.Routing.reserveRate(ctx, nil, providerID, service, windows, now)
	if err != nil {
		return false, err
	}
	c.full.add(providerID, service, full, now)
	return fits, nil
}

// ReserveRateOnce is Store.ReserveRateOnce, with ReserveRate's memory of
// full windows: a window seen full costs a read of the decision's record
// (which may hold the reservation that filled it) instead of a write.
func (c *Cache) ReserveRateOnce(ctx context.Context, key DecisionKey, providerID string, service jobs.ServiceID, perMinute, perDay int, now time.Time) (bool, error) {
	windows := limitedWindows(now, perMinute, perDay)
	if len(windows) == 0 {
		return true, nil
	}
	if c.full.any(providerID, service, windows, now) {
		held, err := c.Store.Routing.heldReservation(ctx, key)
		return err == nil && held == providerID, err
	}
	fits, full, err := c.Store.Routing.reserveRate(ctx, &key, providerID, service, windows, now)
	if err != nil {
		return false, err
	}
	c.full.add(providerID, service, full, now)
	return fits, nil
}

// fullWindows are the rate windows a process saw full, until they end.
type fullWindows struct {
	mu   sync.Mutex
	ends map[fullWindow]time.Time
}

type fullWindow struct {
	providerID, service, window string
	limit                       int // a window full at one limit may have room at a higher one
}

func (f *fullWindows) any(providerID string, service jobs.ServiceID, windows []rateWindow, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range windows {
		if end, ok := f.ends[fullWindow{providerID, string(service), w.name, w.limit}]; ok && now.Before(end) {
			return true
		}
	}
	return false
}

func (f *fullWindows) add(providerID string, service jobs.ServiceID, windows []rateWindow, now time.Time) {
	if len(windows) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ends == nil {
		f.ends = map[fullWindow]time.Time{}
	}
	maps.DeleteFunc(f.ends, func(_ fullWindow, end time.Time) bool { return !now.Before(end) })
	for _, w := range windows {
		f.ends[fullWindow{providerID, string(service), w.name, w.limit}] = w.end
	}
}

// DeleteExpiredRateCounters deletes the counters of windows that have
// passed and returns how many it deleted. A worker's housekeeping runs it.
func (s *RoutingStore) DeleteExpiredRateCounters(ctx context.Context, now time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Where("expires_at < ?", now.UTC()).Delete(&rateCounter{})
	return res.RowsAffected, res.Error
}

// DeleteExpiredRoutingDecisions deletes the records of decisions old
// enough not to be retried any more and returns how many it deleted. A
// worker's housekeeping runs it.
func (s *RoutingStore) DeleteExpiredRoutingDecisions(ctx context.Context, now time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Where("expires_at < ?", now.UTC()).Delete(&routingDecision{})
	return res.RowsAffected, res.Error
}

func nextTurn(tx *gorm.DB, key string) (int64, error) {
	var counter int64
	err := tx.Raw("INSERT INTO routing_cursors (key, counter) VALUES (?, 1)"+
		" ON CONFLICT (key) DO UPDATE SET counter = routing_cursors.counter + 1 RETURNING counter", key).
		Scan(&counter).Error
	if err != nil {
		return 0, err
	}
	return counter - 1, nil
}

// NextTurnOnce is NextTurn for a decision: the decision's first call
// advances the counter, and every later one gets the same turn back.
func (s *RoutingStore) NextTurnOnce(ctx context.Context, key DecisionKey, cursor string, now time.Time) (int64, error) {
	var turn int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		// Writing the decision's record first takes the write lock
		// (SQLite) or the record's row lock (PostgreSQL): another attempt
		// of the decision waits until this one is done.
		var taken []struct{ Turn *int64 }
		err := tx.Raw("INSERT INTO routing_decisions (job_id, attempt, expires_at) VALUES (?, ?, ?)"+
			" ON CONFLICT (job_id, attempt) DO UPDATE SET expires_at = excluded.expires_at RETURNING turn",
			key.JobID, key.Attempt, now.UTC().Add(decisionRetention)).Scan(&taken).Error
		if err != nil {
			return err
		}
		if len(taken) == 1 && taken[0].Turn != nil {
			turn = *taken[0].Turn
			return nil
		}
		if turn, err = nextTurn(tx, cursor); err != nil {
			return err
		}
		return tx.Model(&routingDecision{}).Where("job_id = ? AND attempt = ?", key.JobID, key.Attempt).Update("turn", turn).Error
	})
	return turn, err
}

type providerLatency struct {
	ProviderID string `gorm:"primaryKey"`
	Service    string `gorm:"primaryKey"`
	EWMAMillis float64
	Samples    int
	UpdatedAt  time.Time
}

func (providerLatency) TableName() string { return "provider_latencies" }

// latencyWeight is how much a new observation moves the moving average.
const latencyWeight = 0.2

// RecordLatency folds one observed call duration into the provider's
// exponentially weighted moving average for the service.
func (s *RoutingStore) RecordLatency(ctx context.Context, providerID string, service jobs.ServiceID, d time.Duration) error {
	var b latencyBatch
	b.fold(d)
	return s.writeLatencies(ctx, providerID, service, b)
}

// latencyBatch is observations to fold into a moving average, in order:
// they turn an average a into a*scale + add, and start one that does not
// exist yet with the first observation and fold the rest into it (first).
type latencyBatch struct {
	n     int
	scale float64
	add   float64
	first float64
}

func (b *latencyBatch) fold(d time.Duration) {
	ms := float64(d) / float64(time.Millisecond)
	b.then(latencyBatch{n: 1, scale: 1 - latencyWeight, add: latencyWeight * ms, first: ms})
}

// then appends the later observations of next.
func (b *latencyBatch) then(next latencyBatch) {
	switch {
	case next.n == 0:
	case b.n == 0:
		*b = next
	default:
		b.n += next.n
		b.scale *= next.scale
		b.add = b.add*next.scale + next.add
		b.first = b.first*next.scale + next.add
	}
}

// writeLatencies folds a batch into the stored average in one upsert.
func (s *RoutingStore) writeLatencies(ctx context.Context, providerID string, service jobs.ServiceID, b latencyBatch) error {
	now := time.Now().UTC()
	return s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "provider_id"}, {Name: "service"}},
		DoUpdates: clause.Assignments(map[string]any{
			"ewma_millis": gorm.Expr("provider_latencies.ewma_millis * ? + ?", b.scale, b.add),
			"samples":     gorm.Expr("provider_latencies.samples + ?", b.n),
			"updated_at":  now,
		}),
	}).Create(&providerLatency{ProviderID: providerID, Service: string(service), EWMAMillis: b.first, Samples: b.n, UpdatedAt: now}).Error
}

// RecordLatency is Store.RecordLatency, except that the observations of a
// provider for a service are written at most once per TTL: the first at
// once, those that follow within the TTL together once it has passed, in
// the background. Flush writes what is left.
func (c *Cache) RecordLatency(ctx context.Context, providerID string, service jobs.ServiceID, d time.Duration) error {
	key := latencyKey{providerID, service}
	c.samples.mu.Lock()
	p := c.samples.pending[key]
	if p == nil {
		if c.samples.pending == nil {
			c.samples.pending = map[latencyKey]*pendingLatency{}
		}
		p = &pendingLatency{}
		c.samples.pending[key] = p
	}
	p.batch.fold(d)
	now := c.now()
	if wait := p.written.Add(c.ttl).Sub(now); wait > 0 {
		if p.timer == nil {
			p.timer = time.AfterFunc(wait, func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = c.writePending(ctx, key) // what fails stays pending
			})
		}
		c.samples.mu.Unlock()
		return nil
	}
	c.samples.mu.Unlock()
	return c.writePending(ctx, key)
}

// Flush writes the latency observations not written yet; a process calls
// it when it stops.
func (c *Cache) Flush(ctx context.Context) error {
	c.samples.mu.Lock()
	keys := slices.Collect(maps.Keys(c.samples.pending))
	c.samples.mu.Unlock()
	var errs []error
	for _, key := range keys {
		errs = append(errs, c.writePending(ctx, key))
	}
	return errors.Join(errs...)
}

// latencySamples are the observations a Cache has not written yet.
type latencySamples struct {
	mu      sync.Mutex
	pending map[latencyKey]*pendingLatency
}

type latencyKey struct {
	providerID string
	service    jobs.ServiceID
}

type pendingLatency struct {
	batch   latencyBatch
	written time.Time   // when the last batch was taken to be written
	timer   *time.Timer // the background write, while one is due
}

// writePending writes key's pending observations; when that fails they stay
// pending, before those observed since.
func (c *Cache) writePending(ctx context.Context, key latencyKey) error {
	c.samples.mu.Lock()
	p := c.samples.pending[key]
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	b := p.batch
	if b.n == 0 {
		c.samples.mu.Unlock()
		return nil
	}
	p.batch, p.written = latencyBatch{}, c.now()
	c.samples.mu.Unlock()

	err := c.Store.Routing.writeLatencies(ctx, key.providerID, key.service, b)
	if err != nil {
		c.samples.mu.Lock()
		b.then(p.batch)
		p.batch = b
		c.samples.mu.Unlock()
	}
	return err
}

// Latencies returns the observed latency, in milliseconds, of every
// provider with observations for a service.
func (s *RoutingStore) Latencies(ctx context.Context, service jobs.ServiceID) (map[string]float64, error) {
	var rows []providerLatency
	if err := s.db.WithContext(ctx).Where("service = ?", service).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(rows))
	for _, r := range rows {
		out[r.ProviderID] = r.EWMAMillis
	}
	return out, nil
}
