// Package jobdoc renders a job the way clients see it, in API responses and
// in webhook payloads alike.
package jobdoc

import (
	"encoding/json"
	"time"

	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// Attributes are a job's attributes. Attributes that do not apply yet are
// omitted (decisions.md §8); routing_history is always an array.
type Attributes struct {
	Tenant         string          `json:"tenant"`
	UserID         string          `json:"user_id"`
	Provider       string          `json:"provider,omitempty"`
	Status         string          `json:"status"`
	Progress       *int            `json:"progress,omitempty"`
	Error          *Error          `json:"error,omitempty"`
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

// Error is the {code, message} of a failed job.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Type is the data.type of a job of the given service.
func Type(job *store.Job) string {
	svc, _ := providers.LookupService(job.Service)
	return svc.JobType
}

// AttributesOf renders a job's attributes. full selects the single-job form
// (with input, options and result) over the listing form.
func AttributesOf(job *store.Job, full bool) Attributes {
	attrs := Attributes{
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
		if job.ProcessedAt != nil {
			progress := job.Progress
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
		attrs.Error = &Error{Code: job.ErrorCode, Message: job.ErrorMessage}
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
	return attrs
}

// ClientMeta is the client's meta.client, or nil when it sent none.
func ClientMeta(job *store.Job) json.RawMessage {
	if job.ClientMeta == "" {
		return nil
	}
	return json.RawMessage(job.ClientMeta)
}
