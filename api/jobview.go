package api

import "github.com/ai-job-gateway/gateway/internal/jobs"

// jobResource renders a job as API responses show it; detail selects the
// single-job form (with input, options and result) or the listing form.
func (s *Server) jobResource(job *jobs.Record, detail jobs.Detail) jobs.Document {
	return job.Document(detail, s.systemMeta(job.WorkerID))
}

// systemMeta is meta.system: the region and the worker that handled the
// job (this API node until a worker picked it up).
func (s *Server) systemMeta(workerID string) *jobs.SystemMeta {
	if workerID == "" {
		workerID = s.cfg.NodeID
	}
	return &jobs.SystemMeta{Region: s.cfg.Region, WorkerID: workerID}
}
