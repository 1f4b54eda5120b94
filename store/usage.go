package store

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// UsageEntry is one billed job attempt in the usage ledger (docs/api.md,
// Usage and cost). It outlives the job: deleting a job keeps its entries.
type UsageEntry struct {
	JobID       string `gorm:"primaryKey"`
	Attempt     int    `gorm:"primaryKey;autoIncrement:false"`
	Tenant      string
	Application string
	// APIKey is the id of the API key that created the job, "" for a
	// token's job (docs/api.md, Usage report).
	APIKey   string `gorm:"column:api_key"`
	Service  jobs.ServiceID
	Provider string
	Unit     string
	Quantity float64
	// Native is the jobs.NativeUsage, JSON.
	Native string
	// CostNanos is the cost in 1e-9 of Currency: sums are exact.
	CostNanos    int64
	Currency     string
	PriceVersion string
	Estimated    bool
	BilledAt     time.Time
	// Unbudgeted: the job held no budget reservations (it was not
	// budgeted), so SaveJobUsage has none to settle and skips reading
	// them.
	Unbudgeted bool `gorm:"-"`
}

// TableName is the table entries live in.
func (UsageEntry) TableName() string { return "usage_ledger" }

// SaveJobUsage is SaveJob for a job that finished billed: the projection
// and the ledger entry are written in one transaction. The entry is
// written once per (job, attempt): a retried write leaves it as it was.
// The job's open budget reservations are settled to the entry in the same
// transaction (docs/api.md, Budgets).
func (s *JobStore) SaveJobUsage(ctx context.Context, job *jobs.Record, entry *UsageEntry) error {
	job.UpdatedAt = time.Now().UTC()
	entry.BilledAt = entry.BilledAt.UTC()
	if s.dialect == "postgres" && entry.Unbudgeted {
		// No reservations to settle: the projection, its event and the
		// entry are one statement.
		if done, err := s.projectInOneStatement(ctx, job, entry); done || err != nil {
			return err
		}
	}
	return s.write(ctx, func(tx *gorm.DB) error {
		if err := saveJob(tx, job); err != nil {
			return err
		}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(entry).Error; err != nil {
			return err
		}
		if entry.Unbudgeted {
			return nil
		}
		return s.settleBudgets(tx, entry)
	})
}
