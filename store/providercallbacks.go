package store

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// providerCallbackRow is the live model of provider_callbacks.
type providerCallbackRow struct {
	JobID      string `gorm:"primaryKey"`
	Attempt    int    `gorm:"primaryKey;autoIncrement:false"`
	Body       []byte
	ReceivedAt time.Time
}

func (providerCallbackRow) TableName() string { return "provider_callbacks" }

// SaveProviderCallback keeps what a vendor posted about a job's attempt.
// A later post for the same attempt (a vendor retrying its delivery)
// replaces the earlier one.
func (s *JobStore) SaveProviderCallback(ctx context.Context, jobID string, attempt int, body []byte, at time.Time) error {
	row := providerCallbackRow{JobID: jobID, Attempt: attempt, Body: body, ReceivedAt: at.UTC().Truncate(time.Microsecond)}
	db := s.db.WithContext(ctx)
	err := db.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "job_id"}, {Name: "attempt"}},
		DoUpdates: clause.AssignmentColumns([]string{"body", "received_at"}),
	}).Create(&row).Error
	if err != nil {
		return err
	}
	// A post that arrived as its job was deleted is not kept (docs/api.md,
	// Deleting a job).
	return db.Exec("DELETE FROM provider_callbacks WHERE job_id = ? AND EXISTS (SELECT 1 FROM job_tombstones WHERE id = ?)", jobID, jobID).Error
}

// ProviderCallback returns what a vendor posted about a job's attempt;
// ok is false when nothing was posted yet.
func (s *JobStore) ProviderCallback(ctx context.Context, jobID string, attempt int) (body []byte, ok bool, err error) {
	var row providerCallbackRow
	err = s.db.WithContext(ctx).Where("job_id = ? AND attempt = ?", jobID, attempt).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return row.Body, true, nil
}

// DeleteProviderCallbacksBefore removes what vendors posted before t: by
// then a waiting workflow has read it long ago, or the attempt failed over
// or the job was cancelled. It returns how many it removed.
func (s *JobStore) DeleteProviderCallbacksBefore(ctx context.Context, t time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Where("received_at < ?", t.UTC()).Delete(&providerCallbackRow{})
	return res.RowsAffected, res.Error
}
