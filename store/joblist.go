package store

import (
	"context"
	"errors"

	"gorm.io/gorm"
)

// JobFilter selects jobs for ListJobs; an empty field does not filter.
type JobFilter struct {
	Tenant   string
	UserID   string
	Service  string
	Provider string
	Status   string
}

// jobListColumns are the columns a listing renders; the documents only a
// single-job response carries (input, options, result) stay in the table.
var jobListColumns = []string{
	"jobs.id", "jobs.service", "jobs.tenant", "jobs.user_id", "jobs.provider", "jobs.status",
	"jobs.progress", "jobs.policy_id", "jobs.routing", "jobs.routing_history", "jobs.error_code",
	"jobs.error_message", "jobs.client_meta", "jobs.worker_id", "jobs.created_at",
	"jobs.processed_at", "jobs.completed_at",
}

// jobListOrder is newest first; ids are UUIDv7, so they break ties in
// creation order too.
const jobListOrder = "jobs.created_at DESC, jobs.id DESC"

// ListJobs returns one page of the jobs that match f, newest first, without
// input, options and result, and the exact number of matching jobs.
func (s *Store) ListJobs(ctx context.Context, f JobFilter, offset, limit int) ([]Job, int64, error) {
	if offset < 0 || limit < 1 {
		return nil, 0, errors.New("list jobs: offset must be at least 0 and limit at least 1")
	}
	db := s.db.WithContext(ctx)
	// Deferred join: the page's ids come from an index-only scan of the
	// filter's (…, created_at DESC, id DESC) index, so a deep offset skips
	// index entries rather than whole rows; only the page's rows are read.
	ids := f.where(db.Table("jobs")).Select("jobs.id").Order(jobListOrder).Limit(limit).Offset(offset)
	var jobs []Job
	err := db.Table("jobs").Select(jobListColumns).
		Joins("JOIN (?) AS page ON page.id = jobs.id", ids).
		Order(jobListOrder).Find(&jobs).Error
	if err != nil {
		return nil, 0, err
	}
	// A page that is neither empty nor full is the last one: the total
	// follows without counting. Otherwise count, from the same index.
	if len(jobs) > 0 && len(jobs) < limit {
		return jobs, int64(offset + len(jobs)), nil
	}
	if len(jobs) == 0 && offset == 0 {
		return jobs, 0, nil
	}
	var total int64
	if err := f.where(db.Table("jobs")).Count(&total).Error; err != nil {
		return nil, 0, err
	}
	return jobs, total, nil
}

// where adds f's conditions to q.
func (f JobFilter) where(q *gorm.DB) *gorm.DB {
	for _, cond := range []struct{ column, value string }{
		{"jobs.tenant", f.Tenant},
		{"jobs.user_id", f.UserID},
		{"jobs.service", f.Service},
		{"jobs.provider", f.Provider},
		{"jobs.status", f.Status},
	} {
		if cond.value != "" {
			q = q.Where(cond.column+" = ?", cond.value)
		}
	}
	return q
}
