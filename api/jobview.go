package api

import (
	"context"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// jobResource renders a job as API responses show it; detail selects the
// single-job form (with input, options and result) or the listing form.
func (s *Server) jobResource(ctx context.Context, job *jobs.Record, detail jobs.Detail) (jobs.Document, error) {
	doc := job.Document(detail, s.systemMeta(job.WorkerID, job.TraceID))
	if doc.Attributes.Result == nil {
		return doc, nil
	}
	result, err := s.linkResultFile(ctx, job, doc.Attributes.Result)
	doc.Attributes.Result = result
	return doc, err
}

// linkResultFile adds download_url to the result of a job with a result
// file, minted now so that it is valid for the whole LinkTTL from the
// moment it is handed out (docs/media.md).
func (s *Server) linkResultFile(ctx context.Context, job *jobs.Record, result []byte) ([]byte, error) {
	if s.cfg.Files == nil || job.ResultFile == "" {
		return result, nil
	}
	ttl := s.cfg.LinkTTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	link, err := s.cfg.Files.SignedURL(ctx, job.ResultFile, ttl)
	if err != nil {
		return nil, err
	}
	return jobs.WithDownloadURL(result, link)
}

// systemMeta is meta.system: the region, the worker that handled the
// job (this API node until a worker picked it up) and the job's trace.
func (s *Server) systemMeta(workerID, traceID string) *jobs.SystemMeta {
	if workerID == "" {
		workerID = s.cfg.NodeID
	}
	return &jobs.SystemMeta{Region: s.cfg.Region, WorkerID: workerID, TraceID: traceID}
}
