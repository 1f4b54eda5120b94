package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// OpenJob is a job the store holds as not ended (pending or processing)
// whose start is not in the outbox: its workflow was started, or should
// have been. The reconciliation sweep checks it against Temporal
// (docs/operations.md, Housekeeping).
type OpenJob struct {
	ID        string
	Status    jobs.Status
	Service   jobs.ServiceID
	CreatedAt time.Time
}

// OpenJobCursor is where a walk of OpenJobs left off: the last job taken,
// by creation time and id. The zero cursor starts from the oldest.
type OpenJobCursor struct {
	CreatedAt time.Time
	ID        string
}

// OpenJobs returns up to limit open jobs created before before and after
// the cursor, oldest first, and the cursor of the next call: after the
// last job returned, or the zero cursor once the walk reached the end.
// Each status is read along idx_jobs_status_created (PostgreSQL; SQLite
// walks idx_jobs_created), and jobs whose start waits in the outbox are
// left out: they are pending by design.
func (s *JobStore) OpenJobs(ctx context.Context, before time.Time, after OpenJobCursor, limit int) ([]OpenJob, OpenJobCursor, error) {
	before = before.UTC().Truncate(time.Microsecond)
	afterAt := after.CreatedAt.UTC().Truncate(time.Microsecond)
	var out []OpenJob
	for _, status := range []jobs.Status{jobs.StatusPending, jobs.StatusProcessing} {
		var rows []OpenJob
		err := s.db.WithContext(ctx).Model(&jobs.Record{}).Select("id, status, service, created_at").
			Where("status = ? AND created_at < ?", status, before).
			Where("created_at > ? OR (created_at = ? AND id > ?)", afterAt, afterAt, after.ID).
			Where("NOT EXISTS (SELECT 1 FROM job_starts WHERE job_starts.job_id = jobs.id)").
			Order("created_at, id").Limit(limit).Scan(&rows).Error
		if err != nil {
			return nil, after, err
		}
		out = append(out, rows...)
	}
	slices.SortFunc(out, func(a, b OpenJob) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if len(out) < limit {
		return out, OpenJobCursor{}, nil
	}
	out = out[:limit]
	last := out[len(out)-1]
	return out, OpenJobCursor{CreatedAt: last.CreatedAt, ID: last.ID}, nil
}

// FailOpenJob fails job jobID if it is still pending or processing: with
// code and message, completed at at, its budget reservations released and
// its event recorded, in one transaction. With webhookEvent (the job's
// *.failed event) it also records, in that transaction, the job's webhook
// message of the failure, numbered after the job's last message recorded
// or attempted: UnsentReconciledWebhooks finds it until a delivery is
// attempted, so that a send lost after the commit is made again. It
// returns the job as failed, without its documents, and the message, or
// nils when the job was not open any more.
func (s *JobStore) FailOpenJob(ctx context.Context, jobID, code, message string, at time.Time, webhookEvent string) (*jobs.Record, *WebhookMessage, error) {
	at = at.UTC().Truncate(time.Microsecond)
	var failed *jobs.Record
	var sent *WebhookMessage
	err := s.write(ctx, func(tx *gorm.DB) error {
		failed, sent = nil, nil
		var job jobs.Record
		res := tx.Model(&job).Clauses(clause.Returning{Columns: eventColumns}).
			Where("id = ? AND status IN ?", jobID, []jobs.Status{jobs.StatusPending, jobs.StatusProcessing}).
			Updates(map[string]any{
				"status":        jobs.StatusFailed,
				"error_code":    code,
				"error_message": message,
				"waiting":       "",
				"completed_at":  at,
				"updated_at":    time.Now().UTC(),
				"revision":      gorm.Expr("revision + 1"),
			})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		// Its workflow will not settle what it reserved: given back, as
		// for a job failed before it ran.
		if err := s.closeReservations(tx, jobID, reservationReleased, releasedAmount); err != nil {
			return err
		}
		if err := appendJobEvent(tx, &job); err != nil {
			return err
		}
		if webhookEvent != "" {
			m, err := failureMessage(tx, &job, webhookEvent, at)
			if err != nil {
				return err
			}
			if err := tx.Create(m).Error; err != nil {
				return err
			}
			sent = m
		}
		failed = &job
		return nil
	})
	return failed, sent, err
}

// failureMessage is the webhook message of job's failure: numbered after
// the job's last message recorded or attempted, created at at (the job's
// completed_at: UnsentReconciledWebhooks tells it from the job's own
// messages so).
func failureMessage(tx *gorm.DB, job *jobs.Record, event string, at time.Time) (*WebhookMessage, error) {
	var seqs []int
	if err := tx.Model(&WebhookMessage{}).Where("job_id = ?", job.ID).Pluck("seq", &seqs).Error; err != nil {
		return nil, err
	}
	var attempted []string
	if err := tx.Model(&WebhookDelivery{}).Where("job_id = ?", job.ID).Pluck("message_id", &attempted).Error; err != nil {
		return nil, err
	}
	last := 0
	for _, seq := range seqs {
		last = max(last, seq)
	}
	for _, id := range attempted {
		if seq, err := MessageSeq(id); err == nil {
			last = max(last, seq)
		}
	}
	snap, err := job.Snapshot()
	if err != nil {
		return nil, err
	}
	m, err := NewWebhookMessage(fmt.Sprintf("%s-%d", job.ID, last+1), event, snap)
	if err != nil {
		return nil, err
	}
	m.CreatedAt = at
	return m, nil
}

// UnsentReconciledWebhooks are the messages FailOpenJob recorded for jobs
// it failed WORKFLOW_CLOSED at or after since and still failed so, with no
// delivery attempt recorded yet, oldest first, at most limit: their send
// was lost, or has not begun (docs/operations.md, Housekeeping).
func (s *JobStore) UnsentReconciledWebhooks(ctx context.Context, since time.Time, limit int) ([]WebhookMessage, error) {
	var out []WebhookMessage
	// The code is written out, not bound, so that PostgreSQL plans with
	// idx_jobs_workflow_closed (a partial index) whatever the plan cache.
	err := s.db.WithContext(ctx).Table("jobs AS j").Select("m.*").
		Joins("JOIN webhook_messages AS m ON m.job_id = j.id AND m.created_at = j.completed_at").
		Where("j.error_code = '"+jobs.CodeWorkflowClosed+"' AND j.completed_at >= ? AND j.status = ?", since.UTC(), jobs.StatusFailed).
		Where("NOT EXISTS (SELECT 1 FROM webhook_deliveries AS d WHERE d.job_id = m.job_id AND d.message_id = m.message_id)").
		Order("j.completed_at, m.message_id").Limit(limit).Find(&out).Error
	return out, err
}
