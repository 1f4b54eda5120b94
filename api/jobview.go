package api

import (
	"encoding/json"
	"time"

	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// jobResource is the JSON:API-style representation of a job.
type jobResource struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Attributes jobAttributes  `json:"attributes"`
	Meta       map[string]any `json:"meta"`
}

// jobAttributes are a job's attributes. Attributes that do not apply yet are
// omitted (decisions.md §8); routing_history is always an array.
type jobAttributes struct {
	Tenant         string          `json:"tenant"`
	UserID         string          `json:"user_id"`
	Provider       string          `json:"provider,omitempty"`
	Status         string          `json:"status"`
	Progress       *int            `json:"progress,omitempty"`
	Error          *jobError       `json:"error,omitempty"`
	Routing        json.RawMessage `json:"routing,omitempty"`
	RoutingHistory json.RawMessage `json:"routing_history"`
	CreatedAt      time.Time       `json:"created_at"`
	ProcessedAt    *time.Time      `json:"processed_at,omitempty"`
	CompletedAt    *time.Time      `json:"completed_at,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	Options        json.RawMessage `json:"options,omitempty"`
	PolicyID       string          `json:"policy_id,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
}

type jobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// full selects the single-job form (with input, options and result) over
// the listing form.
func (s *Server) jobResource(job *store.Job, full bool) jobResource {
	svc, _ := providers.LookupService(job.Service)
	attrs := jobAttributes{
		Tenant:         job.Tenant,
		UserID:         job.UserID,
		Provider:       job.Provider,
		Status:         job.Status,
		RoutingHistory: json.RawMessage(job.RoutingHistory),
		CreatedAt:      job.CreatedAt.UTC(),
		PolicyID:       job.PolicyID,
	}
	if job.RoutingHistory == "" {
		attrs.RoutingHistory = json.RawMessage("[]")
	}
	if job.Status != store.StatusPending {
		progress := job.Progress
		if job.ProcessedAt != nil {
			attrs.Progress = &progress
		}
		if job.Routing != "" {
			attrs.Routing = json.RawMessage(job.Routing)
		}
	}
	if job.ProcessedAt != nil {
		t := job.ProcessedAt.UTC()
		attrs.ProcessedAt = &t
	}
	if job.Terminal() && job.CompletedAt != nil {
		t := job.CompletedAt.UTC()
		attrs.CompletedAt = &t
	}
	if job.Status == store.StatusFailed {
		attrs.Error = &jobError{Code: job.ErrorCode, Message: job.ErrorMessage}
	}
	if full {
		attrs.Input = json.RawMessage(job.Input)
		if job.Options != "" {
			attrs.Options = json.RawMessage(job.Options)
		}
		if job.Status == store.StatusCompleted && job.Result != "" {
			attrs.Result = json.RawMessage(job.Result)
		}
	}
	meta := map[string]any{"system": s.systemMeta(job.WorkerID)}
	if job.ClientMeta != "" {
		meta["client"] = json.RawMessage(job.ClientMeta)
	}
	return jobResource{ID: job.ID, Type: svc.JobType, Attributes: attrs, Meta: meta}
}

// systemMeta is meta.system: the region and the worker that handled the
// job (this API node until a worker picked it up).
func (s *Server) systemMeta(workerID string) map[string]string {
	if workerID == "" {
		workerID = s.cfg.NodeID
	}
	return map[string]string{"region": s.cfg.Region, "worker_id": workerID}
}
