package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// WebhookDelivery is one attempt to deliver a webhook event of a job.
type WebhookDelivery struct {
	ID          int64 `gorm:"primaryKey;autoIncrement"`
	JobID       string
	Event       string
	MessageID   string
	Attempt     int
	AttemptedAt time.Time
	// StatusCode is the receiver's HTTP status; 0 when it gave none
	// (timeout, network error, refused address).
	StatusCode int
	// Error says why the attempt failed; "" when it succeeded.
	Error      string
	DurationMS int64
	// Trigger is what sent the attempt: "" the job's workflow,
	// TriggerResend or TriggerRecover (docs/webhooks.md).
	Trigger string `gorm:"column:trigger_kind"`
}

// What sent a delivery attempt other than the job's workflow.
const (
	TriggerResend  = "resend"
	TriggerRecover = "recover"
)

// TableName is the table of delivery attempts.
func (WebhookDelivery) TableName() string { return "webhook_deliveries" }

// RecordDelivery records a delivery attempt.
func (s *Store) RecordDelivery(ctx context.Context, d *WebhookDelivery) error {
	d.ID = 0
	d.AttemptedAt = d.AttemptedAt.UTC().Truncate(time.Microsecond)
	return s.db.WithContext(ctx).Create(d).Error
}

// ListDeliveries returns a job's delivery attempts, oldest first.
func (s *Store) ListDeliveries(ctx context.Context, jobID string) ([]WebhookDelivery, error) {
	var out []WebhookDelivery
	err := s.db.WithContext(ctx).Where("job_id = ?", jobID).Order("attempted_at, id").Find(&out).Error
	if err != nil {
		return nil, err
	}
	return out, nil
}

type signingKeyRow struct {
	ID        string `gorm:"primaryKey"`
	Seed      string
	CreatedAt time.Time
}

func (signingKeyRow) TableName() string { return "signing_keys" }

// webhookKeyID is the id of the webhook signing key's row.
const webhookKeyID = "webhooks"

// SigningKey returns the webhook signing key (an Ed25519 seed), creating it
// with generate the first time. Processes that race to create it all end
// up with the one key that was stored first.
func (s *Store) SigningKey(ctx context.Context, generate func() ([]byte, error)) ([]byte, error) {
	db := s.db.WithContext(ctx)
	var row signingKeyRow
	err := db.Where("id = ?", webhookKeyID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		seed, gerr := generate()
		if gerr != nil {
			return nil, fmt.Errorf("generate webhook signing key: %w", gerr)
		}
		candidate := signingKeyRow{ID: webhookKeyID, Seed: base64.StdEncoding.EncodeToString(seed), CreatedAt: microsNow()}
		if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&candidate).Error; err != nil {
			return nil, fmt.Errorf("store webhook signing key: %w", err)
		}
		err = db.Where("id = ?", webhookKeyID).Take(&row).Error
	}
	if err != nil {
		return nil, fmt.Errorf("read webhook signing key: %w", err)
	}
	seed, err := base64.StdEncoding.DecodeString(row.Seed)
	if err != nil {
		return nil, fmt.Errorf("webhook signing key in table signing_keys is not base64: %w", err)
	}
	return seed, nil
}
