package store

import (
	"cmp"
	"context"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// OpenJob is a job the store holds as not ended (pending or processing)
// whose start is not in the outbox: its workflow was started, or should
// have been. The reconciliation sweep checks it against Temporal
// (docs/operations.md, Housekeeping).
type OpenJob struct {
	ID        string
	Status    jobs.Status
	CreatedAt time.Time
}

// OpenJobCursor is where a walk of OpenJobs left off: the last job taken,
// by creation time and id. The zero cursor starts from the oldest.
type OpenJobCursor struct {
	CreatedAt time.Time
	ID        string
}

// OpenJobs returns up to limit open jobs created before before and after
// the cursor, oldest first, and the cursor of the next call: after the
// last job returned, or the zero cursor once the walk reached the end.
// Each status is read along idx_jobs_status_created (PostgreSQL; SQLite
// walks idx_jobs_created), and jobs whose start waits in the outbox are
// left out: they are pending by design.
func (s *Store) OpenJobs(ctx context.Context, before time.Time, after OpenJobCursor, limit int) ([]OpenJob, OpenJobCursor, error) {
	before = before.UTC().Truncate(time.Microsecond)
	afterAt := after.CreatedAt.UTC().Truncate(time.Microsecond)
	var out []OpenJob
	for _, status := range []jobs.Status{jobs.StatusPending, jobs.StatusProcessing} {
		var rows []OpenJob
		err := s.db.WithContext(ctx).Model(&jobs.Record{}).Select("id, status, created_at").
			Where("status = ? AND created_at < ?", status, before).
			Where("created_at > ? OR (created_at = ? AND id > ?)", afterAt, afterAt, after.ID).
			Where("NOT EXISTS (SELECT 1 FROM job_starts WHERE job_starts.job_id = jobs.id)").
			Order("created_at, id").Limit(limit).Scan(&rows).Error
		if err != nil {
			return nil, after, err
		}
		out = append(out, rows...)
	}
	slices.SortFunc(out, func(a, b OpenJob) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if len(out) < limit {
		return out, OpenJobCursor{}, nil
	}
	out = out[:limit]
	last := out[len(out)-1]
	return out, OpenJobCursor{CreatedAt: last.CreatedAt, ID: last.ID}, nil
}

// FailOpenJob fails job jobID if it is still pending or processing: with
// code and message, completed at at, its budget reservations released and
// its event recorded, in one transaction. It returns the job as failed,
// without its documents, or nil when the job was not open any more.
func (s *Store) FailOpenJob(ctx context.Context, jobID, code, message string, at time.Time) (*jobs.Record, error) {
	var failed *jobs.Record
	err := s.write(ctx, func(tx *gorm.DB) error {
		failed = nil
		var job jobs.Record
		res := tx.Model(&job).Clauses(clause.Returning{Columns: eventColumns}).
			Where("id = ? AND status IN ?", jobID, []jobs.Status{jobs.StatusPending, jobs.StatusProcessing}).
			Updates(map[string]any{
				"status":        jobs.StatusFailed,
				"error_code":    code,
				"error_message": message,
				"waiting":       "",
				"completed_at":  at.UTC().Truncate(time.Microsecond),
				"updated_at":    time.Now().UTC(),
				"revision":      gorm.Expr("revision + 1"),
			})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		// Its workflow will not settle what it reserved: given back, as
		// for a job failed before it ran.
		if err := s.closeReservations(tx, jobID, reservationReleased, releasedAmount); err != nil {
			return err
		}
		if err := appendJobEvent(tx, &job); err != nil {
			return err
		}
		failed = &job
		return nil
	})
	return failed, err
}
