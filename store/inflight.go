package store

import (
	"context"
	"fmt"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"gorm.io/gorm"
)

// InFlightLimit bounds the jobs not yet finished (pending or processing)
// of a tenant, or of one caller of it (docs/api.md, API keys; Tenants).
type InFlightLimit struct {
	// Name is the limit as the caller set it, for the refusal to name.
	Name   string
	Tenant string
	// User is the caller whose jobs count ("key:<id>"); "": the tenant's.
	User string
	Max  int
}

// InFlightError refuses a job, or a batch's jobs, over an InFlightLimit:
// Limit has InFlight jobs in flight already.
type InFlightError struct {
	Limit    InFlightLimit
	InFlight int64
}

func (e *InFlightError) Error() string {
	return fmt.Sprintf("%s is %d: %d jobs are in flight already", e.Limit.Name, e.Limit.Max, e.InFlight)
}

// createJobWithin is CreateJob for a job under limits: in one transaction,
// it counts each limit's jobs in flight and records the job only when
// every count is under its Max, else returns an *InFlightError. On
// PostgreSQL, a transaction-scoped advisory lock per limit makes the
// count and the insert of two creates of the same tenant or caller take
// turns (each count then sees the other's job); SQLite's single writer
// does so already. Jobs leave the count when their projection turns them
// completed or failed, which takes no lock.
func (s *JobStore) createJobWithin(ctx context.Context, job *jobs.Record, start *JobStart, limits []InFlightLimit) (bool, error) {
	created := false
	err := s.write(ctx, func(tx *gorm.DB) error {
		created = false
		// Recorded already (a repeat with its Idempotency-Key): no count.
		var exists int64
		if err := tx.Model(job).Where("id = ?", job.ID).Count(&exists).Error; err != nil || exists > 0 {
			return err
		}
		for _, limit := range limits {
			n, err := s.inFlight(tx, limit)
			if err != nil {
				return err
			}
			if n >= int64(limit.Max) {
				return &InFlightError{Limit: limit, InFlight: n}
			}
		}
		var err error
		created, err = insertJobAndStart(tx, job, start)
		return err
	})
	return created, err
}

// inFlight takes limit's lock (PostgreSQL) and counts its jobs in flight:
// a tenant's from job_counts, a caller's through idx_jobs_user_in_flight.
func (s *conn) inFlight(tx *gorm.DB, limit InFlightLimit) (int64, error) {
	if s.dialect == "postgres" {
		if err := tx.Exec("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
			"in-flight\n"+limit.Tenant+"\n"+limit.User).Error; err != nil {
			return 0, err
		}
	}
	// The statuses are written out, as the partial index's condition is:
	// a planner matches a partial index to literals, not to parameters.
	var n int64
	if limit.User == "" {
		err := tx.Raw("SELECT COALESCE(SUM(n), 0) FROM job_counts WHERE tenant = ? AND status IN ('pending', 'processing')", limit.Tenant).Scan(&n).Error
		return n, err
	}
	err := tx.Raw("SELECT COUNT(*) FROM jobs WHERE user_id = ? AND tenant = ? AND status IN ('pending', 'processing')", limit.User, limit.Tenant).Scan(&n).Error
	return n, err
}
