package store

import (
	"context"
	"fmt"
	"time"

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

func minuteWindow(now time.Time) (string, time.Time) {
	start := now.UTC().Truncate(time.Minute)
	return "m:" + start.Format("200601021504"), start.Add(2 * time.Minute)
}

func dayWindow(now time.Time) (string, time.Time) {
	day := now.UTC().Truncate(24 * time.Hour)
	return "d:" + day.Format("20060102"), day.Add(48 * time.Hour)
}

// RateCounts reads the current minute and day counts of providers for a
// service.
func (s *Store) RateCounts(ctx context.Context, service string, providerIDs []string, now time.Time) (map[string]RateCount, error) {
	minute, _ := minuteWindow(now)
	day, _ := dayWindow(now)
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
// reports whether the request fits. Concurrent callers never overshoot: the
// increment and the check are one statement.
func (s *Store) ReserveRate(ctx context.Context, providerID, service string, perMinute, perDay int, now time.Time) (bool, error) {
	fits := true
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, w := range []struct {
			limit  int
			window func(time.Time) (string, time.Time)
		}{{perMinute, minuteWindow}, {perDay, dayWindow}} {
			if w.limit <= 0 {
				continue
			}
			window, expires := w.window(now)
			res := tx.Clauses(clause.OnConflict{
				Columns:   []clause.Column{{Name: "provider_id"}, {Name: "service"}, {Name: "time_window"}},
				DoUpdates: clause.Assignments(map[string]any{"count": gorm.Expr("rate_counters.count + 1")}),
				Where:     clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "rate_counters.count < ?", Vars: []any{w.limit}}}},
			}).Create(&rateCounter{ProviderID: providerID, Service: service, TimeWindow: window, Count: 1, ExpiresAt: expires})
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 0 {
				fits = false
				return errRollback
			}
		}
		return nil
	})
	if err == errRollback {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reserve rate: %w", err)
	}
	return fits, nil
}

var errRollback = fmt.Errorf("rollback")

// PruneRateCounters deletes counters of windows that have passed.
func (s *Store) PruneRateCounters(ctx context.Context, now time.Time) error {
	return s.db.WithContext(ctx).Where("expires_at < ?", now.UTC()).Delete(&rateCounter{}).Error
}

type routingCursor struct {
	Key     string `gorm:"primaryKey"`
	Counter int64
}

func (routingCursor) TableName() string { return "routing_cursors" }

// NextTurn advances a shared round-robin counter and returns the turn this
// caller got (0 for the first).
func (s *Store) NextTurn(ctx context.Context, key string) (int64, error) {
	var turn int64
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "key"}},
			DoUpdates: clause.Assignments(map[string]any{"counter": gorm.Expr("routing_cursors.counter + 1")}),
		}).Create(&routingCursor{Key: key, Counter: 1})
		if res.Error != nil {
			return res.Error
		}
		var c routingCursor
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("key = ?", key).Take(&c).Error; err != nil {
			return err
		}
		turn = c.Counter - 1
		return nil
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
func (s *Store) RecordLatency(ctx context.Context, providerID, service string, d time.Duration) error {
	ms := float64(d) / float64(time.Millisecond)
	return s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "provider_id"}, {Name: "service"}},
		DoUpdates: clause.Assignments(map[string]any{
			"ewma_millis": gorm.Expr("provider_latencies.ewma_millis * ? + ?", 1-latencyWeight, ms*latencyWeight),
			"samples":     gorm.Expr("provider_latencies.samples + 1"),
			"updated_at":  time.Now().UTC(),
		}),
	}).Create(&providerLatency{ProviderID: providerID, Service: service, EWMAMillis: ms, Samples: 1, UpdatedAt: time.Now().UTC()}).Error
}

// Latencies returns the observed latency, in milliseconds, of every
// provider with observations for a service.
func (s *Store) Latencies(ctx context.Context, service string) (map[string]float64, error) {
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
