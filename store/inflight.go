package store

import (
	"context"
	"fmt"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
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

// InFlightError refuses a job over an InFlightLimit: Limit already has
// Max jobs in flight.
type InFlightError struct{ Limit InFlightLimit }

func (e *InFlightError) Error() string {
	return fmt.Sprintf("%s: %d jobs are in flight already", e.Limit.Name, e.Limit.Max)
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
		for _, limit := range limits {
			n, err := s.inFlight(tx, limit)
			if err != nil {
				return err
			}
			if n >= int64(limit.Max) {
				return &InFlightError{Limit: limit}
			}
		}
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(job)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		created = true
		return tx.Create(start).Error
	})
	return created, err
}

// inFlight takes limit's lock (PostgreSQL) and counts its jobs in flight:
// a tenant's from job_counts, a caller's through idx_jobs_user_in_flight.
func (s *JobStore) inFlight(tx *gorm.DB, limit InFlightLimit) (int64, error) {
	if s.dialect == "postgres" {
		if err := tx.Exec("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
			"in-flight\n"+limit.Tenant+"\n"+limit.User).Error; err != nil {
			return 0, err
		}
	}
	inFlight := []jobs.Status{jobs.StatusPending, jobs.StatusProcessing}
	var n int64
	if limit.User == "" {
		err := tx.Raw("SELECT COALESCE(SUM(n), 0) FROM job_counts WHERE tenant = ? AND status IN ?", limit.Tenant, inFlight).Scan(&n).Error
		return n, err
	}
	err := tx.Raw("SELECT COUNT(*) FROM jobs WHERE user_id = ? AND tenant = ? AND status IN ?", limit.User, limit.Tenant, inFlight).Scan(&n).Error
	return n, err
}
