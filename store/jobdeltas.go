package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// JobDelta is a piece of a job's streamed answer, as a provider wrote it
// (docs/api.md, Streamed answers). Deltas live outside Temporal's history:
// the whole answer is recorded there once, with the result.
type JobDelta struct {
	JobID string `gorm:"primaryKey"`
	// Seq numbers the job's deltas from 1, in the order they were written.
	Seq int `gorm:"primaryKey;autoIncrement:false"`
	// CallID is the provider call the piece belongs to: the answer starts
	// again with each call (a retry or a failover).
	CallID    string
	Provider  string
	Text      string
	CreatedAt time.Time
}

// TableName is the table deltas live in.
func (JobDelta) TableName() string { return "job_deltas" }

// AppendJobDelta records d's text as the job's next delta, numbered after
// the job's last. Two calls of a job may write at once (an abandoned
// attempt still streaming beside its retry): a number taken meanwhile is
// taken again, a few times.
func (s *JobStore) AppendJobDelta(ctx context.Context, d JobDelta) error {
	var err error
	for try := 0; try < 3; try++ {
		err = s.writeStatement(ctx, func(tx *gorm.DB) error {
			return tx.Exec("INSERT INTO job_deltas (job_id, seq, call_id, provider, text, created_at) VALUES "+
				"(?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM job_deltas WHERE job_id = ?), ?, ?, ?, ?)",
				d.JobID, d.JobID, d.CallID, d.Provider, d.Text, microsNow()).Error
		})
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != uniqueViolation {
			return err
		}
	}
	return err
}

// JobDeltas reads up to limit deltas of job id after seq after, oldest
// first.
func (s *JobStore) JobDeltas(ctx context.Context, id string, after, limit int) ([]JobDelta, error) {
	var out []JobDelta
	err := s.db.WithContext(ctx).Where("job_id = ? AND seq > ?", id, after).Order("seq").Limit(limit).Find(&out).Error
	return out, err
}

// DeleteJobDeltasBefore deletes the deltas written before t of jobs not
// pending or processing: they serve clients following a job live, and
// the job's result holds the answer. A job in flight keeps its own, so
// that their numbers go on (streams resume by them).
func (s *JobStore) DeleteJobDeltasBefore(ctx context.Context, t time.Time) (int64, error) {
	var n int64
	err := s.writeStatement(ctx, func(tx *gorm.DB) error {
		res := tx.Where("created_at < ? AND job_id NOT IN (?)", t.UTC(),
			tx.Model(&jobs.Record{}).Select("id").Where("status IN ?", []jobs.Status{jobs.StatusPending, jobs.StatusProcessing})).
			Delete(&JobDelta{})
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}
