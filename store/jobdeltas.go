package store

import (
	"context"
	"time"
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

// AppendJobDelta records d's text as the job's next delta. One call of a
// job writes at a time, so numbering by the job's last delta is safe; two
// calls of a job that overlap (an abandoned attempt still writing) may
// collide, and the later write fails.
func (s *JobStore) AppendJobDelta(ctx context.Context, d JobDelta) error {
	return s.db.WithContext(ctx).Exec("INSERT INTO job_deltas (job_id, seq, call_id, provider, text, created_at) VALUES "+
		"(?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM job_deltas WHERE job_id = ?), ?, ?, ?, ?)",
		d.JobID, d.JobID, d.CallID, d.Provider, d.Text, microsNow()).Error
}

// JobDeltas reads up to limit deltas of job id after seq after, oldest
// first.
func (s *JobStore) JobDeltas(ctx context.Context, id string, after, limit int) ([]JobDelta, error) {
	var out []JobDelta
	err := s.db.WithContext(ctx).Where("job_id = ? AND seq > ?", id, after).Order("seq").Limit(limit).Find(&out).Error
	return out, err
}

// DeleteJobDeltasBefore deletes the deltas written before t: they serve
// clients following a job live, and the job's result holds the answer.
func (s *JobStore) DeleteJobDeltasBefore(ctx context.Context, t time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Where("created_at < ?", t).Delete(&JobDelta{})
	return res.RowsAffected, res.Error
}
