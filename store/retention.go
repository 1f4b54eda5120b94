package store

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// RetentionCutoff is one tenant's retention at a sweep (docs/api.md,
// Retention): its finished jobs whose completed_at is before Results have
// their result erased, those before Jobs are deleted; a zero time keeps
// them.
type RetentionCutoff struct {
	Tenant  string
	Results time.Time
	Jobs    time.Time
}

// finished are the statuses of finished jobs.
var finished = []string{string(jobs.StatusCompleted), string(jobs.StatusFailed)}

// RetentionCutoffs are the cutoffs at now of every tenant that has
// finished jobs and keeps something not forever: a tenant's own
// retention, else d. The tenants come from job_counts and the few tenant
// records with a retention of their own, so the jobs table is not read.
func (s *HousekeepingStore) RetentionCutoffs(ctx context.Context, d RetentionDefaults, now time.Time) ([]RetentionCutoff, error) {
	db := s.db.WithContext(ctx)
	var names []string
	if err := db.Table("job_counts").Distinct("tenant").Where("status IN ?", finished).
		Order("tenant").Pluck("tenant", &names).Error; err != nil {
		return nil, err
	}
	var rows []tenantRow
	if err := db.Where("retention_results_seconds IS NOT NULL OR retention_jobs_seconds IS NOT NULL").Find(&rows).Error; err != nil {
		return nil, err
	}
	own := make(map[string]*Tenant, len(rows))
	for i := range rows {
		t, err := rows[i].tenant()
		if err != nil {
			return nil, err
		}
		own[t.ID] = t
	}
	now = now.UTC()
	var out []RetentionCutoff
	for _, name := range names {
		results, keep := own[name].EffectiveRetention(d)
		if results == 0 && keep == 0 {
			continue
		}
		c := RetentionCutoff{Tenant: name}
		if results > 0 {
			c.Results = now.Add(-results)
		}
		if keep > 0 {
			c.Jobs = now.Add(-keep)
		}
		out = append(out, c)
	}
	return out, nil
}

// retentionColumns are what the sweep needs of a job.
var retentionColumns = []string{"id", "service", "tenant", "status", "revision", "result_file", "created_at", "completed_at"}

// ExpiredResults lists up to limit finished jobs of tenant that completed
// before before and whose result is still kept, oldest first, with
// retentionColumns only (idx_jobs_tenant_results_kept).
func (s *HousekeepingStore) ExpiredResults(ctx context.Context, tenant string, before time.Time, limit int) ([]jobs.Record, error) {
	var out []jobs.Record
	err := s.db.WithContext(ctx).Select(retentionColumns).
		Where("tenant = ? AND completed_at IS NOT NULL AND result_expired_at IS NULL AND completed_at < ? AND status IN ?", tenant, before.UTC(), finished).
		Order("completed_at").Limit(limit).Find(&out).Error
	return out, err
}

// ExpiredJobs lists up to limit finished jobs of tenant that completed
// before before, oldest first, with retentionColumns only
// (idx_jobs_tenant_completed).
func (s *HousekeepingStore) ExpiredJobs(ctx context.Context, tenant string, before time.Time, limit int) ([]jobs.Record, error) {
	var out []jobs.Record
	err := s.db.WithContext(ctx).Select(retentionColumns).
		Where("tenant = ? AND completed_at IS NOT NULL AND completed_at < ? AND status IN ?", tenant, before.UTC(), finished).
		Order("completed_at").Limit(limit).Find(&out).Error
	return out, err
}

// ExpireResult erases a finished job's result: result and result_file are
// emptied and result_expired_at set to at; status, input and the rest
// stay. Only the job as the sweep read it (its revision) is erased: false
// when it changed since (a retry runs it again), is gone or was erased
// already. SaveJob keeps a late write of the same finish from bringing
// the result back.
func (s *HousekeepingStore) ExpireResult(ctx context.Context, id string, revision int, at time.Time) (bool, error) {
	var n int64
	err := s.writeStatement(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&jobs.Record{}).
			Where("id = ? AND revision = ? AND result_expired_at IS NULL AND status IN ?", id, revision, finished).
			Updates(map[string]any{"result": "", "result_file": "", "result_expired_at": at.UTC().Truncate(time.Microsecond), "updated_at": time.Now().UTC()})
		n = res.RowsAffected
		return res.Error
	})
	return n > 0, err
}
