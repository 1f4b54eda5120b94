package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ai-job-gateway/gateway/policy"
)

// ProviderStatus is an administrator's override of a provider's catalog
// statuses.
type ProviderStatus struct {
	// Status is the provider-level status; "" keeps the catalog's.
	Status string
	// Services maps a service id to the status of the provider's
	// capability for it; absent keys keep the catalog's.
	Services map[string]string
}

type serviceStatusRow struct {
	ServiceID string `gorm:"primaryKey"`
	Status    string
	UpdatedAt time.Time
}

func (serviceStatusRow) TableName() string { return "service_statuses" }

type providerStatusRow struct {
	ProviderID string `gorm:"primaryKey"`
	Status     string
	Services   string // JSON {service: status}
	UpdatedAt  time.Time
}

func (providerStatusRow) TableName() string { return "provider_statuses" }

func (r *providerStatusRow) providerStatus() (ProviderStatus, error) {
	ps := ProviderStatus{Status: r.Status, Services: map[string]string{}}
	if err := unmarshalDocument(r.Services, &ps.Services); err != nil {
		return ProviderStatus{}, fmt.Errorf("provider status %s: services: %w", r.ProviderID, err)
	}
	return ps, nil
}

// ServiceStatuses maps service ids to the status an administrator set;
// services without an entry are active.
func (s *RoutingStore) ServiceStatuses(ctx context.Context) (map[string]string, error) {
	var rows []serviceStatusRow
	if err := s.db.WithContext(ctx).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.ServiceID] = r.Status
	}
	return out, nil
}

// SetServiceStatus records a service's status.
func (s *RoutingStore) SetServiceStatus(ctx context.Context, id, status string) error {
	return s.transaction(ctx, func(tx *gorm.DB) error {
		before := map[string]any{}
		if old, err := take[serviceStatusRow](s.lockForUpdate(tx).Where("service_id = ?", id)); err == nil {
			before["status"] = old.Status
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		row := serviceStatusRow{ServiceID: id, Status: status, UpdatedAt: microsNow()}
		if err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "service_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"status", "updated_at"}),
		}).Create(&row).Error; err != nil {
			return err
		}
		return audit(ctx, tx, AuditEntry{Action: "service.update", Target: "service/" + id, Before: before, After: map[string]any{"status": status}})
	})
}

// ProviderStatuses maps provider ids to their overrides; providers without
// an entry keep their catalog statuses.
func (s *RoutingStore) ProviderStatuses(ctx context.Context) (map[string]ProviderStatus, error) {
	var rows []providerStatusRow
	if err := s.db.WithContext(ctx).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[string]ProviderStatus, len(rows))
	for i := range rows {
		ps, err := rows[i].providerStatus()
		if err != nil {
			return nil, err
		}
		out[rows[i].ProviderID] = ps
	}
	return out, nil
}

// SetProviderStatus merges a change into a provider's override and returns
// the result: a non-nil status replaces the provider-level status ("" goes
// back to the catalog's); each entry of services replaces that service's
// status ("" goes back to the catalog's); other entries are kept. The
// read-modify-write runs in one transaction holding the row, so concurrent
// changes to different services never lose each other.
func (s *RoutingStore) SetProviderStatus(ctx context.Context, id string, status *string, services map[string]string) (ProviderStatus, error) {
	var out ProviderStatus
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		// Make sure the row exists, so the locking read below has
		// something to lock even for the first change of a provider.
		seed := providerStatusRow{ProviderID: id, Services: "{}", UpdatedAt: microsNow()}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&seed).Error; err != nil {
			return err
		}
		var row providerStatusRow
		if err := s.lockForUpdate(tx).Where("provider_id = ?", id).Take(&row).Error; err != nil {
			return err
		}
		ps, err := row.providerStatus()
		if err != nil {
			return err
		}
		before := map[string]any{"status": ps.Status, "services": maps.Clone(ps.Services)}
		if status != nil {
			ps.Status = *status
		}
		for service, st := range services {
			if st == "" {
				delete(ps.Services, service)
				continue
			}
			ps.Services[service] = st
		}
		doc, err := marshalDocument(ps.Services)
		if err != nil {
			return err
		}
		if err := tx.Model(&providerStatusRow{}).Where("provider_id = ?", id).Updates(map[string]any{
			"status": ps.Status, "services": doc, "updated_at": microsNow(),
		}).Error; err != nil {
			return err
		}
		out = ps
		return audit(ctx, tx, AuditEntry{Action: "provider.update", Target: "provider/" + id, Before: before,
			After: map[string]any{"status": ps.Status, "services": ps.Services}})
	})
	if err != nil {
		return ProviderStatus{}, err
	}
	return out, nil
}

// Override is the status override in the form routing applies.
func (ps ProviderStatus) Override() *policy.ProviderOverride {
	return policy.NewProviderOverride(ps.Status, ps.Services)
}
