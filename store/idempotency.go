package store

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// IdempotencyKey maps a client's Idempotency-Key to the job it created.
type IdempotencyKey struct {
	Tenant    string `gorm:"primaryKey"`
	Key       string `gorm:"primaryKey"`
	JobID     string
	CreatedAt time.Time
}

// ClaimIdempotencyKey binds (tenant, key) to jobID unless a binding younger
// than ttl exists; it returns the job id the key stands for and whether
// this call claimed it. An expired binding is taken over.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, tenant, key, jobID string, now time.Time, ttl time.Duration) (string, bool, error) {
	db := s.db.WithContext(ctx)
	record := IdempotencyKey{Tenant: tenant, Key: key, JobID: jobID, CreatedAt: now.UTC()}
	res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&record)
	if res.Error != nil {
		return "", false, res.Error
	}
	if res.RowsAffected == 1 {
		return jobID, true, nil
	}
	var existing IdempotencyKey
	err := db.Where("tenant = ? AND key = ?", tenant, key).Take(&existing).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		// Deleted between the two statements: claim again.
		return s.ClaimIdempotencyKey(ctx, tenant, key, jobID, now, ttl)
	}
	if err != nil {
		return "", false, err
	}
	if now.Sub(existing.CreatedAt) < ttl {
		return existing.JobID, false, nil
	}
	// Take over the expired key, unless another request just did.
	res = db.Model(&IdempotencyKey{}).
		Where("tenant = ? AND key = ? AND job_id = ?", tenant, key, existing.JobID).
		Updates(map[string]any{"job_id": jobID, "created_at": now.UTC()})
	if res.Error != nil {
		return "", false, res.Error
	}
	if res.RowsAffected == 0 {
		return s.ClaimIdempotencyKey(ctx, tenant, key, jobID, now, ttl)
	}
	return jobID, true, nil
}
