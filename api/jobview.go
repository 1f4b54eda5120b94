package api

import (
	"context"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// jobViews renders jobs as responses show them, for the job, listing and
// result handlers alike.
type jobViews struct {
	// files mints download_url; nil gives results none (docs/media.md).
	files   FileLinks
	linkTTL time.Duration
	// region and nodeID fill meta.system.
	region, nodeID string
}

// resource renders a job; detail selects the single-job form (with input,
// options and result) or the listing form.
func (v jobViews) resource(ctx context.Context, job *jobs.Record, detail jobs.Detail) (jobs.Document, error) {
	doc := job.Document(detail, v.systemMeta(job.WorkerID, job.TraceID))
	if doc.Attributes.Result == nil {
		return doc, nil
	}
	result, err := v.linkResultFile(ctx, job, doc.Attributes.Result)
	doc.Attributes.Result = result
	return doc, err
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
