package jobs

import (
	"encoding/json"
	"time"
)

// StatusDeleted is the status of a deleted job's tombstone (docs/api.md,
// Deleting a job). It is not one of Statuses: no job is in it, filters do
// not take it, and the API answers 410 JOB_DELETED for the job.
const StatusDeleted Status = "deleted"

// EventDeleted: the job was deleted; the payload is its tombstone.
const EventDeleted EventKind = "deleted"

// Who deleted a job (Tombstone.DeletedBy when not a user).
const (
	// DeletedByRetention: the tenant's retention expired (docs/api.md,
	// Retention).
	DeletedByRetention = "retention"
)

// Tombstone is what the store keeps of a deleted job: no input, options,
// result, client meta or webhook, only what says that the job existed,
// whose it was and what became of its copies (docs/api.md, Deleting a
// job).
type Tombstone struct {
	ID          string `gorm:"primaryKey"`
	Tenant      string
	Service     ServiceID
	CreatedAt   time.Time
	CompletedAt *time.Time
	DeletedAt   time.Time
	// DeletedBy is the user who deleted the job, or DeletedByRetention.
	DeletedBy string
	// VendorCopies is a JSON array of VendorCopy: each provider the job's
	// attempts went to, and what the erasure did with its copy of the
	// job (VendorCopyPending until it dealt with it).
	VendorCopies string
	// ErasedAt is when the erasure finished: the job's workflow, files and
	// vendor copies gone; nil while it runs.
	ErasedAt *time.Time
}

// TableName is the table tombstones live in.
func (Tombstone) TableName() string { return "job_tombstones" }

// VendorCopy is one provider's copy of a deleted job and what the erasure
// did with it: Outcome is purged, not_retained, no_delete_api or failed
// (docs/providers.md, Deleting a job's vendor copy).
type VendorCopy struct {
	Provider string `json:"provider"`
	Outcome  string `json:"outcome"`
}

// VendorCopyPending is the outcome of a vendor copy until the erasure
// dealt with it.
const VendorCopyPending = "pending"

// VendorCopyFailed is the outcome of a vendor copy whose deletion failed
// for good (providers.PurgeFailed).
const VendorCopyFailed = "failed"

// VendorCopiesJSON is copies as Tombstone.VendorCopies keeps them.
func VendorCopiesJSON(copies []VendorCopy) string {
	if len(copies) == 0 {
		return ""
	}
	b, _ := json.Marshal(copies)
	return string(b)
}

// TombstoneAttributes are a deleted job's attributes as the DELETE answer
// and the *.deleted event show them.
type TombstoneAttributes struct {
	Tenant       string       `json:"tenant"`
	Status       Status       `json:"status"`
	CreatedAt    time.Time    `json:"created_at"`
	CompletedAt  *time.Time   `json:"completed_at,omitempty"`
	DeletedAt    time.Time    `json:"deleted_at"`
	VendorCopies []VendorCopy `json:"vendor_copies,omitempty"`
}

// TombstoneDocument is a deleted job as clients see it.
type TombstoneDocument struct {
	ID         string              `json:"id"`
	Type       string              `json:"type"`
	Attributes TombstoneAttributes `json:"attributes"`
}

// Document renders the tombstone.
func (t *Tombstone) Document() TombstoneDocument {
	var copies []VendorCopy
	if t.VendorCopies != "" {
		_ = json.Unmarshal([]byte(t.VendorCopies), &copies)
	}
	return TombstoneDocument{ID: t.ID, Type: TypeOf(t.Service), Attributes: TombstoneAttributes{
		Tenant: t.Tenant, Status: StatusDeleted, CreatedAt: t.CreatedAt, CompletedAt: t.CompletedAt,
		DeletedAt: t.DeletedAt, VendorCopies: copies,
	}}
}

// DeletedWebhookBody is the body of a job's *.deleted event.
func DeletedWebhookBody(event string, t *Tombstone) ([]byte, error) {
	return json.Marshal(struct {
		Event string            `json:"event"`
		Data  TombstoneDocument `json:"data"`
	}{event, t.Document()})
}

// Providers are the providers the job's attempts went to.
func (t *Tombstone) Providers() []string {
	var out []string
	for _, c := range t.Document().Attributes.VendorCopies {
		out = append(out, c.Provider)
	}
	return out
}
