package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// SaveJob writes the whole projection of a job, creating it when missing,
// unless the stored record already has the same or a higher revision, or
// is the same finish whose result expired (a late write must not bring it
// back; a later run's finish, after a retry, lands). A write that lands
// and reports an event records it in the same transaction (docs/api.md,
// Following a job live).
func (s *JobStore) SaveJob(ctx context.Context, job *jobs.Record) error {
	job.UpdatedAt = time.Now().UTC()
	if jobs.EventOf(job) == "" {
		return s.writeStatement(ctx, func(tx *gorm.DB) error { return saveJob(tx, job) })
	}
	if s.dialect == "postgres" {
		if done, err := s.projectInOneStatement(ctx, job, nil); done || err != nil {
			return err
		}
	}
	return s.write(ctx, func(tx *gorm.DB) error { return saveJob(tx, job) })
}

// projectInOneStatement is, on PostgreSQL, saveJob's UPDATE with the
// job's event and, given one, its ledger entry, in one statement that
// commits alone: one round trip where a transaction takes four or five
// (docs/benchmarks.md). It reports whether it wrote the projection; when
// it did not, the caller's transaction decides. That is when the UPDATE
// matched nothing (the entry may have been written: the transaction's
// keeps it), and when another write of the job committed an event while
// this one waited for the row: the statement's snapshot predates it, so
// its event number is taken, and nothing was written.
//
// The UPDATE is GORM's own (a DryRun of saveJob's Updates, so the two
// paths write the same columns the same way); the event and the ledger
// entry are plain SQL whose numbered parameters follow the UPDATE's.
func (s *conn) projectInOneStatement(ctx context.Context, job *jobs.Record, entry *UsageEntry) (bool, error) {
	dry := s.db.Session(&gorm.Session{DryRun: true})
	update := projectionUpdate(dry, job).Updates(job).Statement
	if update.Error != nil {
		return false, update.Error
	}
	// GORM numbers each statement's parameters from $1; the ones after
	// the UPDATE's follow its.
	q := "WITH updated AS (" + update.SQL.String() + " RETURNING id)"
	args := slices.Clone(update.Vars)
	if kind := jobs.EventOf(job); kind != "" {
		pin, err := eventSnapshot(job)
		if err != nil {
			return false, err
		}
		n := len(args)
		q += fmt.Sprintf(", event AS (INSERT INTO job_events (job_id, seq, kind, snapshot, created_at) "+
			"SELECT u.id, (SELECT COALESCE(MAX(e.seq), 0) + 1 FROM job_events e WHERE e.job_id = u.id), "+
			"CAST($%d AS TEXT), CAST($%d AS TEXT), CAST($%d AS TIMESTAMPTZ) FROM updated u)", n+1, n+2, n+3)
		args = append(args, string(kind), pin, microsNow())
	}
	if entry != nil {
		q += ", entry AS (" + usageInsert(len(args)) + ")"
		args = append(args, entry.JobID, entry.Attempt, entry.Tenant, entry.Application, entry.APIKey, string(entry.Service), entry.Provider,
			entry.Unit, entry.Quantity, entry.Native, entry.CostNanos, entry.Currency, entry.PriceVersion, entry.Estimated, entry.BilledAt)
	}
	q += " SELECT COUNT(*) FROM updated"
	var updated int64
	err := s.writeStatement(ctx, func(tx *gorm.DB) error {
		return tx.Raw(q, args...).Scan(&updated).Error
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == uniqueViolation {
		return false, nil // an event number taken meanwhile
	}
	return updated > 0, err
}

// uniqueViolation is PostgreSQL's error code of a duplicate key.
const uniqueViolation = "23505"

// usageInsert is the ledger entry's INSERT, written out in plain SQL so
// that its parameters can follow the UPDATE's: GORM numbers each
// statement's from $1. Its arguments are those projectInOneStatement
// appends, in this order.
func usageInsert(after int) string {
	columns := []string{"job_id", "attempt", "tenant", "application", "api_key", "service", "provider",
		"unit", "quantity", "native", "cost_nanos", "currency", "price_version", "estimated", "billed_at"}
	values := make([]string, len(columns))
	for i := range columns {
		values[i] = "$" + strconv.Itoa(after+i+1)
	}
	return "INSERT INTO usage_ledger (" + strings.Join(columns, ", ") + ") VALUES (" + strings.Join(values, ", ") + ") ON CONFLICT DO NOTHING"
}

// saveJob is SaveJob's statement, and its event when it landed. The job's
// row exists from its create on, so the projection is an UPDATE of the
// columns a job's run changes. When it matched no row (the row is missing
// or was deleted, holds a newer revision, or holds an expired result of
// the same completion) the upsert decides, as it did alone before: it
// writes a missing row unless the job was deleted (the jobs_stay_deleted
// trigger), and nothing otherwise. GORM sets UpdatedAt to now on the
// UPDATE, as SaveJob does.
func saveJob(tx *gorm.DB, job *jobs.Record) error {
	res := projectionUpdate(tx, job).Updates(job)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		res = tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "id"}},
			DoUpdates: clause.AssignmentColumns(projectedColumns),
			Where: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "jobs.revision < excluded.revision AND " +
				"(jobs.result_expired_at IS NULL OR excluded.completed_at IS NULL OR excluded.completed_at <> jobs.completed_at)"}}},
		}).Create(job)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
	}
	return appendJobEvent(tx, job)
}

// projectionUpdate is saveJob's UPDATE of the job's row, ready for
// Updates(job): the projected columns, unless the row holds the same or a
// newer revision.
func projectionUpdate(tx *gorm.DB, job *jobs.Record) *gorm.DB {
	update := tx.Model(job).Select(projectedColumns).Where("revision < ?", job.Revision)
	if job.CompletedAt != nil {
		// A result that expired stays expired unless the job completed again.
		update = update.Where("(result_expired_at IS NULL OR completed_at <> ?)", *job.CompletedAt)
	}
	return update
}

// projectedColumns are the columns of a job that its run changes, which a
// projection writes.
var projectedColumns = []string{
	"provider", "status", "progress", "policy_id", "routing", "routing_history",
	"result", "result_file", "error_code", "error_message", "worker_id", "revision",
	"processed_at", "completed_at", "updated_at", "result_expired_at", "usage", "waiting",
}

// UpdateProgress raises a processing job's progress; it never lowers it and
// never touches a job that left processing. A raise records a progress
// event in the same transaction (docs/api.md, Following a job live).
func (s *JobStore) UpdateProgress(ctx context.Context, id string, progress int) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		var job jobs.Record
		res := tx.Model(&job).Clauses(clause.Returning{Columns: eventColumns}).
			Where("id = ? AND status = ? AND progress < ?", id, jobs.StatusProcessing, progress).
			Updates(map[string]any{"progress": progress, "updated_at": time.Now().UTC()})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		return appendJobEvent(tx, &job)
	})
}

// GetJob reads one job.
func (s *JobStore) GetJob(ctx context.Context, id string) (*jobs.Record, error) {
	return take[jobs.Record](s.db.WithContext(ctx).Where("id = ?", id))
}

// take reads the one row q selects; ErrNotFound when there is none.
func take[T any](q *gorm.DB) (*T, error) {
	var row T
	err := q.Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &row, nil
}

// JobState is what changes of a job as it runs: its status, progress and
// last write.
type JobState struct {
	ID        string
	Status    jobs.Status
	Progress  int
	UpdatedAt time.Time
}

// jobStatesChunk bounds the ids of one JobStates query, below SQLite's
// and PostgreSQL's limits on bound parameters.
const jobStatesChunk = 10_000

// JobStates reads the state of each of ids the store holds, in one query
// (one per 10,000 ids); ids it holds no job of are absent from the map.
func (s *JobStore) JobStates(ctx context.Context, ids []string) (map[string]JobState, error) {
	out := make(map[string]JobState, len(ids))
	for start := 0; start < len(ids); start += jobStatesChunk {
		chunk := ids[start:min(start+jobStatesChunk, len(ids))]
		var rows []JobState
		if err := s.db.WithContext(ctx).Model(&jobs.Record{}).
			Select("id", "status", "progress", "updated_at").
			Where("id IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.ID] = r
		}
	}
	return out, nil
}
