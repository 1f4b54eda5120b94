package store

import (
	"context"
	"errors"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"gorm.io/gorm"
)

// JobFilter selects jobs for ListJobs; an empty field does not filter.
type JobFilter struct {
	Tenant   string
	UserID   string
	Service  jobs.ServiceID
	Provider string
	Status   jobs.Status
	// Batch selects a batch's jobs (docs/api.md, Batches); job_counts does
	// not count by it, so their total is a count of idx_jobs_batch.
	Batch string
	// ErrorCode selects jobs by their error code (gateway jobs retry,
	// filter[error_code]). job_counts does not count by it: on PostgreSQL
	// a partial index (migrationJobFilterIndexes) holds the page and its
	// counted total; on SQLite it is one more condition on the tenant's
	// range of idx_jobs_tenant_created.
	ErrorCode string
	// Application selects jobs by their X-Application
	// (filter[application]), and CustomID by the custom_id a batch gave
	// them (filter[custom_id]): like ErrorCode.
	Application, CustomID string
	// CreatedFrom and CreatedBefore bound the jobs' creation time
	// (filter[created_from], filter[created_before]); zero: unbounded. A
	// range of the tenant's idx_jobs_tenant_created, its total counted.
	CreatedFrom, CreatedBefore time.Time
	// WebhookFailed selects jobs with a webhook message whose delivery
	// was given up and not delivered since (docs/webhooks.md).
	WebhookFailed bool
}

// jobListColumns are the columns a listing renders; the documents only a
// single-job response carries (input, options, result) stay in the table.
var jobListColumns = []string{
	"jobs.id", "jobs.service", "jobs.tenant", "jobs.user_id", "jobs.provider", "jobs.status",
	"jobs.progress", "jobs.policy_id", "jobs.routing", "jobs.routing_history", "jobs.error_code",
	"jobs.error_message", "jobs.client_meta", "jobs.worker_id", "jobs.created_at",
	"jobs.processed_at", "jobs.completed_at", "jobs.result_expired_at", "jobs.usage",
}

// jobListOrder is newest first; ids are UUIDv7, so they break ties in
// creation order too.
const jobListOrder = "jobs.created_at DESC, jobs.id DESC"

// ListJobs returns one page of the jobs that match f, newest first, without
// input, options and result, and the exact number of matching jobs.
func (s *JobStore) ListJobs(ctx context.Context, f JobFilter, offset, limit int) ([]jobs.Record, int64, error) {
	if offset < 0 || limit < 1 {
		return nil, 0, errors.New("list jobs: offset must be at least 0 and limit at least 1")
	}
	db := s.db.WithContext(ctx)
	// Deferred join: the page's ids come from an index-only scan of the
	// filter's (…, created_at DESC, id DESC) index, so a deep offset skips
	// index entries rather than whole rows; only the page's rows are read.
	ids := f.where(db.Table("jobs")).Select("jobs.id").Order(jobListOrder).Limit(limit).Offset(offset)
	var records []jobs.Record
	err := db.Table("jobs").Select(jobListColumns).
		Joins("JOIN (?) AS page ON page.id = jobs.id", ids).
		Order(jobListOrder).Find(&records).Error
	if err != nil {
		return nil, 0, err
	}
	// A page that is neither empty nor full is the last one: the total
	// follows without counting.
	if len(records) > 0 && len(records) < limit {
		return records, int64(offset + len(records)), nil
	}
	if len(records) == 0 && offset == 0 {
		return records, 0, nil
	}
	total, err := s.countJobs(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	return records, total, nil
}

// countJobs is the number of jobs that match f: a sum over the buckets of
// job_counts (migrationJobCounts) that match, or, with a user, a count of
// that user's range of idx_jobs_user_tenant_created (with an error code or
// an application, a count of the jobs that match; likewise with
// WebhookFailed).
func (s *JobStore) countJobs(ctx context.Context, f JobFilter) (int64, error) {
	db := s.db.WithContext(ctx)
	var total int64
	if f.UserID != "" || f.ErrorCode != "" || f.Application != "" || f.CustomID != "" || f.Batch != "" || f.WebhookFailed ||
		!f.CreatedFrom.IsZero() || !f.CreatedBefore.IsZero() {
		err := f.where(db.Table("jobs")).Count(&total).Error
		return total, err
	}
	err := f.where(db.Table("job_counts")).Select("CAST(COALESCE(SUM(n), 0) AS BIGINT)").Row().Scan(&total)
	return total, err
}

// where adds f's conditions on the table of q (jobs or job_counts, which
// has no user_id, error_code, application, batch_id or webhook messages).
func (f JobFilter) where(q *gorm.DB) *gorm.DB {
	table := q.Statement.Table
	for _, cond := range []struct{ column, value string }{
		{"tenant", f.Tenant},
		{"user_id", f.UserID},
		{"service", string(f.Service)},
		{"provider", f.Provider},
		{"status", string(f.Status)},
		{"error_code", f.ErrorCode},
		{"application", f.Application},
		{"custom_id", f.CustomID},
		{"batch_id", f.Batch},
	} {
		if cond.value != "" {
			q = q.Where(table+"."+cond.column+" = ?", cond.value)
		}
	}
	// The partial indexes of error codes and applications hold only
	// jobs that have one: said here, the planner uses them for any value.
	if f.ErrorCode != "" {
		q = q.Where(table + ".error_code <> ''")
	}
	if f.Application != "" {
		q = q.Where(table + ".application <> ''")
	}
	if f.CustomID != "" {
		q = q.Where(table + ".custom_id <> ''")
	}
	if !f.CreatedFrom.IsZero() {
		q = q.Where(table+".created_at >= ?", f.CreatedFrom.UTC())
	}
	if !f.CreatedBefore.IsZero() {
		q = q.Where(table+".created_at < ?", f.CreatedBefore.UTC())
	}
	if f.WebhookFailed {
		q = q.Where("EXISTS (SELECT 1 FROM webhook_messages m WHERE m.job_id = jobs.id AND m.given_up_at IS NOT NULL)")
	}
	return q
}
