package jobs

import (
	"encoding/json"
	"strings"
	"time"
)

// Submission is an accepted job as the API hands it to its workflow: the
// validated request and who made it. It is the job workflow's input, so
// its JSON shape is part of every recorded history.
type Submission struct {
	JobID       string    `json:"job_id"`
	Service     ServiceID `json:"service"`
	Tenant      string    `json:"tenant"`
	UserID      string    `json:"user_id"`
	Application string    `json:"application,omitempty"`
	// Provider is the provider the job named, if any.
	Provider   string          `json:"provider,omitempty"`
	PolicyID   string          `json:"policy_id,omitempty"`
	Input      json.RawMessage `json:"input"`
	Options    json.RawMessage `json:"options,omitempty"`
	ClientMeta json.RawMessage `json:"client_meta,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	// Webhook receives the job's lifecycle events, if given.
	Webhook *Webhook `json:"webhook,omitempty"`
	// SearchAttributes says the namespace has the gateway's search
	// attributes, so the workflow keeps them up to date; the process that
	// starts the workflow sets it (docs/operations.md, Finding jobs).
	SearchAttributes bool `json:"search_attributes,omitempty"`
	// Retry is set when an operator retries the failed job: it runs again
	// under its own id, keeping what happened before (docs/operations.md,
	// Retrying jobs).
	Retry *Retry `json:"retry,omitempty"`
	// TraceContext is the W3C trace context (traceparent, tracestate) of
	// the request that created the job: its workflow continues that trace
	// (docs/operations.md, Traces). Empty when tracing is off.
	TraceContext map[string]string `json:"trace_context,omitempty"`
	// FairnessWeight is the tenant's fairness weight when it is not the
	// default, 1 (docs/operations.md, Fairness between tenants): the
	// workflow's and its activities' tasks carry it with the tenant as
	// fairness key.
	FairnessWeight float64 `json:"fairness_weight,omitempty"`
	// Generation is the generation of the job workflow's code the job was
	// started at (workflows.Generation): the workflow takes every change
	// of that generation without a version marker. Processes stamp
	// --job-generation, by default workflows.StampedGeneration; 0 (as
	// histories recorded before generations) takes every change through
	// GetVersion (docs/workflow-versions.md).
	Generation int `json:"generation,omitempty"`
	// Budgeted says budgets of the tenant cover the job: the workflow
	// reserves it before its provider is called (docs/api.md, Budgets).
	Budgeted bool `json:"budgeted,omitempty"`
	// WebhookGiveUpAfter is how long the workflow retries a webhook event
	// before giving it up; 0 is the default, 24 h (docs/webhooks.md). The
	// process that accepts the job sets it from its configuration.
	WebhookGiveUpAfter time.Duration `json:"webhook_give_up_after,omitempty"`
}

// Retry is what a retried job keeps of its earlier runs.
type Retry struct {
	// RoutingHistory is the job's routing history so far; the retry's
	// decisions are appended, their attempt numbers continuing.
	RoutingHistory []RoutingInfo `json:"routing_history"`
	// Revision is the job's last projected revision.
	Revision int `json:"revision"`
	// Error is what the job had failed with.
	Error *Error `json:"error,omitempty"`
}

// Webhook is a job's attributes.webhook: where its events go. It is never
// shown back, in responses or in events: its headers carry the client's
// secrets.
type Webhook struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Snapshot is the submitted job before anything happened to it.
func (s Submission) Snapshot() Snapshot {
	return Snapshot{
		ID:             s.JobID,
		Service:        s.Service,
		Tenant:         s.Tenant,
		UserID:         s.UserID,
		Application:    s.Application,
		PolicyID:       s.PolicyID,
		Provider:       s.Provider,
		Status:         StatusPending,
		Input:          s.Input,
		Options:        s.Options,
		ClientMeta:     s.ClientMeta,
		RoutingHistory: []RoutingInfo{},
		CreatedAt:      s.CreatedAt,
		Budgeted:       s.Budgeted,
	}
}

// Record is the submitted job as the store first records it: pending.
func (s Submission) Record() *Record {
	return &Record{
		ID:          s.JobID,
		Service:     s.Service,
		Tenant:      s.Tenant,
		UserID:      s.UserID,
		Provider:    s.Provider,
		Status:      StatusPending,
		PolicyID:    s.PolicyID,
		Application: s.Application,
		Input:       string(s.Input),
		Options:     string(s.Options),
		ClientMeta:  string(s.ClientMeta),
		CreatedAt:   s.CreatedAt,
		TraceID:     traceID(s.TraceContext),
	}
}

// traceID is the trace id of a W3C traceparent ("00-<trace id>-<span
// id>-<flags>"), "" without one.
func traceID(c map[string]string) string {
	parts := strings.Split(c["traceparent"], "-")
	if len(parts) != 4 || len(parts[1]) != 32 {
		return ""
	}
	return parts[1]
}
