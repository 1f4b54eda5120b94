package store

import (
	"context"
	"fmt"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// JobStart is an accepted job whose workflow is not known to have started:
// the API's outbox. The API writes it with the job, in one transaction, so
// a job is never accepted without a start to follow; a dispatcher starts
// the workflow and deletes the row.
type JobStart struct {
	JobID string `gorm:"primaryKey"`
	// Input is the workflow input, JSON.
	Input string
	// Priority is the Temporal priority key: lower starts first.
	Priority int
	// Tenant is the job's tenant: claims take tenants' starts in turns.
	Tenant string
	// Attempts counts the starts that failed.
	Attempts int
	// NextAttemptAt is when the start is due; a dispatcher that takes a
	// start leases it by moving this into the future.
	NextAttemptAt time.Time
	CreatedAt     time.Time
}

// TableName is the outbox of workflow starts.
func (JobStart) TableName() string { return "job_starts" }

// CreateJob records a new job and its start in one transaction. It returns
// false, and writes nothing, when a job with that id exists already (an
// earlier request with the same Idempotency-Key recorded it). Under
// limits, it records the job only while each has fewer than its Max jobs
// in flight, else returns an *InFlightError.
func (s *JobStore) CreateJob(ctx context.Context, job *jobs.Record, start *JobStart, limits ...InFlightLimit) (bool, error) {
	start.JobID = job.ID
	start.Tenant = job.Tenant
	start.NextAttemptAt = start.NextAttemptAt.UTC().Truncate(time.Microsecond)
	start.CreatedAt = job.CreatedAt.UTC().Truncate(time.Microsecond)
	if len(limits) > 0 {
		return s.createJobWithin(ctx, job, start, limits)
	}
	if s.dialect == "postgres" {
		return s.createJobPostgres(ctx, job, start)
	}
	created := false
	err := s.write(ctx, func(tx *gorm.DB) error {
		var err error
		created, err = insertJobAndStart(tx, job, start)
		return err
	})
	return created, err
}

// insertJobAndStart records job and its start in tx, unless a job with
// that id exists already (false, nothing written).
func insertJobAndStart(tx *gorm.DB, job *jobs.Record, start *JobStart) (bool, error) {
	res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(job)
	if res.Error != nil || res.RowsAffected == 0 {
		return false, res.Error
	}
	return true, tx.Create(start).Error
}

// createJobPostgres is CreateJob in one statement, which commits alone:
// the job's insert, as GORM makes it, and the start's, which takes the id
// the first returns (none when the job exists already). One round trip on
// the path of every create where a transaction takes four.
func (s *JobStore) createJobPostgres(ctx context.Context, job *jobs.Record, start *JobStart) (bool, error) {
	insert := s.db.Session(&gorm.Session{DryRun: true}).Clauses(clause.OnConflict{DoNothing: true}).Create(job).Statement
	if insert.Error != nil {
		return false, insert.Error
	}
	// GORM numbers the insert's parameters $1 to $n; the start's follow.
	n := len(insert.Vars)
	q := fmt.Sprintf("WITH job AS (%s RETURNING id) "+
		"INSERT INTO job_starts (job_id, input, priority, tenant, attempts, next_attempt_at, created_at) "+
		"SELECT id, CAST($%d AS TEXT), CAST($%d AS INTEGER), CAST($%d AS TEXT), CAST($%d AS INTEGER), "+
		"CAST($%d AS TIMESTAMPTZ), CAST($%d AS TIMESTAMPTZ) FROM job",
		insert.SQL.String(), n+1, n+2, n+3, n+4, n+5, n+6)
	args := append(insert.Vars, start.Input, start.Priority, start.Tenant, start.Attempts, start.NextAttemptAt, start.CreatedAt)
	var created int64
	err := s.writeStatement(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(q, args...)
		created = res.RowsAffected
		return res.Error
	})
	return created > 0, err
}

// ClaimJobStarts takes up to limit starts that are due at now and leases
// them until now+lease so that no other dispatcher takes them meanwhile
// (on PostgreSQL, concurrent claims skip each other's rows). Tenants take
// turns: each tenant's first start (most urgent priority, then oldest),
// then each one's second, and so on, so that one tenant's backlog does not
// hold back another's jobs (docs/operations.md, Fairness between tenants).
func (s *JobStore) ClaimJobStarts(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]JobStart, error) {
	now = now.UTC().Truncate(time.Microsecond)
	until := now.Add(lease)
	if s.dialect == "postgres" {
		return s.claimJobStartsPostgres(ctx, now, until, limit)
	}
	var claimed []JobStart // SQLite's single writer needs no lock
	err := s.write(ctx, func(tx *gorm.DB) error {
		claimed = nil
		err := tx.Raw("SELECT js.* FROM job_starts js JOIN ("+startTurns+") ranked ON ranked.job_id = js.job_id "+
			"ORDER BY ranked.turn, js.priority, js.created_at, js.job_id LIMIT ?", now, limit).Scan(&claimed).Error
		if err != nil || len(claimed) == 0 {
			return err
		}
		locked := make([]string, len(claimed))
		for i := range claimed {
			locked[i] = claimed[i].JobID
			claimed[i].NextAttemptAt = until
		}
		return tx.Model(&JobStart{}).Where("job_id IN ?", locked).Update("next_attempt_at", until).Error
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// startTurns ranks the due starts: each tenant's in priority, then age,
// order (its turn).
const startTurns = "SELECT job_id, ROW_NUMBER() OVER (PARTITION BY tenant ORDER BY priority, created_at, job_id) AS turn " +
	"FROM job_starts WHERE next_attempt_at <= ?"

// claimJobStartsPostgres is ClaimJobStarts in one statement, a round trip
// on the path of every job: it ranks the due starts, locks the first
// limit of them, skipping rows another claim holds (FOR UPDATE cannot sit
// beside the window, so the ranking is a CTE), leases them and returns
// them in their turns. Its commit does not wait for the disk
// (unsyncedCommit): a lease a crash of the database loses is claimed
// again.
func (s *JobStore) claimJobStartsPostgres(ctx context.Context, now, until time.Time, limit int) ([]JobStart, error) {
	var claimed []JobStart
	err := s.writeStatement(ctx, func(tx *gorm.DB) error {
		return tx.Raw("WITH ranked AS ("+startTurns+"), "+
			"picked AS (SELECT js.job_id, ranked.turn FROM job_starts js JOIN ranked USING (job_id) "+
			"WHERE js.next_attempt_at <= ? ORDER BY ranked.turn, js.priority, js.created_at, js.job_id LIMIT ? "+
			"FOR UPDATE OF js SKIP LOCKED), "+
			"leased AS (UPDATE job_starts SET next_attempt_at = ? FROM picked "+
			"WHERE job_starts.job_id = picked.job_id AND "+unsyncedCommit+" "+
			"RETURNING job_starts.*, picked.turn) "+
			"SELECT job_id, input, priority, tenant, attempts, next_attempt_at, created_at FROM leased "+
			"ORDER BY turn, priority, created_at, job_id", now, now, limit, until).Scan(&claimed).Error
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// GetJobStart reads a job's start; ErrNotFound once the workflow started.
func (s *JobStore) GetJobStart(ctx context.Context, jobID string) (*JobStart, error) {
	return take[JobStart](s.db.WithContext(ctx).Where("job_id = ?", jobID))
}

// UnstartedJobs returns which of jobIDs still have a start in the outbox:
// their workflows were not started yet.
func (s *JobStore) UnstartedJobs(ctx context.Context, jobIDs []string) (map[string]bool, error) {
	out := make(map[string]bool, len(jobIDs))
	for start := 0; start < len(jobIDs); start += jobStatesChunk {
		var ids []string
		err := s.db.WithContext(ctx).Model(&JobStart{}).Where("job_id IN ?", jobIDs[start:min(start+jobStatesChunk, len(jobIDs))]).
			Pluck("job_id", &ids).Error
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			out[id] = true
		}
	}
	return out, nil
}

// DeleteJobStarts removes the starts of workflows that started.
func (s *JobStore) DeleteJobStarts(ctx context.Context, jobIDs []string) error {
	if len(jobIDs) == 0 {
		return nil
	}
	return s.writeStatement(ctx, func(tx *gorm.DB) error {
		return tx.Where("job_id IN ?", jobIDs).Delete(&JobStart{}).Error
	})
}

// RetryJobStart counts a failed start and makes it due again at next.
func (s *JobStore) RetryJobStart(ctx context.Context, jobID string, next time.Time) error {
	return s.writeStatement(ctx, func(tx *gorm.DB) error {
		return tx.Model(&JobStart{}).Where("job_id = ?", jobID).
			Updates(map[string]any{"attempts": gorm.Expr("attempts + 1"), "next_attempt_at": next.UTC().Truncate(time.Microsecond)}).Error
	})
}

// ReleaseJobStarts makes leased starts due at now, for any dispatcher to
// take: a dispatcher hands back what it took and will not start.
func (s *JobStore) ReleaseJobStarts(ctx context.Context, jobIDs []string, now time.Time) error {
	if len(jobIDs) == 0 {
		return nil
	}
	return s.writeStatement(ctx, func(tx *gorm.DB) error {
		return tx.Model(&JobStart{}).Where("job_id IN ?", jobIDs).
			Update("next_attempt_at", now.UTC().Truncate(time.Microsecond)).Error
	})
}

// JobStartBacklog counts the outbox of job starts by tenant.
func (s *JobStore) JobStartBacklog(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		Tenant string
		N      int64
	}
	if err := s.db.WithContext(ctx).Model(&JobStart{}).Select("tenant, COUNT(*) AS n").Group("tenant").Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.Tenant] = r.N
	}
	return out, nil
}

// CountJobStarts is how many accepted jobs wait for their workflow to
// start.
func (s *JobStore) CountJobStarts(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&JobStart{}).Count(&n).Error
	return n, err
}

// FailJobStart ends a job whose workflow can never start: a job still
// pending becomes failed with code and message, completed at at, and its
// start leaves the outbox, in one transaction. A job that left pending (its
// workflow runs) keeps its state; its start goes all the same.
func (s *JobStore) FailJobStart(ctx context.Context, jobID, code, message string, at time.Time) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		if err := s.failPending(tx, jobID, code, message, at); err != nil {
			return err
		}
		return tx.Where("job_id = ?", jobID).Delete(&JobStart{}).Error
	})
}

// failPending fails job jobID, in tx, if it is still pending: with code
// and message, completed at at, its budget reservations released and its
// event recorded.
func (s *conn) failPending(tx *gorm.DB, jobID, code, message string, at time.Time) error {
	var job jobs.Record
	res := tx.Model(&job).Clauses(clause.Returning{Columns: eventColumns}).Where("id = ? AND status = ?", jobID, jobs.StatusPending).Updates(map[string]any{
		"status":        jobs.StatusFailed,
		"error_code":    code,
		"error_message": message,
		"completed_at":  at.UTC().Truncate(time.Microsecond),
		"updated_at":    time.Now().UTC(),
		"revision":      gorm.Expr("revision + 1"),
	})
	if res.Error != nil || res.RowsAffected == 0 {
		return res.Error
	}
	// Failed before it ran: the budget reserved at create is given back.
	if err := s.closeReservations(tx, jobID, reservationReleased, releasedAmount); err != nil {
		return err
	}
	return appendJobEvent(tx, &job)
}
