package store

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
)

// Batch is a batch of jobs one request created (docs/api.md, Batches).
// Its counts are its jobs' (BatchCounts).
type Batch struct {
	// ID is derived from the tenant and the request's Idempotency-Key.
	ID          string `gorm:"primaryKey"`
	Tenant      string
	UserID      string
	Application string
	// Fingerprint is what the Idempotency-Key stands for (the user, the
	// application and the body).
	Fingerprint string
	// Services are the services of its jobs, space-separated.
	Services string
	// Total is how many jobs it created.
	Total int
	// Refused is the items refused, as the API listed them (JSON).
	Refused string
	// Webhook is where batch.completed goes (a jobs.Webhook, JSON); ""
	// without one.
	Webhook           string
	CreatedAt         time.Time
	CancelRequestedAt *time.Time
	// CompletedAt is set once every job finished (FinishBatches).
	CompletedAt *time.Time
	// WebhookState is "" without a webhook or before the batch finished,
	// then a NotificationPending, NotificationDelivered or
	// NotificationFailed; its attempts are in the batch's delivery log
	// (BatchDeliveries).
	WebhookState         string
	WebhookAttempts      int
	WebhookNextAttemptAt *time.Time
	UpdatedAt            time.Time

	// State is BatchValidating while a file batch's items are read,
	// BatchFailed when its file refused it, else "".
	State string
	// IdempotencyKey names a file batch's jobs, as it names the batch.
	IdempotencyKey string
	// InputFileURL is the JSONL file of a file batch's items.
	InputFileURL string
	Atomic       bool
	// Writable are the services whose jobs the creator may create,
	// space-separated: a file batch's items are checked against them.
	Writable string
	// ItemsRead is how many of a file's items were recorded or refused.
	ItemsRead int
	// RefusedCount is how many of a file's items were refused
	// (BatchRefusals).
	RefusedCount int
	// ErrorCode and ErrorMessage say why a file batch failed.
	ErrorCode    string
	ErrorMessage string
}

// File batch states (docs/api.md, Batches).
const (
	BatchValidating = "validating"
	BatchFailed     = "failed"
)

// BatchRefusal is a refused item of a file batch.
type BatchRefusal struct {
	BatchID string `gorm:"primaryKey"`
	// Item is its index among the file's items, from 0; Line its line,
	// from 1.
	Item     int `gorm:"primaryKey;autoIncrement:false"`
	Line     int
	CustomID string
	Status   int
	Code     string
	Message  string
}

// TableName is the table refused items live in.
func (BatchRefusal) TableName() string { return "batch_refusals" }

// TableName is the table batches live in.
func (Batch) TableName() string { return "batches" }

// batchInsertSize is how many rows one INSERT of CreateBatch carries,
// below both databases' limits on bound parameters.
const batchInsertSize = 250

// CreateBatch records a batch with its jobs and their starts in one
// transaction. It returns false, and writes nothing, when a batch with its
// id exists already (the same Idempotency-Key). Under limits, it records
// them only when each limit's jobs in flight and the batch's are at most
// its Max, else it returns an *InFlightError.
func (s *BatchStore) CreateBatch(ctx context.Context, b *Batch, records []*jobs.Record, starts []*JobStart, limits ...InFlightLimit) (bool, error) {
	b.CreatedAt = b.CreatedAt.UTC().Truncate(time.Microsecond)
	b.UpdatedAt = b.CreatedAt
	for i, job := range records {
		job.BatchID = b.ID
		starts[i].JobID, starts[i].Tenant = job.ID, job.Tenant
		starts[i].NextAttemptAt = starts[i].NextAttemptAt.UTC().Truncate(time.Microsecond)
		starts[i].CreatedAt = job.CreatedAt.UTC().Truncate(time.Microsecond)
	}
	created := false
	err := s.write(ctx, func(tx *gorm.DB) error {
		created = false
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(b)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		// Under limits, the batch's jobs must all fit (it is admitted
		// whole); the batch row goes with the transaction otherwise.
		for _, limit := range limits {
			n, err := s.inFlight(tx, limit)
			if err != nil {
				return err
			}
			if n+int64(len(records)) > int64(limit.Max) {
				return &InFlightError{Limit: limit, InFlight: n}
			}
		}
		if len(records) > 0 {
			if err := tx.CreateInBatches(records, batchInsertSize).Error; err != nil {
				return err
			}
			if err := tx.CreateInBatches(starts, batchInsertSize).Error; err != nil {
				return err
			}
		}
		created = true
		return nil
	})
	return created, err
}

// RecordBatchItems records the items from to to of file batch id: the
// jobs admitted with their starts, and the items refused, in one
// transaction that moves ItemsRead from from to to and adds services to
// the batch's. It returns false, writing nothing, when ItemsRead is not
// from (another run of the reading went on), the batch is no longer
// validating, or its cancel was asked for. A job recorded before is
// skipped.
func (s *BatchStore) RecordBatchItems(ctx context.Context, id string, from, to int, services string, records []*jobs.Record, starts []*JobStart, refused []BatchRefusal) (bool, error) {
	now := microsNow()
	for i, job := range records {
		job.BatchID = id
		starts[i].JobID, starts[i].Tenant = job.ID, job.Tenant
		starts[i].NextAttemptAt = starts[i].NextAttemptAt.UTC().Truncate(time.Microsecond)
		starts[i].CreatedAt = job.CreatedAt.UTC().Truncate(time.Microsecond)
	}
	for i := range refused {
		refused[i].BatchID = id
	}
	recorded := false
	err := s.write(ctx, func(tx *gorm.DB) error {
		recorded = false
		res := tx.Model(&Batch{}).Where("id = ? AND items_read = ? AND state = ? AND cancel_requested_at IS NULL", id, from, BatchValidating).
			Updates(map[string]any{"items_read": to, "total": gorm.Expr("total + ?", len(records)),
				"refused_count": gorm.Expr("refused_count + ?", len(refused)), "services": services, "updated_at": now})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		ignore := tx.Clauses(clause.OnConflict{DoNothing: true})
		if len(records) > 0 {
			if err := ignore.CreateInBatches(records, batchInsertSize).Error; err != nil {
				return err
			}
			if err := ignore.CreateInBatches(starts, batchInsertSize).Error; err != nil {
				return err
			}
		}
		if len(refused) > 0 {
			if err := ignore.CreateInBatches(refused, batchInsertSize).Error; err != nil {
				return err
			}
		}
		recorded = true
		return nil
	})
	return recorded, err
}

// EndBatchFile ends the reading of file batch id: with code "" its jobs
// run as any batch's, else it failed with code and message, refused being
// its refused items (none of its items was recorded then).
func (s *BatchStore) EndBatchFile(ctx context.Context, id, code, message string, refused []BatchRefusal) error {
	state := ""
	if code != "" {
		state = BatchFailed
	}
	for i := range refused {
		refused[i].BatchID = id
	}
	return s.write(ctx, func(tx *gorm.DB) error {
		updates := map[string]any{"state": state, "error_code": code, "error_message": message, "updated_at": microsNow()}
		if len(refused) > 0 {
			updates["refused_count"] = len(refused)
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(refused, batchInsertSize).Error; err != nil {
				return err
			}
		}
		return tx.Model(&Batch{}).Where("id = ? AND state = ?", id, BatchValidating).Updates(updates).Error
	})
}

// BatchRefusals reads up to limit of a file batch's refused items after
// item after, in order.
func (s *BatchStore) BatchRefusals(ctx context.Context, id string, after, limit int) ([]BatchRefusal, error) {
	var out []BatchRefusal
	err := s.db.WithContext(ctx).Where("batch_id = ? AND item > ?", id, after).Order("item").Limit(limit).Find(&out).Error
	return out, err
}

// GetBatch reads one batch.
func (s *BatchStore) GetBatch(ctx context.Context, id string) (*Batch, error) {
	return take[Batch](s.db.WithContext(ctx).Where("id = ?", id))
}

// BatchCounts counts a batch's jobs by status.
func (s *BatchStore) BatchCounts(ctx context.Context, id string) (map[jobs.Status]int, error) {
	var rows []struct {
		Status jobs.Status
		N      int
	}
	err := s.db.WithContext(ctx).Table("jobs").Select("status, COUNT(*) AS n").
		Where("batch_id = ?", id).Group("status").Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	out := make(map[jobs.Status]int, len(rows))
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// LastBatchCompletion is when the last of a batch's jobs finished; nil
// when none did.
func (s *BatchStore) LastBatchCompletion(ctx context.Context, id string) (*time.Time, error) {
	var rows []jobs.Record
	err := s.db.WithContext(ctx).Select("completed_at").Where("batch_id = ? AND completed_at IS NOT NULL", id).
		Order("completed_at DESC").Limit(1).Find(&rows).Error
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return rows[0].CompletedAt, nil
}

// BatchJobs reads up to limit of a batch's jobs with an id after after,
// in id order: the finished ones, or those not finished.
func (s *BatchStore) BatchJobs(ctx context.Context, id string, finished bool, after string, limit int) ([]jobs.Record, error) {
	statuses := []jobs.Status{jobs.StatusPending, jobs.StatusProcessing}
	if finished {
		statuses = []jobs.Status{jobs.StatusCompleted, jobs.StatusFailed}
	}
	var out []jobs.Record
	err := s.db.WithContext(ctx).Where("batch_id = ? AND status IN ? AND id > ?", id, statuses, after).
		Order("id").Limit(limit).Find(&out).Error
	return out, err
}

// RequestBatchCancel records that a batch's cancellation was asked for, at
// now unless it was before, and returns the batch.
func (s *BatchStore) RequestBatchCancel(ctx context.Context, id string, now time.Time) (*Batch, error) {
	now = now.UTC().Truncate(time.Microsecond)
	err := s.db.WithContext(ctx).Model(&Batch{}).Where("id = ? AND cancel_requested_at IS NULL", id).
		Updates(map[string]any{"cancel_requested_at": now, "updated_at": now}).Error
	if err != nil {
		return nil, err
	}
	return s.GetBatch(ctx, id)
}

// FailUnstartedBatchJobs fails, with code and message, the jobs of a batch
// whose workflow no dispatcher has taken: pending, with a start in the
// outbox that is due (a start being made holds a lease). Each start leaves
// the outbox in the same transaction. It returns how many jobs it failed.
func (s *BatchStore) FailUnstartedBatchJobs(ctx context.Context, id, code, message string, now time.Time) (int, error) {
	failed := 0
	for {
		// A chunk a transaction: a large batch's cancel stays within a
		// transaction's deadline and does not hold SQLite's writer long.
		var ids []string
		err := s.write(ctx, func(tx *gorm.DB) error {
			ids = nil
			q := tx.Table("job_starts").Select("job_starts.job_id").
				Joins("JOIN jobs ON jobs.id = job_starts.job_id").
				Where("jobs.batch_id = ? AND jobs.status = ? AND job_starts.next_attempt_at <= ?", id, jobs.StatusPending, now.UTC()).
				Limit(cancelChunk)
			if s.dialect == "postgres" {
				// Starts a dispatcher is claiming are skipped: they start.
				q = q.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate, Table: clause.Table{Name: "job_starts"},
					Options: clause.LockingOptionsSkipLocked})
			}
			if err := q.Pluck("job_starts.job_id", &ids).Error; err != nil {
				return err
			}
			for _, jobID := range ids {
				if err := s.failPending(tx, jobID, code, message, now); err != nil {
					return err
				}
			}
			return tx.Where("job_id IN ?", ids).Delete(&JobStart{}).Error
		})
		if err != nil {
			return failed, err
		}
		failed += len(ids)
		if len(ids) < cancelChunk {
			return failed, nil
		}
	}
}

// cancelChunk is how many unstarted jobs of a batch one transaction fails.
const cancelChunk = 200

// FinishBatches marks the open batches whose jobs all finished as
// completed, at their last job's completion, and queues the batch.completed
// event of those with a webhook, due at now (webhook_state pending; the
// due time of the others is never read). It returns how many it marked.
func (s *BatchStore) FinishBatches(ctx context.Context, now time.Time) (int64, error) {
	now = now.UTC().Truncate(time.Microsecond)
	res := s.db.WithContext(ctx).Exec(`UPDATE batches SET
		completed_at = COALESCE((SELECT MAX(jobs.completed_at) FROM jobs WHERE jobs.batch_id = batches.id), ?),
		webhook_state = CASE WHEN webhook <> '' THEN ? ELSE '' END,
		webhook_next_attempt_at = ?,
		updated_at = ?
		WHERE completed_at IS NULL AND state <> ? AND NOT EXISTS (SELECT 1 FROM jobs
			WHERE jobs.batch_id = batches.id AND jobs.status IN (?, ?))`,
		now, NotificationPending, now, now, BatchValidating, jobs.StatusPending, jobs.StatusProcessing)
	return res.RowsAffected, res.Error
}

// DueBatchWebhooks lists up to limit batches whose batch.completed event
// is due at now, oldest first.
func (s *BatchStore) DueBatchWebhooks(ctx context.Context, now time.Time, limit int) ([]Batch, error) {
	var out []Batch
	err := s.db.WithContext(ctx).Where("webhook_state = ? AND webhook_next_attempt_at <= ?", NotificationPending, now.UTC()).
		Order("webhook_next_attempt_at").Limit(limit).Find(&out).Error
	return out, err
}

// BatchCompletedEvent is the event of a batch whose jobs all finished.
const BatchCompletedEvent = "batch.completed"

// RecordBatchWebhook records attempt a at batch id's batch.completed
// event: what state it leaves the event in, and a's row in the batch's
// delivery log (BatchDeliveries), in one transaction.
func (s *BatchStore) RecordBatchWebhook(ctx context.Context, id string, a webhooksign.Attempt) error {
	state := NotificationState(a)
	updates := map[string]any{"webhook_state": state, "webhook_attempts": gorm.Expr("webhook_attempts + 1"),
		"updated_at": microsNow()}
	if state == NotificationPending {
		updates["webhook_next_attempt_at"] = a.Next.UTC()
	}
	return s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&Batch{}).Where("id = ? AND webhook_state = ?", id, NotificationPending).Updates(updates)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		return recordSweepAttempt(tx, BatchDeliveries(id), BatchCompletedEvent, a)
	})
}
