package jobs

import (
	"encoding/json"
	"time"
)

// Attributes are a job's attributes as clients see them, in API responses
// and webhook payloads alike. Attributes that do not apply yet are omitted
// (docs/api.md, Jobs); routing_history is always an array.
// attributes.webhook is never among them.
type Attributes struct {
	Tenant         string          `json:"tenant"`
	UserID         string          `json:"user_id"`
	Provider       string          `json:"provider,omitempty"`
	Status         Status          `json:"status"`
	Progress       *int            `json:"progress,omitempty"`
	Error          *Error          `json:"error,omitempty"`
	Routing        json.RawMessage `json:"routing,omitempty"`
	RoutingHistory json.RawMessage `json:"routing_history"`
	CreatedAt      time.Time       `json:"created_at"`
	ProcessedAt    *time.Time      `json:"processed_at,omitempty"`
	CompletedAt    *time.Time      `json:"completed_at,omitempty"`
	// ResultExpiresAt is when the result and result files expire (or
	// expired) by the tenant's retention (docs/api.md, Retention); the
	// API sets it.
	ResultExpiresAt *time.Time      `json:"result_expires_at,omitempty"`
	Input           json.RawMessage `json:"input,omitempty"`
	Options         json.RawMessage `json:"options,omitempty"`
	PolicyID        string          `json:"policy_id,omitempty"`
	Result          json.RawMessage `json:"result,omitempty"`
	// Usage is the finished job's JobUsage (docs/api.md, Usage and cost).
	Usage json.RawMessage `json:"usage,omitempty"`
	// Waiting says why an unfinished job waits (docs/providers.md,
	// Waiting out an outage).
	Waiting json.RawMessage `json:"waiting,omitempty"`
}

// Detail selects which attributes a document shows.
type Detail bool

// The two forms of a job document.
const (
	// Listing leaves out input, options and result (GET /v1/jobs).
	Listing Detail = false
	// Full shows everything: single-job responses and webhook payloads.
	Full Detail = true
)

// TypeOf is the data.type of a job of the given service.
func TypeOf(service ServiceID) string {
	svc, _ := ServiceOf(service)
	return svc.JobType
}

// Attributes renders the record's attributes.
func (r *Record) Attributes(detail Detail) Attributes {
	return attributesOf(view{
		tenant: r.Tenant, userID: r.UserID, provider: r.Provider, policyID: r.PolicyID,
		status: r.Status, progress: r.Progress, failure: r.Failure(),
		routing: raw(r.Routing), history: raw(r.RoutingHistory),
		input: raw(r.Input), options: raw(r.Options), result: raw(r.Result), usage: raw(r.Usage),
		waiting:   raw(r.Waiting),
		createdAt: r.CreatedAt, processedAt: r.ProcessedAt, completedAt: r.CompletedAt,
	}, detail)
}

// Document is a job as clients see it: {id, type, attributes, meta}.
type Document struct {
	ID         string     `json:"id"`
	Type       string     `json:"type"`
	Attributes Attributes `json:"attributes"`
	Meta       Meta       `json:"meta"`
}

// Meta is a job's meta: the client's own object, returned unchanged, and
// meta.system, which webhook payloads never carry.
type Meta struct {
	Client json.RawMessage `json:"client,omitempty"`
	System *SystemMeta     `json:"system,omitempty"`
}

// SystemMeta is meta.system: where the job ran.
type SystemMeta struct {
	Region   string `json:"region"`
	WorkerID string `json:"worker_id"`
	// TraceID is the job's trace (an extension, docs/api.md), when traced.
	TraceID string `json:"trace_id,omitempty"`
}

// Document renders the record as API responses show it, with system as
// its meta.system.
func (r *Record) Document(detail Detail, system *SystemMeta) Document {
	return Document{
		ID:         r.ID,
		Type:       TypeOf(r.Service),
		Attributes: r.Attributes(detail),
		Meta:       Meta{Client: raw(r.ClientMeta), System: system},
	}
}

// view is what a job document is made of, whichever shape the job came in.
type view struct {
	tenant, userID, provider, policyID string
	status                             Status
	progress                           int
	failure                            *Error
	routing, history                   json.RawMessage
	input, options, result, usage      json.RawMessage
	waiting                            json.RawMessage
	createdAt                          time.Time
	processedAt, completedAt           *time.Time
}

func attributesOf(v view, detail Detail) Attributes {
	attrs := Attributes{
		Tenant:         v.tenant,
		UserID:         v.userID,
		Provider:       v.provider,
		Status:         v.status,
		RoutingHistory: v.history,
		CreatedAt:      v.createdAt.UTC(),
		PolicyID:       v.policyID,
	}
	if len(attrs.RoutingHistory) == 0 {
		attrs.RoutingHistory = json.RawMessage("[]")
	}
	if v.status != StatusPending {
		if v.processedAt != nil {
			progress := v.progress
			attrs.Progress = &progress
		}
		if len(v.routing) > 0 {
			attrs.Routing = v.routing
		}
	}
	if v.processedAt != nil {
		t := v.processedAt.UTC()
		attrs.ProcessedAt = &t
	}
	if v.status.Terminal() && v.completedAt != nil {
		t := v.completedAt.UTC()
		attrs.CompletedAt = &t
	}
	if v.status.Terminal() && len(v.usage) > 0 {
		attrs.Usage = v.usage
	}
	if !v.status.Terminal() && len(v.waiting) > 0 {
		attrs.Waiting = v.waiting
	}
	if v.status == StatusFailed {
		attrs.Error = v.failure
		if attrs.Error == nil {
			attrs.Error = &Error{}
		}
	}
	if detail == Full {
		attrs.Input = v.input
		if len(v.options) > 0 {
			attrs.Options = v.options
		}
		if v.status == StatusCompleted && len(v.result) > 0 {
			attrs.Result = v.result
		}
	}
	return attrs
}

// raw is stored JSON text as a raw message; "" is nil.
func raw(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}
