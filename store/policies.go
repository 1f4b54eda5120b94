package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
)

// policyRow is the current version of a policy as the policies table keeps
// it. Services and Providers are JSON arrays; a NULL tenant is a
// gateway-wide policy and a NULL application a service-level one.
type policyRow struct {
	ID              string `gorm:"primaryKey"`
	Tenant          *string
	Name            string
	Description     string
	Version         int
	RoutingStrategy string
	Services        string
	Application     *string
	Providers       string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

func (policyRow) TableName() string { return "policies" }

// policyVersionRow is one immutable version of a policy: the whole policy
// at that version as a JSON document. Versions outlive the policy, so jobs
// pinned to a version can still be routed and explained.
type policyVersionRow struct {
	PolicyID  string `gorm:"primaryKey"`
	Version   int    `gorm:"primaryKey"`
	Document  string
	CreatedAt time.Time
}

func (policyVersionRow) TableName() string { return "policy_versions" }

// PolicyFilter selects the policies ListPolicies returns.
type PolicyFilter struct {
	// Tenant selects one tenant's policies; nil selects every tenant's. A
	// pointer to "" selects no tenant's (only gateway-wide ones, with
	// IncludeGlobal).
	Tenant *string
	// IncludeGlobal adds the gateway-wide policies (tenant NULL).
	IncludeGlobal bool
}

// CreatePolicy stores a new policy as version 1: the policies row and its
// first policy_versions row, in one transaction. An empty ID gets a new
// UUIDv7; a zero CreatedAt gets the current time, and UpdatedAt equals
// CreatedAt. A policy id used before (also by a deleted policy, whose
// versions remain) is ErrConflict.
func (s *RoutingStore) CreatePolicy(ctx context.Context, p policy.Policy) (policy.Policy, error) {
	if p.ID == "" {
		p.ID = uuid.Must(uuid.NewV7()).String()
	}
	p.Version = 1
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Now()
	}
	p.CreatedAt = p.CreatedAt.UTC().Truncate(time.Microsecond)
	p.UpdatedAt = p.CreatedAt
	p = normalizePolicy(p)
	row, version, err := policyRecords(p)
	if err != nil {
		return policy.Policy{}, err
	}
	after, err := policyAudit(p)
	if err != nil {
		return policy.Policy{}, err
	}
	err = s.transaction(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		if err := tx.Create(&version).Error; err != nil {
			return err
		}
		return audit(ctx, tx, AuditEntry{Tenant: p.Tenant, Action: "policy.create", Target: "policy/" + p.ID, After: after})
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return policy.Policy{}, fmt.Errorf("policy %s: %w", p.ID, ErrConflict)
	}
	if err != nil {
		return policy.Policy{}, fmt.Errorf("create policy: %w", err)
	}
	return p, nil
}

// UpdatePolicy writes the next version of a policy: in one transaction it
// locks the current row (PostgreSQL; SQLite's single connection serialises
// writers), passes the current version to change, and stores what change
// returns as version + 1, keeping id and created_at and stamping updated_at
// with the current time (never earlier than the previous version's). An
// error from change aborts the update and is returned as is. A missing
// policy is ErrNotFound.
func (s *RoutingStore) UpdatePolicy(ctx context.Context, id string, change func(current policy.Policy) (policy.Policy, error)) (policy.Policy, error) {
	var next policy.Policy
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		q := tx
		if s.dialect == "postgres" {
			q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
		}
		var row policyRow
		if err := q.Where("id = ?", id).Take(&row).Error; err != nil {
			return err
		}
		current, err := row.policy()
		if err != nil {
			return err
		}
		changed, err := change(current)
		if err != nil {
			return err
		}
		changed.ID = current.ID
		changed.Version = current.Version + 1
		changed.CreatedAt = current.CreatedAt
		changed.UpdatedAt = time.Now().UTC().Truncate(time.Microsecond)
		if !changed.UpdatedAt.After(current.UpdatedAt) {
			changed.UpdatedAt = current.UpdatedAt.Add(time.Microsecond)
		}
		next = normalizePolicy(changed)
		newRow, version, err := policyRecords(next)
		if err != nil {
			return err
		}
		res := tx.Model(&policyRow{}).Where("id = ? AND version = ?", id, current.Version).Updates(map[string]any{
			"tenant":           newRow.Tenant,
			"name":             newRow.Name,
			"description":      newRow.Description,
			"version":          newRow.Version,
			"routing_strategy": newRow.RoutingStrategy,
			"services":         newRow.Services,
			"application":      newRow.Application,
			"providers":        newRow.Providers,
			"updated_at":       newRow.UpdatedAt,
		})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("policy %s changed during the update", id)
		}
		if err := tx.Create(&version).Error; err != nil {
			return err
		}
		before, err := policyAudit(current)
		if err != nil {
			return err
		}
		after, err := policyAudit(next)
		if err != nil {
			return err
		}
		if current.Tenant != next.Tenant {
			// Moved by a super-admin: each tenant sees the policy leave or
			// arrive, and the other's settings of it stay the other's.
			left := AuditEntry{Tenant: current.Tenant, Action: "policy.update", Target: "policy/" + id,
				Before: map[string]any{"tenant": current.Tenant}, After: map[string]any{"tenant": next.Tenant}}
			if err := audit(ctx, tx, left); err != nil {
				return err
			}
			before = map[string]any{"tenant": current.Tenant}
		}
		return audit(ctx, tx, AuditEntry{Tenant: next.Tenant, Action: "policy.update", Target: "policy/" + id, Before: before, After: after})
	})
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return policy.Policy{}, ErrNotFound
	}
	if err != nil {
		return policy.Policy{}, err
	}
	return next, nil
}

// GetPolicy reads the current version of a policy; ErrNotFound when it does
// not exist (or was deleted).
func (s *RoutingStore) GetPolicy(ctx context.Context, id string) (policy.Policy, error) {
	row, err := take[policyRow](s.db.WithContext(ctx).Where("id = ?", id))
	if err != nil {
		return policy.Policy{}, err
	}
	return row.policy()
}

// GetPolicyVersion reads one version of a policy, also after the policy
// was deleted (jobs pinned to it keep routing with it); ErrNotFound when
// there is no such version.
func (s *RoutingStore) GetPolicyVersion(ctx context.Context, id string, version int) (policy.Policy, error) {
	row, err := take[policyVersionRow](s.db.WithContext(ctx).Where("policy_id = ? AND version = ?", id, version))
	if err != nil {
		return policy.Policy{}, err
	}
	return row.policy()
}

// ListPolicyVersions returns every version of a policy, oldest first, also
// after the policy was deleted; ErrNotFound when it never existed.
func (s *RoutingStore) ListPolicyVersions(ctx context.Context, id string) ([]policy.Policy, error) {
	var rows []policyVersionRow
	if err := s.db.WithContext(ctx).Where("policy_id = ?", id).Order("version").Find(&rows).Error; err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, ErrNotFound
	}
	out := make([]policy.Policy, 0, len(rows))
	for _, row := range rows {
		p, err := row.policy()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ListPolicies returns a page of the current versions of the policies f
// selects, most recently updated first, and how many there are in all.
func (s *RoutingStore) ListPolicies(ctx context.Context, f PolicyFilter, offset, limit int) ([]policy.Policy, int64, error) {
	scoped := func() *gorm.DB {
		q := s.db.WithContext(ctx).Model(&policyRow{})
		switch {
		case f.Tenant == nil && f.IncludeGlobal:
		case f.Tenant == nil:
			q = q.Where("tenant IS NOT NULL")
		case f.IncludeGlobal:
			q = q.Where("tenant = ? OR tenant IS NULL", *f.Tenant)
		default:
			q = q.Where("tenant = ?", *f.Tenant)
		}
		return q
	}
	var total int64
	if err := scoped().Count(&total).Error; err != nil {
		return nil, 0, err
	}
	var rows []policyRow
	if err := scoped().Order("updated_at DESC, id DESC").Offset(offset).Limit(limit).Find(&rows).Error; err != nil {
		return nil, 0, err
	}
	out, err := policiesOf(rows)
	return out, total, err
}

// DeletePolicy removes the current version of a policy; its versions stay
// readable through GetPolicyVersion. ErrNotFound when it does not exist.
func (s *RoutingStore) DeletePolicy(ctx context.Context, id string) error {
	return s.transaction(ctx, func(tx *gorm.DB) error {
		row, err := take[policyRow](s.lockForUpdate(tx).Where("id = ?", id))
		if err != nil {
			return err
		}
		p, err := row.policy()
		if err != nil {
			return err
		}
		before, err := policyAudit(p)
		if err != nil {
			return err
		}
		if err := tx.Where("id = ?", id).Delete(&policyRow{}).Error; err != nil {
			return err
		}
		return audit(ctx, tx, AuditEntry{Tenant: p.Tenant, Action: "policy.delete", Target: "policy/" + id, Before: before})
	})
}

// policyAudit is what the audit log shows of p (not its timestamps).
func policyAudit(p policy.Policy) (map[string]any, error) {
	return members(p, "id", "created_at", "updated_at")
}

// RoutingPolicies returns the candidates for resolving a job's policy
// (policy.Resolve): the tenant's policies and the gateway-wide ones that
// cover the service (services [] = every service), most recently updated
// first. It is one query on the (tenant, application, updated_at) index;
// which services a policy covers is a JSON column, so that filter runs
// here rather than in SQL, the same on both databases (a tenant has few
// policies). An empty tenant gets only the gateway-wide ones.
func (s *RoutingStore) RoutingPolicies(ctx context.Context, tenant string, service jobs.ServiceID) ([]policy.Policy, error) {
	all, err := s.tenantPolicies(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return covering(all, service), nil
}

// tenantPolicies is RoutingPolicies for every service.
func (s *RoutingStore) tenantPolicies(ctx context.Context, tenant string) ([]policy.Policy, error) {
	q := s.db.WithContext(ctx)
	if tenant == "" {
		q = q.Where("tenant IS NULL")
	} else {
		q = q.Where("tenant = ? OR tenant IS NULL", tenant)
	}
	var rows []policyRow
	if err := q.Order("updated_at DESC, id DESC").Find(&rows).Error; err != nil {
		return nil, err
	}
	return policiesOf(rows)
}

// covering returns, in a new slice, the policies that cover service.
func covering(all []policy.Policy, service jobs.ServiceID) []policy.Policy {
	out := make([]policy.Policy, 0, len(all))
	for _, p := range all {
		if p.Covers(service) {
			out = append(out, p)
		}
	}
	return out
}

// normalizePolicy gives a policy the shape it reads back with: UTC
// timestamps at the precision both databases keep, empty (not nil) lists.
func normalizePolicy(p policy.Policy) policy.Policy {
	p.CreatedAt = p.CreatedAt.UTC().Truncate(time.Microsecond)
	p.UpdatedAt = p.UpdatedAt.UTC().Truncate(time.Microsecond)
	if p.Providers == nil {
		p.Providers = []policy.Entry{}
	}
	if len(p.Services) == 0 {
		p.Services = nil
	}
	return p
}

// policyRecords encodes a policy as its current row and its version row.
func policyRecords(p policy.Policy) (policyRow, policyVersionRow, error) {
	services := p.Services
	if services == nil {
		services = []jobs.ServiceID{}
	}
	servicesJSON, err := json.Marshal(services)
	if err != nil {
		return policyRow{}, policyVersionRow{}, err
	}
	providersJSON, err := json.Marshal(p.Providers)
	if err != nil {
		return policyRow{}, policyVersionRow{}, err
	}
	document, err := json.Marshal(p)
	if err != nil {
		return policyRow{}, policyVersionRow{}, err
	}
	row := policyRow{
		ID:              p.ID,
		Name:            p.Name,
		Description:     p.Description,
		Version:         p.Version,
		RoutingStrategy: string(p.Strategy),
		Services:        string(servicesJSON),
		Providers:       string(providersJSON),
		CreatedAt:       p.CreatedAt,
		UpdatedAt:       p.UpdatedAt,
	}
	if p.Tenant != "" {
		tenant := p.Tenant
		row.Tenant = &tenant
	}
	if p.Application != "" {
		application := p.Application
		row.Application = &application
	}
	return row, policyVersionRow{PolicyID: p.ID, Version: p.Version, Document: string(document), CreatedAt: p.UpdatedAt}, nil
}

func (r *policyRow) policy() (policy.Policy, error) {
	p := policy.Policy{
		ID:          r.ID,
		Name:        r.Name,
		Description: r.Description,
		Version:     r.Version,
		Strategy:    policy.Strategy(r.RoutingStrategy),
		CreatedAt:   r.CreatedAt,
		UpdatedAt:   r.UpdatedAt,
	}
	if r.Tenant != nil {
		p.Tenant = *r.Tenant
	}
	if r.Application != nil {
		p.Application = *r.Application
	}
	if r.Services != "" {
		if err := json.Unmarshal([]byte(r.Services), &p.Services); err != nil {
			return policy.Policy{}, fmt.Errorf("policy %s: services: %w", r.ID, err)
		}
	}
	if r.Providers != "" {
		if err := json.Unmarshal([]byte(r.Providers), &p.Providers); err != nil {
			return policy.Policy{}, fmt.Errorf("policy %s: providers: %w", r.ID, err)
		}
	}
	return normalizePolicy(p), nil
}

func (r *policyVersionRow) policy() (policy.Policy, error) {
	var p policy.Policy
	if err := json.Unmarshal([]byte(r.Document), &p); err != nil {
		return policy.Policy{}, fmt.Errorf("policy %s version %d: %w", r.PolicyID, r.Version, err)
	}
	return normalizePolicy(p), nil
}

func policiesOf(rows []policyRow) ([]policy.Policy, error) {
	out := make([]policy.Policy, 0, len(rows))
	for i := range rows {
		p, err := rows[i].policy()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
