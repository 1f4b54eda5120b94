package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ai-job-gateway/gateway/internal/webhooksign"
)

// WebhookDelivery is one attempt to deliver a webhook event: of a job, a
// batch or a tenant's budget (Subject). Every sender records the same
// row (docs/webhooks.md, Delivery log).
type WebhookDelivery struct {
	ID int64 `gorm:"primaryKey;autoIncrement"`
	// Subject is what the event is of: SubjectJob, SubjectBatch or
	// SubjectBudget.
	Subject string `gorm:"column:subject_kind"`
	// JobID is the id of what the event is of: the job's, the batch's,
	// or <tenant>/<budget> (DeliverySubject.ID). The column kept the name
	// it had when only jobs sent webhooks.
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
	// Trigger is what sent the attempt: "" the event's own delivery,
	// TriggerResend or TriggerRecover (docs/webhooks.md).
	Trigger string `gorm:"column:trigger_kind"`
}

// What sent a delivery attempt other than the event's own delivery.
const (
	TriggerResend  = "resend"
	TriggerRecover = "recover"
)

// What a delivery attempt's event is of (WebhookDelivery.Subject).
const (
	// SubjectJob is a job's lifecycle event; rows from before batches and
	// budgets were logged, and those older workers write, are jobs'.
	SubjectJob    = ""
	SubjectBatch  = "batch"
	SubjectBudget = "budget"
)

// TableName is the table of delivery attempts.
func (WebhookDelivery) TableName() string { return "webhook_deliveries" }

// DeliverySubject names what a delivery log is of.
type DeliverySubject struct {
	Kind string
	ID   string
}

// JobDeliveries names a job's delivery log.
func JobDeliveries(id string) DeliverySubject { return DeliverySubject{Kind: SubjectJob, ID: id} }

// BatchDeliveries names the delivery log of a batch's batch.completed
// event.
func BatchDeliveries(id string) DeliverySubject { return DeliverySubject{Kind: SubjectBatch, ID: id} }

// BudgetDeliveries names the delivery log of a tenant's budget's
// budget.threshold events.
func BudgetDeliveries(tenant, budget string) DeliverySubject {
	return DeliverySubject{Kind: SubjectBudget, ID: tenant + "/" + budget}
}

// RecordDelivery records a delivery attempt.
func (s *WebhookStore) RecordDelivery(ctx context.Context, d *WebhookDelivery) error {
	return recordDelivery(s.db.WithContext(ctx), d)
}

func recordDelivery(db *gorm.DB, d *WebhookDelivery) error {
	d.ID = 0
	d.AttemptedAt = d.AttemptedAt.UTC().Truncate(time.Microsecond)
	return db.Create(d).Error
}

// recordSweepAttempt records a's row in subject's delivery log, in the
// transaction tx that records what follows it.
func recordSweepAttempt(tx *gorm.DB, subject DeliverySubject, event string, a webhooksign.Attempt) error {
	return recordDelivery(tx, &WebhookDelivery{Subject: subject.Kind, JobID: subject.ID, Event: event,
		MessageID: a.MessageID, Attempt: a.Number, AttemptedAt: a.At, StatusCode: a.Status, Error: a.LogError(),
		DurationMS: a.Duration.Milliseconds()})
}

// WebhookDeliveries returns the delivery attempts of subject's events,
// oldest first: the one reader of every delivery log.
func (s *WebhookStore) WebhookDeliveries(ctx context.Context, subject DeliverySubject) ([]WebhookDelivery, error) {
	var out []WebhookDelivery
	err := s.db.WithContext(ctx).Where("job_id = ? AND subject_kind = ?", subject.ID, subject.Kind).
		Order("attempted_at, id").Find(&out).Error
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListDeliveries returns a job's delivery attempts, oldest first.
func (s *WebhookStore) ListDeliveries(ctx context.Context, jobID string) ([]WebhookDelivery, error) {
	return s.WebhookDeliveries(ctx, JobDeliveries(jobID))
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
func (s *WebhookStore) SigningKey(ctx context.Context, generate func() ([]byte, error)) ([]byte, error) {
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
