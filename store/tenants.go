package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ErrConflict is returned when a record with the same key exists.
var ErrConflict = errors.New("conflict")

// Access is a tenant's setting for one service or provider.
type Access struct {
	Enabled bool `json:"enabled"`
}

// Tenant is a tenant's access record. Services and Providers hold only the
// entries set for the tenant; an absent key inherits the platform default
// (enabled).
type Tenant struct {
	ID              string
	DefaultPolicyID *string
	Services        map[string]Access
	Providers       map[string]Access
	Retention       Retention
	// FairnessWeight is the tenant's share of the workers when tenants'
	// jobs queue (docs/operations.md, Fairness between tenants); nil: 1.
	FairnessWeight *float64
	// Budgets limit what the tenant's jobs may spend (docs/api.md,
	// Budgets); NotificationURL receives their budget.threshold events.
	Budgets         []Budget
	NotificationURL string
	// MaxInFlight bounds the tenant's jobs not yet finished (docs/api.md,
	// Tenants); nil: no bound.
	MaxInFlight *int
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// DefaultFairnessWeight is the weight of a tenant that sets none.
const DefaultFairnessWeight = 1.0

// Fairness is t's fairness weight; a nil tenant (no record) has the
// default.
func (t *Tenant) Fairness() float64 {
	if t == nil || t.FairnessWeight == nil {
		return DefaultFairnessWeight
	}
	return *t.FairnessWeight
}

// Retention is how long a tenant's finished jobs are kept (docs/api.md,
// Tenants); nil takes the deployment default, 0 keeps forever. The store
// keeps whole seconds.
type Retention struct {
	// Results is how long a job's result, result files and media are kept
	// after the job finished.
	Results *time.Duration
	// Jobs is how long a job is kept at all after it finished; then it is
	// deleted.
	Jobs *time.Duration
}

// RetentionDefaults are the deployment's retention (--result-retention,
// --job-retention), for tenants that set none; 0 keeps forever.
type RetentionDefaults struct {
	Results time.Duration
	Jobs    time.Duration
}

// EffectiveRetention is how long t's results and jobs are kept: its own
// settings, else d; 0 keeps forever. Results go with their job, so results
// is at most a jobs above 0. A nil tenant (no record) has d.
func (t *Tenant) EffectiveRetention(d RetentionDefaults) (results, jobs time.Duration) {
	results, jobs = d.Results, d.Jobs
	if t != nil && t.Retention.Results != nil {
		results = *t.Retention.Results
	}
	if t != nil && t.Retention.Jobs != nil {
		jobs = *t.Retention.Jobs
	}
	results, jobs = max(results, 0), max(jobs, 0)
	if jobs > 0 && (results == 0 || results > jobs) {
		results = jobs
	}
	return results, jobs
}

// ServiceEnabled reports whether the tenant may use a service; a nil tenant
// (no record) may use everything.
func (t *Tenant) ServiceEnabled(id string) bool { return t == nil || accessEnabled(t.Services, id) }

// ProviderEnabled reports whether the tenant may use a provider; a nil
// tenant (no record) may use everything.
func (t *Tenant) ProviderEnabled(id string) bool { return t == nil || accessEnabled(t.Providers, id) }

// audit is what the audit log shows of t: its settings, as the API
// names them (retention in seconds).
func (t *Tenant) audit() map[string]any {
	return map[string]any{"default_policy_id": t.DefaultPolicyID, "services": t.Services, "providers": t.Providers,
		"retention":       map[string]*int64{"results_seconds": secondsOf(t.Retention.Results), "jobs_seconds": secondsOf(t.Retention.Jobs)},
		"fairness_weight": t.FairnessWeight, "budgets": t.Budgets, "notification_url": t.NotificationURL, "max_in_flight": t.MaxInFlight}
}

// clone is a deep copy of t.
func (t *Tenant) clone() *Tenant {
	c := *t
	if t.DefaultPolicyID != nil {
		id := *t.DefaultPolicyID
		c.DefaultPolicyID = &id
	}
	c.Services = maps.Clone(t.Services)
	c.Providers = maps.Clone(t.Providers)
	c.Retention = Retention{Results: clonePointer(t.Retention.Results), Jobs: clonePointer(t.Retention.Jobs)}
	c.FairnessWeight = clonePointer(t.FairnessWeight)
	c.MaxInFlight = clonePointer(t.MaxInFlight)
	c.Budgets = cloneBudgets(t.Budgets)
	return &c
}

func clonePointer[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func accessEnabled(entries map[string]Access, id string) bool {
	a, ok := entries[id]
	return !ok || a.Enabled
}

// tenantRow is a tenant as the tenants table stores it.
type tenantRow struct {
	ID              string `gorm:"primaryKey"`
	DefaultPolicyID *string
	Services        string // JSON {service: {enabled}}
	Providers       string // JSON {provider: {enabled}}
	// Retention in whole seconds; NULL takes the default.
	RetentionResultsSeconds *int64
	RetentionJobsSeconds    *int64
	FairnessWeight          *float64 // NULL: DefaultFairnessWeight
	Budgets                 string   // JSON [Budget]
	NotificationURL         string
	MaxInFlight             *int // NULL: no bound
	CreatedAt               time.Time
	UpdatedAt               time.Time
}

func (tenantRow) TableName() string { return "tenants" }

func (r *tenantRow) tenant() (*Tenant, error) {
	t := &Tenant{ID: r.ID, DefaultPolicyID: r.DefaultPolicyID, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		Services: map[string]Access{}, Providers: map[string]Access{},
		Retention:      Retention{Results: durationOfSeconds(r.RetentionResultsSeconds), Jobs: durationOfSeconds(r.RetentionJobsSeconds)},
		FairnessWeight: r.FairnessWeight, NotificationURL: r.NotificationURL, MaxInFlight: r.MaxInFlight}
	if r.Budgets != "" {
		if err := json.Unmarshal([]byte(r.Budgets), &t.Budgets); err != nil {
			return nil, fmt.Errorf("tenant %s: budgets: %w", r.ID, err)
		}
	}
	if err := unmarshalDocument(r.Services, &t.Services); err != nil {
		return nil, fmt.Errorf("tenant %s: services: %w", r.ID, err)
	}
	if err := unmarshalDocument(r.Providers, &t.Providers); err != nil {
		return nil, fmt.Errorf("tenant %s: providers: %w", r.ID, err)
	}
	return t, nil
}

func tenantRowOf(t *Tenant) (*tenantRow, error) {
	services, err := marshalDocument(t.Services)
	if err != nil {
		return nil, err
	}
	providers, err := marshalDocument(t.Providers)
	if err != nil {
		return nil, err
	}
	budgets := []byte("[]")
	if len(t.Budgets) > 0 {
		if budgets, err = json.Marshal(t.Budgets); err != nil {
			return nil, err
		}
	}
	return &tenantRow{ID: t.ID, DefaultPolicyID: t.DefaultPolicyID, Services: services, Providers: providers,
		RetentionResultsSeconds: secondsOf(t.Retention.Results), RetentionJobsSeconds: secondsOf(t.Retention.Jobs),
		FairnessWeight: t.FairnessWeight, Budgets: string(budgets), NotificationURL: t.NotificationURL, MaxInFlight: t.MaxInFlight,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}, nil
}

// secondsOf is a retention column's value: whole seconds, or NULL.
func secondsOf(d *time.Duration) *int64 {
	if d == nil {
		return nil
	}
	s := int64(*d / time.Second)
	return &s
}

func durationOfSeconds(s *int64) *time.Duration {
	if s == nil {
		return nil
	}
	d := time.Duration(*s) * time.Second
	return &d
}

// CreateTenant records a new tenant; ErrConflict when its id is taken. Zero
// CreatedAt and UpdatedAt are set to now.
func (s *RoutingStore) CreateTenant(ctx context.Context, t *Tenant) error {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = microsNow()
	}
	t.CreatedAt = t.CreatedAt.UTC().Truncate(time.Microsecond)
	if t.UpdatedAt.IsZero() {
		t.UpdatedAt = t.CreatedAt
	}
	t.UpdatedAt = t.UpdatedAt.UTC().Truncate(time.Microsecond)
	if t.Services == nil {
		t.Services = map[string]Access{}
	}
	if t.Providers == nil {
		t.Providers = map[string]Access{}
	}
	row, err := tenantRowOf(t)
	if err != nil {
		return err
	}
	err = s.transaction(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(row).Error; err != nil {
			return err
		}
		return audit(ctx, tx, AuditEntry{Tenant: t.ID, Action: "tenant.create", Target: "tenant/" + t.ID, After: t.audit()})
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return fmt.Errorf("tenant %s: %w", t.ID, ErrConflict)
	}
	return err
}

// GetTenant reads one tenant; ErrNotFound when there is no record.
func (s *RoutingStore) GetTenant(ctx context.Context, id string) (*Tenant, error) {
	row, err := take[tenantRow](s.db.WithContext(ctx).Where("id = ?", id))
	if err != nil {
		return nil, err
	}
	return row.tenant()
}

// UpdateTenant reads a tenant, lets update change it and writes it back,
// all in one transaction that holds the row (SELECT ... FOR UPDATE on
// PostgreSQL; SQLite's single connection serialises writers), so
// concurrent updates never lose each other's changes. An error from update
// aborts the write and is returned as is; ErrNotFound when there is no
// record. UpdatedAt is set to now.
func (s *RoutingStore) UpdateTenant(ctx context.Context, id string, update func(*Tenant) error) (*Tenant, error) {
	var out *Tenant
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		var row tenantRow
		err := s.lockForUpdate(tx).Where("id = ?", id).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		t, err := row.tenant()
		if err != nil {
			return err
		}
		before := t.audit()
		if err := update(t); err != nil {
			return err
		}
		t.ID = id
		t.UpdatedAt = microsNow()
		next, err := tenantRowOf(t)
		if err != nil {
			return err
		}
		if err := tx.Model(&tenantRow{}).Where("id = ?", id).Updates(map[string]any{
			"default_policy_id":         next.DefaultPolicyID,
			"services":                  next.Services,
			"providers":                 next.Providers,
			"retention_results_seconds": next.RetentionResultsSeconds,
			"retention_jobs_seconds":    next.RetentionJobsSeconds,
			"fairness_weight":           next.FairnessWeight,
			"budgets":                   next.Budgets,
			"notification_url":          next.NotificationURL,
			"max_in_flight":             next.MaxInFlight,
			"updated_at":                next.UpdatedAt,
		}).Error; err != nil {
			return err
		}
		out = t
		return audit(ctx, tx, AuditEntry{Tenant: id, Action: "tenant.update", Target: "tenant/" + id, Before: before, After: t.audit()})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListTenants returns one page of tenants ordered by id, and how many there
// are in all.
func (s *RoutingStore) ListTenants(ctx context.Context, offset, limit int) ([]Tenant, int64, error) {
	db := s.db.WithContext(ctx)
	var total int64
	if err := db.Model(&tenantRow{}).Count(&total).Error; err != nil {
		return nil, 0, err
	}
	var rows []tenantRow
	if err := db.Order("id").Offset(offset).Limit(limit).Find(&rows).Error; err != nil {
		return nil, 0, err
	}
	out := make([]Tenant, 0, len(rows))
	for i := range rows {
		t, err := rows[i].tenant()
		if err != nil {
			return nil, 0, err
		}
		out = append(out, *t)
	}
	return out, total, nil
}

// lockForUpdate locks the rows a transaction reads on PostgreSQL. SQLite has no
// row locks (and no FOR UPDATE); its single connection already serialises
// transactions.
func (s *conn) lockForUpdate(tx *gorm.DB) *gorm.DB {
	if s.dialect == "postgres" {
		return tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	return tx
}

// microsNow is the time records are stamped with, at the precision both
// databases keep (PostgreSQL stores microseconds).
func microsNow() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// marshalDocument encodes a JSON document column; nil maps are stored as {}.
func marshalDocument[M ~map[string]V, V any](m M) (string, error) {
	if m == nil {
		return "{}", nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return string(raw), nil
}

// unmarshalDocument decodes a JSON document column; an empty column is {}.
func unmarshalDocument[M ~map[string]V, V any](raw string, m *M) error {
	if raw == "" {
		return nil
	}
	return json.Unmarshal([]byte(raw), m)
}
