package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// WebhookMessage is what one webhook message of a job carried: its event
// and the job as of the event without its documents, so a resend rebuilds
// the same body (docs/webhooks.md, Resending and recovering events).
type WebhookMessage struct {
	MessageID string `gorm:"primaryKey"`
	JobID     string
	// Seq numbers the job's messages from 1 (the message id's suffix).
	Seq   int
	Event string
	// Snapshot is the job as of the event, without its documents
	// (jobs.Snapshot.WithoutDocuments), JSON; "" when not known.
	Snapshot  string
	CreatedAt time.Time
	// GivenUpAt is when the delivery was last given up; nil while it was
	// not, or once a resend delivered it.
	GivenUpAt *time.Time
	// RecoveredAt is when a recovery resent it since it was last given
	// up; given up again, it is nil again.
	RecoveredAt *time.Time
}

// TableName is the table of webhook messages.
func (WebhookMessage) TableName() string { return "webhook_messages" }

// Job is the message's snapshot of the job, without its documents.
func (m WebhookMessage) Job() (jobs.Snapshot, error) {
	var s jobs.Snapshot
	err := json.Unmarshal([]byte(m.Snapshot), &s)
	return s, err
}

// NewWebhookMessage is the record of message id of event carrying snap.
func NewWebhookMessage(id, event string, snap jobs.Snapshot) (*WebhookMessage, error) {
	seq, err := MessageSeq(id)
	if err != nil {
		return nil, err
	}
	pin, err := json.Marshal(snap.WithoutDocuments())
	if err != nil {
		return nil, err
	}
	return &WebhookMessage{MessageID: id, JobID: snap.ID, Seq: seq, Event: event, Snapshot: string(pin)}, nil
}

// MessageSeq is the number a message id (<job-id>-<n>) ends in.
func MessageSeq(id string) (int, error) {
	i := strings.LastIndexByte(id, '-')
	n, err := strconv.Atoi(id[i+1:])
	if i < 0 || err != nil || n < 1 {
		return 0, fmt.Errorf("webhook message id %q does not end in -<n>", id)
	}
	return n, nil
}

// RecordWebhookMessage records m, or what m carries now under its message
// id: an operator's retry of a job numbers its messages from 1 again, and
// a resend must send what the latest run sent.
func (s *WebhookStore) RecordWebhookMessage(ctx context.Context, m *WebhookMessage) error {
	m.CreatedAt = microsNow()
	return s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "message_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"event", "snapshot"}),
		Where: clause.Where{Exprs: []clause.Expression{clause.Expr{
			SQL: "webhook_messages.event <> excluded.event OR webhook_messages.snapshot <> excluded.snapshot"}}},
	}).Create(m).Error
}

// WebhookGivenUp records that the delivery of m was given up at at,
// recording m too if it was not; a recovery takes it again.
func (s *WebhookStore) WebhookGivenUp(ctx context.Context, m *WebhookMessage, at time.Time) error {
	at = at.UTC().Truncate(time.Microsecond)
	m.CreatedAt, m.GivenUpAt = microsNow(), &at
	return s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "message_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"event", "snapshot", "given_up_at", "recovered_at"}),
	}).Create(m).Error
}

// WebhookDelivered records that a resend delivered message id: it is no
// longer given up.
func (s *WebhookStore) WebhookDelivered(ctx context.Context, id string) error {
	return s.db.WithContext(ctx).Model(&WebhookMessage{}).
		Where("message_id = ? AND given_up_at IS NOT NULL", id).Update("given_up_at", nil).Error
}

// WebhookMessages are the recorded messages of a job, in order.
func (s *WebhookStore) WebhookMessages(ctx context.Context, jobID string) ([]WebhookMessage, error) {
	var out []WebhookMessage
	err := s.db.WithContext(ctx).Where("job_id = ?", jobID).Order("seq").Find(&out).Error
	return out, err
}

// GivenUpFilter selects given-up webhook messages for a recovery.
type GivenUpFilter struct {
	// Since and Until (zero: no end) bound when the delivery was given up.
	Since, Until time.Time
	// Tenant, if set, selects that tenant's jobs.
	Tenant string
	// Limit caps how many messages are returned (0: no cap).
	Limit int
}

// GivenUpWebhooks are the messages whose delivery was given up in f's
// window and not resent by a recovery since, by job, in order.
func (s *WebhookStore) GivenUpWebhooks(ctx context.Context, f GivenUpFilter) ([]WebhookMessage, error) {
	q := s.db.WithContext(ctx).Table("webhook_messages AS m").Select("m.*").
		Where("m.given_up_at IS NOT NULL AND m.given_up_at >= ?", f.Since.UTC()).
		Where("m.recovered_at IS NULL")
	if !f.Until.IsZero() {
		q = q.Where("m.given_up_at < ?", f.Until.UTC())
	}
	if f.Tenant != "" {
		q = q.Joins("JOIN jobs ON jobs.id = m.job_id").Where("jobs.tenant = ?", f.Tenant)
	}
	if f.Limit > 0 {
		q = q.Limit(f.Limit)
	}
	var out []WebhookMessage
	err := q.Order("m.job_id, m.seq").Find(&out).Error
	return out, err
}

// ClaimWebhookRecovery marks the messages ids as resent by a recovery at
// at, each only if no other recovery took it since it was given up, and
// returns those it marked, in the order given: concurrent recoveries send
// a message once.
func (s *WebhookStore) ClaimWebhookRecovery(ctx context.Context, ids []string, at time.Time) ([]string, error) {
	at = at.UTC().Truncate(time.Microsecond)
	var claimed []string
	err := s.write(ctx, func(tx *gorm.DB) error {
		claimed = nil
		for _, id := range ids {
			res := tx.Model(&WebhookMessage{}).Where("message_id = ? AND recovered_at IS NULL", id).Update("recovered_at", at)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 1 {
				claimed = append(claimed, id)
			}
		}
		return nil
	})
	return claimed, err
}

// ReleaseWebhookRecovery gives back messages a recovery claimed and could
// not send: the next recovery takes them.
func (s *WebhookStore) ReleaseWebhookRecovery(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return s.db.WithContext(ctx).Model(&WebhookMessage{}).Where("message_id IN ?", ids).Update("recovered_at", nil).Error
}
