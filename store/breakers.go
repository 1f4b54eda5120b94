package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// Circuit breakers (docs/providers.md, Circuit breakers): one row per
// provider and service, changed under its row lock by the pure functions
// of package breaker, so every worker shares one state machine.

// BreakerKey names a provider's breaker for a service.
type BreakerKey struct {
	ProviderID string
	Service    jobs.ServiceID
}

type providerBreaker struct {
	ProviderID          string `gorm:"primaryKey"`
	Service             string `gorm:"primaryKey"`
	State               string
	Since               *time.Time
	OpenUntil           *time.Time
	Opens               int
	ConsecutiveFailures int
	Probes              int
	ProbeSuccesses      int
	ProbesAt            *time.Time
	Window              string
	Forced              string
	ForcedBy            string
	ForcedAt            *time.Time
	UpdatedAt           time.Time
}

func (providerBreaker) TableName() string { return "provider_breakers" }

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC().Truncate(time.Microsecond)
	return &t
}

func (r *providerBreaker) breaker() (breaker.Breaker, error) {
	b := breaker.Breaker{
		State: breaker.State(r.State), Since: timeOf(r.Since), OpenUntil: timeOf(r.OpenUntil),
		Opens: r.Opens, ConsecutiveFailures: r.ConsecutiveFailures,
		Probes: r.Probes, ProbeSuccesses: r.ProbeSuccesses, ProbesAt: timeOf(r.ProbesAt),
		Forced: breaker.State(r.Forced), ForcedBy: r.ForcedBy, ForcedAt: timeOf(r.ForcedAt),
	}
	if r.Window != "" {
		if err := json.Unmarshal([]byte(r.Window), &b.Window); err != nil {
			return breaker.Breaker{}, fmt.Errorf("breaker %s/%s: window: %w", r.ProviderID, r.Service, err)
		}
	}
	return b, nil
}

func (r *providerBreaker) set(b breaker.Breaker) error {
	window, err := json.Marshal(b.Window)
	if err != nil {
		return err
	}
	state := b.State
	if state == "" {
		state = breaker.Closed
	}
	r.State, r.Since, r.OpenUntil = string(state), timePtr(b.Since), timePtr(b.OpenUntil)
	r.Opens, r.ConsecutiveFailures = b.Opens, b.ConsecutiveFailures
	r.Probes, r.ProbeSuccesses, r.ProbesAt = b.Probes, b.ProbeSuccesses, timePtr(b.ProbesAt)
	r.Window = string(window)
	r.Forced, r.ForcedBy, r.ForcedAt = string(b.Forced), b.ForcedBy, timePtr(b.ForcedAt)
	r.UpdatedAt = microsNow()
	return nil
}

// Breakers reads every provider's breakers; a provider and service
// without a row has a closed breaker that saw no call.
func (s *BreakerStore) Breakers(ctx context.Context) (map[BreakerKey]breaker.Breaker, error) {
	var rows []providerBreaker
	if err := s.db.WithContext(ctx).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[BreakerKey]breaker.Breaker, len(rows))
	for i := range rows {
		b, err := rows[i].breaker()
		if err != nil {
			return nil, err
		}
		out[BreakerKey{rows[i].ProviderID, jobs.ServiceID(rows[i].Service)}] = b
	}
	return out, nil
}

// RecordBreakerOutcomes counts calls to a provider for a service, in
// order, in one transaction, and returns its breaker afterwards with the
// transitions they made.
func (s *BreakerStore) RecordBreakerOutcomes(ctx context.Context, key BreakerKey, cfg breaker.Config, calls []breaker.Call) (breaker.Breaker, []breaker.Transition, error) {
	var ts []breaker.Transition
	b, err := s.changeBreaker(ctx, key, false, func(b breaker.Breaker) breaker.Breaker {
		ts = ts[:0] // a retried transaction starts over
		for _, c := range calls {
			var t breaker.Transition
			b, t = b.Record(cfg, c.Outcome, c.At)
			if t.Changed() {
				ts = append(ts, t)
			}
		}
		return b
	})
	return b, ts, err
}

// TakeBreakerProbe lets one call through a provider's breaker for a
// service if it may (breaker.Breaker.TakeProbe).
func (s *BreakerStore) TakeBreakerProbe(ctx context.Context, key BreakerKey, cfg breaker.Config, now time.Time) (bool, breaker.Transition, error) {
	var ok bool
	var t breaker.Transition
	_, err := s.changeBreaker(ctx, key, false, func(b breaker.Breaker) breaker.Breaker {
		b, ok, t = b.TakeProbe(cfg, now)
		return b
	})
	return ok, t, err
}

// ForceBreaker records an operator's forced state of a breaker (Open,
// Closed, or "" for automatic), by whom at now.
func (s *BreakerStore) ForceBreaker(ctx context.Context, key BreakerKey, state breaker.State, by string, now time.Time) (breaker.Breaker, error) {
	return s.changeBreaker(ctx, key, true, func(b breaker.Breaker) breaker.Breaker {
		return b.Force(state, by, now)
	})
}

// breakerAudit is the audit event of an operator's change of a breaker:
// its forced state ("auto" when none) and the state it is in.
func breakerAudit(key BreakerKey, before, after breaker.Breaker) AuditEntry {
	view := func(b breaker.Breaker) map[string]any {
		forced := string(b.Forced)
		if forced == "" {
			forced = "auto"
		}
		return map[string]any{"forced": forced, "state": string(b.State)}
	}
	return AuditEntry{Action: "breaker.force", Target: "breaker/" + key.ProviderID + "/" + string(key.Service), Before: view(before), After: view(after)}
}

// changeBreaker applies change to a breaker under its row lock, in one
// transaction: concurrent workers never lose each other's outcomes. An
// operator's change is audited (the workers' outcomes are not).
func (s *BreakerStore) changeBreaker(ctx context.Context, key BreakerKey, audited bool, change func(breaker.Breaker) breaker.Breaker) (breaker.Breaker, error) {
	var out breaker.Breaker
	err := s.write(ctx, func(tx *gorm.DB) error {
		seed := providerBreaker{ProviderID: key.ProviderID, Service: string(key.Service), State: string(breaker.Closed), UpdatedAt: microsNow()}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&seed).Error; err != nil {
			return err
		}
		var row providerBreaker
		if err := s.lockForUpdate(tx).Where("provider_id = ? AND service = ?", key.ProviderID, key.Service).Take(&row).Error; err != nil {
			return err
		}
		b, err := row.breaker()
		if err != nil {
			return err
		}
		before := b
		b = change(b)
		if err := row.set(b); err != nil {
			return err
		}
		if err := tx.Select("*").Save(&row).Error; err != nil {
			return err
		}
		out = b
		if !audited {
			return nil
		}
		return audit(ctx, tx, breakerAudit(key, before, b))
	})
	if err != nil {
		return breaker.Breaker{}, fmt.Errorf("breaker %s/%s: %w", key.ProviderID, key.Service, err)
	}
	return out, nil
}

// Breakers is Store.Breakers, at most TTL old.
func (c *Cache) Breakers(ctx context.Context) (map[BreakerKey]breaker.Breaker, error) {
	m, err := c.breakers.Get(ctx, struct{}{}, c.Store.Breakers.Breakers)
	return maps.Clone(m), err
}

// RecordBreakerOutcomes is Store.RecordBreakerOutcomes; after a
// transition the cache forgets the breakers.
func (c *Cache) RecordBreakerOutcomes(ctx context.Context, key BreakerKey, cfg breaker.Config, calls []breaker.Call) (breaker.Breaker, []breaker.Transition, error) {
	b, ts, err := c.Store.Breakers.RecordBreakerOutcomes(ctx, key, cfg, calls)
	if len(ts) > 0 {
		c.breakers.Clear()
	}
	return b, ts, err
}

// TakeBreakerProbe is Store.TakeBreakerProbe; the cache forgets the
// breakers.
func (c *Cache) TakeBreakerProbe(ctx context.Context, key BreakerKey, cfg breaker.Config, now time.Time) (bool, breaker.Transition, error) {
	defer c.breakers.Clear()
	return c.Store.Breakers.TakeBreakerProbe(ctx, key, cfg, now)
}

// ForceBreaker is Store.ForceBreaker; the cache forgets the breakers.
func (c *Cache) ForceBreaker(ctx context.Context, key BreakerKey, state breaker.State, by string, now time.Time) (breaker.Breaker, error) {
	defer c.breakers.Clear()
	return c.Store.Breakers.ForceBreaker(ctx, key, state, by, now)
}
