package api

import (
	"github.com/ai-job-gateway/gateway/api/jobdoc"
	"github.com/ai-job-gateway/gateway/store"
)

// jobResource is the JSON:API-style representation of a job.
type jobResource struct {
	ID         string            `json:"id"`
	Type       string            `json:"type"`
	Attributes jobdoc.Attributes `json:"attributes"`
	Meta       map[string]any    `json:"meta"`
}

// jobResource renders a job; full selects the single-job form (with
// input, options and result) over the listing form.
func (s *Server) jobResource(job *store.Job, full bool) jobResource {
	meta := map[string]any{"system": s.systemMeta(job.WorkerID)}
	if client := jobdoc.ClientMeta(job); client != nil {
		meta["client"] = client
	}
	return jobResource{ID: job.ID, Type: jobdoc.Type(job), Attributes: jobdoc.AttributesOf(job, full), Meta: meta}
}

// systemMeta is meta.system: the region and the worker that handled the
// job (this API node until a worker picked it up).
func (s *Server) systemMeta(workerID string) map[string]string {
	if workerID == "" {
		workerID = s.cfg.NodeID
	}
	return map[string]string{"region": s.cfg.Region, "worker_id": workerID}
}
