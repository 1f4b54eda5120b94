package jobs

import (
	"encoding/json"
	"fmt"
)

// EventKind is the part of a lifecycle event's name after the service's
// prefix (docs/webhooks.md, Events).
type EventKind string

// The lifecycle events.
const (
	// EventProgress: the job is processing; progress moved (not sent by
	// services whose SendsProgress is false).
	EventProgress EventKind = "progress"
	// EventCompleted: the job completed; the result is in the payload.
	EventCompleted EventKind = "completed"
	// EventFailed: the job failed; the error is in the payload.
	EventFailed EventKind = "failed"
)

// EventName is the full name of an event of a service's job, such as
// "transcription.completed".
func EventName(service Service, kind EventKind) string {
	return service.EventPrefix + "." + string(kind)
}

// Attributes renders the snapshot's attributes in the full form.
func (s Snapshot) Attributes() (Attributes, error) {
	routing, history, err := s.routingJSON()
	if err != nil {
		return Attributes{}, err
	}
	return attributesOf(view{
		tenant: s.Tenant, userID: s.UserID, provider: s.Provider, policyID: s.PolicyID,
		status: s.Status, progress: s.Progress, failure: s.Error,
		routing: routing, history: history,
		input: s.Input, options: s.Options, result: s.Result, usage: s.Usage, waiting: json.RawMessage(waitingJSON(s.Waiting)),
		createdAt: s.CreatedAt, processedAt: s.ProcessedAt, completedAt: s.CompletedAt,
	}, Full), nil
}

// webhookPayload is the body of a webhook request (docs/webhooks.md).
type webhookPayload struct {
	Event string   `json:"event"`
	Data  Document `json:"data"`
}

// WebhookBody is the JSON body of an event: the job as the API renders a
// single job, without meta.system (and, as everywhere, without
// attributes.webhook).
func WebhookBody(event string, s Snapshot) ([]byte, error) {
	attrs, err := s.Attributes()
	if err != nil {
		return nil, err
	}
	var client json.RawMessage
	if len(s.ClientMeta) > 0 {
		client = s.ClientMeta
	}
	return json.Marshal(webhookPayload{Event: event, Data: Document{
		ID:         s.ID,
		Type:       TypeOf(s.Service),
		Attributes: attrs,
		Meta:       Meta{Client: client},
	}})
}

// WithoutDocuments is the snapshot without the job's documents: input,
// options and client meta, which never change, and the result and usage,
// which are written once, with the terminal status. What is left is what an event
// pins; WithDocuments takes the rest from the job's stored record.
func (s Snapshot) WithoutDocuments() Snapshot {
	s.Input, s.Options, s.ClientMeta, s.Result, s.Usage = nil, nil, nil, nil, nil
	return s
}

// WithDocuments is s with the documents WithoutDocuments left out, taken
// from r, the job's stored record. Since they never change once written,
// every read gives the same ones; the result of a completed s needs r to
// be completed too.
func (s Snapshot) WithDocuments(r *Record) (Snapshot, error) {
	if r.ID != s.ID {
		return s, fmt.Errorf("stored job %s is not job %s", r.ID, s.ID)
	}
	s.Input, s.Options, s.ClientMeta = raw(r.Input), raw(r.Options), raw(r.ClientMeta)
	if s.Status == StatusCompleted {
		if r.Status != StatusCompleted {
			return s, fmt.Errorf("stored job %s is %s, not yet completed", r.ID, r.Status)
		}
		s.Result = raw(r.Result)
	}
	if s.Status.Terminal() {
		s.Usage = raw(r.Usage)
	}
	return s, nil
}

// EventOf is the lifecycle event a projection write of r reports
// (docs/api.md, Following a job live): completed or failed for a finished
// job, progress for a processing one of a service that sends progress;
// "" for none.
func EventOf(r *Record) EventKind {
	switch r.Status {
	case StatusCompleted:
		return EventCompleted
	case StatusFailed:
		return EventFailed
	case StatusProcessing:
		if svc, ok := ServiceOf(r.Service); ok && svc.SendsProgress {
			return EventProgress
		}
	}
	return ""
}

// Snapshot is the record as the workflow's snapshot, the inverse of
// Snapshot.Record.
func (r *Record) Snapshot() (Snapshot, error) {
	s := Snapshot{
		ID: r.ID, Service: r.Service, Tenant: r.Tenant, UserID: r.UserID,
		Application: r.Application, PolicyID: r.PolicyID, Provider: r.Provider,
		Status: r.Status, Progress: r.Progress,
		Input: raw(r.Input), Options: raw(r.Options), ClientMeta: raw(r.ClientMeta),
		Result: raw(r.Result), ResultFile: r.ResultFile, Usage: raw(r.Usage),
		Error: r.Failure(), WorkerID: r.WorkerID, Revision: r.Revision,
		CreatedAt: r.CreatedAt, ProcessedAt: r.ProcessedAt, CompletedAt: r.CompletedAt,
		RoutingHistory: []RoutingInfo{},
	}
	if r.Routing != "" {
		if err := json.Unmarshal([]byte(r.Routing), &s.Routing); err != nil {
			return s, fmt.Errorf("job %s: routing: %w", r.ID, err)
		}
	}
	if r.RoutingHistory != "" {
		if err := json.Unmarshal([]byte(r.RoutingHistory), &s.RoutingHistory); err != nil {
			return s, fmt.Errorf("job %s: routing history: %w", r.ID, err)
		}
	}
	if r.Waiting != "" {
		if err := json.Unmarshal([]byte(r.Waiting), &s.Waiting); err != nil {
			return s, fmt.Errorf("job %s: waiting: %w", r.ID, err)
		}
	}
	return s, nil
}
