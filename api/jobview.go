package api

import (
	"context"
	"errors"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// jobViews renders jobs as responses show them, for the job, listing and
// result handlers alike.
type jobViews struct {
	// files mints download_url; nil gives results none (docs/media.md).
	files   FileLinks
	linkTTL time.Duration
	// region and nodeID fill meta.system.
	region, nodeID string
	// tenants and retention make result_expires_at (docs/api.md,
	// Retention); nil tenants: every tenant has the defaults.
	tenants   tenantReader
	retention store.RetentionDefaults
	now       func() time.Time
}

// tenantReader reads a tenant's record (store.Cache).
type tenantReader interface {
	GetTenant(ctx context.Context, id string) (*store.Tenant, error)
}

// retentions memoises tenants' results retention within one request.
type retentions map[string]time.Duration

// resource renders a job; detail selects the single-job form (with input,
// options and result) or the listing form. memo, when not nil, keeps
// tenants' retention for the rest of the request. A result past its
// expiry is not shown, whether or not the sweep erased it yet.
func (v jobViews) resource(ctx context.Context, job *jobs.Record, detail jobs.Detail, memo retentions) (jobs.Document, error) {
	doc := job.Document(detail, v.systemMeta(job.WorkerID, job.TraceID))
	expires, err := v.resultExpiry(ctx, job, memo)
	if err != nil {
		return doc, err
	}
	if !expires.IsZero() {
		doc.Attributes.ResultExpiresAt = &expires
		if v.expired(expires) {
			doc.Attributes.Result = nil
		}
	}
	if doc.Attributes.Result == nil {
		return doc, nil
	}
	result, err := v.linkResultFile(ctx, job, doc.Attributes.Result)
	doc.Attributes.Result = result
	return doc, err
}

// resultExpiry is when a finished job's result expires, or expired:
// completed_at plus its tenant's results retention, or when the sweep
// erased it; zero while the job is not finished or results are kept
// forever.
func (v jobViews) resultExpiry(ctx context.Context, job *jobs.Record, memo retentions) (time.Time, error) {
	if job.ResultExpiredAt != nil {
		return job.ResultExpiredAt.UTC(), nil
	}
	if !job.Terminal() || job.CompletedAt == nil {
		return time.Time{}, nil
	}
	results, ok := memo[job.Tenant]
	if !ok {
		var t *store.Tenant
		if v.tenants != nil {
			var err error
			t, err = v.tenants.GetTenant(ctx, job.Tenant)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return time.Time{}, err
			}
		}
		results, _ = t.EffectiveRetention(v.retention)
		if memo != nil {
			memo[job.Tenant] = results
		}
	}
	if results <= 0 {
		return time.Time{}, nil
	}
	return job.CompletedAt.UTC().Add(results), nil
}

// expired reports whether a result that expires at has expired.
func (v jobViews) expired(at time.Time) bool {
	now := time.Now
	if v.now != nil {
		now = v.now
	}
	return !at.After(now())
}

// linkResultFile adds download_url to the result of a job with a result
// file, minted now so that it is valid for the whole LinkTTL from the
// moment it is handed out (docs/media.md).
func (v jobViews) linkResultFile(ctx context.Context, job *jobs.Record, result []byte) ([]byte, error) {
	if v.files == nil || job.ResultFile == "" {
		return result, nil
	}
	ttl := v.linkTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	link, err := v.files.SignedURL(ctx, job.ResultFile, ttl)
	if err != nil {
		return nil, err
	}
	return jobs.WithDownloadURL(result, link)
}

// systemMeta is meta.system: the region, the worker that handled the
// job (this API node until a worker picked it up) and the job's trace.
func (v jobViews) systemMeta(workerID, traceID string) *jobs.SystemMeta {
	if workerID == "" {
		workerID = v.nodeID
	}
	return &jobs.SystemMeta{Region: v.region, WorkerID: workerID, TraceID: traceID}
}
