package store

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ErrIdempotencyKeyReused is returned when a live key was claimed by a
// request with another fingerprint.
var ErrIdempotencyKeyReused = errors.New("idempotency key reused with a different request")

// IdempotencyKey maps a client's Idempotency-Key, per tenant and service,
// to the job it created and the fingerprint of the request that created it.
type IdempotencyKey struct {
	Tenant  string `gorm:"primaryKey"`
	Service string `gorm:"primaryKey"`
	Key     string `gorm:"primaryKey"`
	// Fingerprint is empty on keys claimed before fingerprints were
	// recorded; such a key matches any request.
	Fingerprint string
	JobID       string
	CreatedAt   time.Time
}

// idempotencyDeleteBatch is how many expired keys one statement deletes,
// so a backlog never makes one long statement.
var idempotencyDeleteBatch = 5000

// DeleteIdempotencyKeysBefore deletes the keys claimed before t, which no
// longer stand for their job (docs/api.md, Cancel and idempotency), a
// batch at a time, and returns how many it deleted. A worker's
// housekeeping runs it.
func (s *JobStore) DeleteIdempotencyKeysBefore(ctx context.Context, t time.Time) (int64, error) {
	var total int64
	for {
		db := s.db.WithContext(ctx)
		expired := db.Model(&IdempotencyKey{}).Select("tenant, service, key").
			Where("created_at < ?", t.UTC()).Limit(idempotencyDeleteBatch)
		res := db.Where("(tenant, service, key) IN (?)", expired).Delete(&IdempotencyKey{})
		total += res.RowsAffected
		if res.Error != nil || res.RowsAffected < int64(idempotencyDeleteBatch) {
			return total, res.Error
		}
	}
}

// ClaimIdempotencyKey binds (k.Tenant, k.Service, k.Key) to k.JobID and
// k.Fingerprint unless a binding younger than ttl exists; it returns the
// job id the key stands for and whether this call claimed it. A live
// binding with another, non-empty fingerprint is ErrIdempotencyKeyReused.
// An expired binding is taken over. k.CreatedAt is the time of the claim.
func (s *JobStore) ClaimIdempotencyKey(ctx context.Context, k IdempotencyKey, ttl time.Duration) (string, bool, error) {
	db := s.db.WithContext(ctx)
	now := k.CreatedAt.UTC()
	record := k
	record.CreatedAt = now
	res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&record)
	if res.Error != nil {
		return "", false, res.Error
	}
	if res.RowsAffected == 1 {
		return k.JobID, true, nil
	}
	var existing IdempotencyKey
	err := db.Where("tenant = ? AND service = ? AND key = ?", k.Tenant, k.Service, k.Key).Take(&existing).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		// Deleted between the two statements: claim again.
		return s.ClaimIdempotencyKey(ctx, k, ttl)
	}
	if err != nil {
		return "", false, err
	}
	if now.Sub(existing.CreatedAt) < ttl {
		if existing.Fingerprint != "" && existing.Fingerprint != k.Fingerprint {
			return "", false, ErrIdempotencyKeyReused
		}
		return existing.JobID, false, nil
	}
	// Take over the expired key, unless another request just did.
	res = db.Model(&IdempotencyKey{}).
		Where("tenant = ? AND service = ? AND key = ? AND job_id = ?", k.Tenant, k.Service, k.Key, existing.JobID).
		Updates(map[string]any{"job_id": k.JobID, "fingerprint": k.Fingerprint, "created_at": now})
	if res.Error != nil {
		return "", false, res.Error
	}
	if res.RowsAffected == 0 {
		return s.ClaimIdempotencyKey(ctx, k, ttl)
	}
	return k.JobID, true, nil
}
