package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// ErrDeleted is returned for a job that was deleted; its tombstone
// remains (docs/api.md, Deleting a job).
var ErrDeleted = errors.New("job deleted")

// DeleteJob replaces a job by its tombstone in one transaction: the job's
// row and everything the store holds of it that carries customer content
// or stands for it (its start in the outbox, its Idempotency-Keys, what
// vendors posted back, its webhook delivery log, its lifecycle events) go, and the tombstone
// records who deleted it and when. It returns the job as it was, for the
// erasure of what lies outside the store (its workflow, files and vendor
// copies). A job deleted already is ErrDeleted, a job that never existed
// ErrNotFound.
func (s *JobStore) DeleteJob(ctx context.Context, id, by string, at time.Time) (*jobs.Record, *jobs.Tombstone, error) {
	return s.DeleteJobIf(ctx, id, by, at, 0)
}

// DeleteJobIf is DeleteJob of the job as of revision (0: as it is): a job
// that moved on since (a retry started) is ErrConflict and stays.
func (s *JobStore) DeleteJobIf(ctx context.Context, id, by string, at time.Time, revision int) (*jobs.Record, *jobs.Tombstone, error) {
	var job jobs.Record
	var tomb *jobs.Tombstone
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		err := s.lockForUpdate(tx).Where("id = ?", id).Take(&job).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			var n int64
			if err := tx.Model(&jobs.Tombstone{}).Where("id = ?", id).Count(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				return ErrDeleted
			}
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if revision > 0 && job.Revision != revision {
			return ErrConflict
		}
		tomb = &jobs.Tombstone{
			ID: job.ID, Tenant: job.Tenant, Service: job.Service, CreatedAt: job.CreatedAt,
			CompletedAt: job.CompletedAt, DeletedAt: at.UTC().Truncate(time.Microsecond), DeletedBy: by,
			VendorCopies: jobs.VendorCopiesJSON(pendingCopies(&job)),
		}
		if err := tx.Create(tomb).Error; err != nil {
			return err
		}
		// What the job had reserved and not used is given back.
		if err := s.closeReservations(tx, id, reservationReleased, releasedAmount); err != nil {
			return err
		}
		for _, del := range []struct {
			table string
			where string
			args  []any
		}{
			{"jobs", "id = ?", []any{id}},
			{"job_starts", "job_id = ?", []any{id}},
			{"idempotency_keys", "tenant = ? AND service = ? AND job_id = ?", []any{job.Tenant, job.Service, id}},
			{"provider_callbacks", "job_id = ?", []any{id}},
			{"webhook_deliveries", "job_id = ?", []any{id}},
			{"job_events", "job_id = ?", []any{id}},
			{"job_deltas", "job_id = ?", []any{id}},
			{"webhook_messages", "job_id = ?", []any{id}},
		} {
			if err := tx.Exec("DELETE FROM "+del.table+" WHERE "+del.where, del.args...).Error; err != nil {
				return err
			}
		}
		return audit(ctx, tx, AuditEntry{Tenant: job.Tenant, Action: "job.delete", Target: "job/" + id,
			Before: map[string]any{"service": job.Service, "status": job.Status}})
	})
	if err != nil {
		return nil, nil, err
	}
	return &job, tomb, nil
}

// GetTombstone reads a deleted job's tombstone; ErrNotFound when the job
// was never deleted.
func (s *JobStore) GetTombstone(ctx context.Context, id string) (*jobs.Tombstone, error) {
	return take[jobs.Tombstone](s.db.WithContext(ctx).Where("id = ?", id))
}

// FinishErasure records that a deleted job's erasure finished at at, with
// what became of its vendor copies.
func (s *JobStore) FinishErasure(ctx context.Context, id string, copies []jobs.VendorCopy, at time.Time) error {
	return s.db.WithContext(ctx).Model(&jobs.Tombstone{}).Where("id = ?", id).
		Updates(map[string]any{"vendor_copies": jobs.VendorCopiesJSON(copies), "erased_at": at.UTC().Truncate(time.Microsecond)}).Error
}

// UnerasedTombstones lists up to limit tombstones of jobs deleted before t
// whose erasure has not finished, oldest first: erasures that could not
// be started, or stopped, and are started again (docs/api.md, Deleting a
// job).
func (s *JobStore) UnerasedTombstones(ctx context.Context, before time.Time, limit int) ([]jobs.Tombstone, error) {
	var out []jobs.Tombstone
	err := s.db.WithContext(ctx).Where("erased_at IS NULL AND deleted_at < ?", before.UTC()).
		Order("deleted_at").Limit(limit).Find(&out).Error
	return out, err
}

// pendingCopies are the copies of the job's work at the providers its
// attempts went to, each VendorCopyPending until the erasure deals with
// it.
func pendingCopies(job *jobs.Record) []jobs.VendorCopy {
	var history []jobs.RoutingInfo
	if job.RoutingHistory != "" {
		_ = json.Unmarshal([]byte(job.RoutingHistory), &history)
	}
	var copies []jobs.VendorCopy
	seen := map[string]bool{}
	for _, h := range history {
		if h.ProviderID != "" && !seen[h.ProviderID] {
			seen[h.ProviderID] = true
			copies = append(copies, jobs.VendorCopy{Provider: h.ProviderID, Outcome: jobs.VendorCopyPending})
		}
	}
	return copies
}
