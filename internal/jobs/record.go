package jobs

import "time"

// Record is the queryable projection of one job, as the store persists it
// (table jobs). JSON documents (input, options, routing, result, client
// meta) are kept as text.
type Record struct {
	ID             string `gorm:"primaryKey"`
	Service        ServiceID
	Tenant         string
	UserID         string
	Provider       string
	Status         Status
	Progress       int
	PolicyID       string
	Application    string
	Input          string
	Options        string
	Routing        string
	RoutingHistory string
	Result         string
	// ResultFile is the blob key of the job's result file, linked as
	// result.download_url (docs/media.md); "" when it has none.
	ResultFile string
	// Usage is the finished job's usage and cost (a JobUsage, JSON), shown
	// as attributes.usage; "" before then.
	Usage string
	// Waiting is why the job waits (a Waiting, JSON), shown as
	// attributes.waiting; "" when it does not.
	Waiting string
	// TraceID is the trace of the request that created the job, shown as
	// meta.system.trace_id; "" when tracing was off.
	TraceID string
	// BatchID and CustomID name the batch that created the job and the
	// job's item in it (docs/api.md, Batches); "" for other jobs.
	BatchID      string
	CustomID     string
	ErrorCode    string
	ErrorMessage string
	ClientMeta   string
	WorkerID     string
	// Revision orders projection writes: a write only lands when its
	// revision is higher than the stored one, so a retried or late write
	// never rolls a job back.
	Revision    int
	CreatedAt   time.Time
	ProcessedAt *time.Time
	CompletedAt *time.Time
	UpdatedAt   time.Time
	// ResultExpiredAt is when the retention sweep erased the job's result
	// and files (docs/api.md, Retention); nil while they are kept.
	ResultExpiredAt *time.Time
}

// TableName is the table records live in.
func (Record) TableName() string { return "jobs" }

// Terminal reports whether the job reached completed or failed.
func (r *Record) Terminal() bool { return r.Status.Terminal() }

// Failure is the failed job's error, or nil.
func (r *Record) Failure() *Error {
	if r.Status != StatusFailed {
		return nil
	}
	return &Error{Code: r.ErrorCode, Message: r.ErrorMessage}
}
