package store

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Job statuses.
const (
	StatusPending    = "pending"
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
)

// Job is the queryable projection of one job. JSON documents (input,
// options, routing, result, client meta) are stored as text.
type Job struct {
	ID             string `gorm:"primaryKey"`
	Service        string
	Tenant         string
	UserID         string
	Provider       string
	Status         string
	Progress       int
	PolicyID       string
	Application    string
	Input          string
	Options        string
	Routing        string
	RoutingHistory string
	Result         string
	ErrorCode      string
	ErrorMessage   string
	ClientMeta     string
	WorkerID       string
	// Revision orders projection writes: a write only lands when its
	// revision is higher than the stored one, so a retried or late write
	// never rolls a job back.
	Revision    int
	CreatedAt   time.Time
	ProcessedAt *time.Time
	CompletedAt *time.Time
	UpdatedAt   time.Time
}

// Terminal reports whether the job reached completed or failed.
func (j *Job) Terminal() bool { return j.Status == StatusCompleted || j.Status == StatusFailed }

// InsertJob records a job without a start unless a record with its id
// exists already. The API uses CreateJob; this seeds tests and tools.
func (s *Store) InsertJob(ctx context.Context, job *Job) error {
	return s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(job).Error
}

// SaveJob writes the whole projection of a job, creating it when missing,
// unless the stored record already has the same or a higher revision.
func (s *Store) SaveJob(ctx context.Context, job *Job) error {
	job.UpdatedAt = time.Now().UTC()
	return s.writeStatement(ctx, func(tx *gorm.DB) error {
		return tx.Clauses(clause.OnConflict{
			Columns: []clause.Column{{Name: "id"}},
			DoUpdates: clause.AssignmentColumns([]string{
				"provider", "status", "progress", "policy_id", "routing", "routing_history",
				"result", "error_code", "error_message", "worker_id", "revision",
				"processed_at", "completed_at", "updated_at",
			}),
			Where: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "jobs.revision < excluded.revision"}}},
		}).Create(job).Error
	})
}

// UpdateProgress raises a processing job's progress; it never lowers it and
// never touches a job that left processing.
func (s *Store) UpdateProgress(ctx context.Context, id string, progress int) error {
	return s.writeStatement(ctx, func(tx *gorm.DB) error {
		return tx.Model(&Job{}).
			Where("id = ? AND status = ? AND progress < ?", id, StatusProcessing, progress).
			Updates(map[string]any{"progress": progress, "updated_at": time.Now().UTC()}).Error
	})
}

// GetJob reads one job.
func (s *Store) GetJob(ctx context.Context, id string) (*Job, error) {
	var job Job
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&job).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &job, nil
}
