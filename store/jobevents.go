package store

import (
	"context"
	"encoding/json"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// JobEvent is one lifecycle event of a job, as the event stream replays
// it (docs/api.md, Following a job live).
type JobEvent struct {
	JobID string `gorm:"primaryKey"`
	// Seq numbers the job's events from 1: the stream's event id.
	Seq  int `gorm:"primaryKey;autoIncrement:false"`
	Kind jobs.EventKind
	// Snapshot is the job as of the event without its documents
	// (jobs.Snapshot.WithoutDocuments), JSON.
	Snapshot  string
	CreatedAt time.Time
}

// TableName is the table events live in.
func (JobEvent) TableName() string { return "job_events" }

// Job is the event's snapshot of the job, without its documents.
func (e JobEvent) Job() (jobs.Snapshot, error) {
	var s jobs.Snapshot
	err := json.Unmarshal([]byte(e.Snapshot), &s)
	return s, err
}

// JobEvents reads up to limit events of job id after seq after, oldest
// first.
func (s *JobStore) JobEvents(ctx context.Context, id string, after, limit int) ([]JobEvent, error) {
	var out []JobEvent
	err := s.db.WithContext(ctx).Where("job_id = ? AND seq > ?", id, after).Order("seq").Limit(limit).Find(&out).Error
	return out, err
}

// eventColumns are the columns of a job an event's snapshot is made of:
// all but its documents.
var eventColumns = []clause.Column{
	{Name: "id"}, {Name: "service"}, {Name: "tenant"}, {Name: "user_id"}, {Name: "application"},
	{Name: "policy_id"}, {Name: "provider"}, {Name: "status"}, {Name: "progress"}, {Name: "routing"},
	{Name: "routing_history"}, {Name: "result_file"}, {Name: "error_code"}, {Name: "error_message"},
	{Name: "waiting"}, {Name: "worker_id"}, {Name: "revision"}, {Name: "created_at"}, {Name: "processed_at"},
	{Name: "completed_at"},
}

// appendJobEvent records the event a projection write of job reports, if
// any, as the job's next. It runs in the write's transaction, after the
// write locked the job's row, so no other write numbers the same event.
func appendJobEvent(tx *gorm.DB, job *jobs.Record) error {
	kind := jobs.EventOf(job)
	if kind == "" {
		return nil
	}
	pin, err := eventSnapshot(job)
	if err != nil {
		return err
	}
	return tx.Exec("INSERT INTO job_events (job_id, seq, kind, snapshot, created_at) VALUES "+
		"(?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM job_events WHERE job_id = ?), ?, ?, ?)",
		job.ID, job.ID, string(kind), pin, microsNow()).Error
}

// eventSnapshot is what an event of job records of it: its snapshot
// without its documents, JSON.
func eventSnapshot(job *jobs.Record) (string, error) {
	snap, err := job.Snapshot()
	if err != nil {
		return "", err
	}
	pin, err := json.Marshal(snap.WithoutDocuments())
	return string(pin), err
}
