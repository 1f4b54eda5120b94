package jobs

import (
	"encoding/json"
	"time"
)

// Snapshot is the state of a job as its workflow knows it. The workflow
// projects it into the store (as a Record) at every transition, and its
// JSON shape is part of recorded histories.
type Snapshot struct {
	ID             string          `json:"id"`
	Service        ServiceID       `json:"service"`
	Tenant         string          `json:"tenant"`
	UserID         string          `json:"user_id"`
	Application    string          `json:"application,omitempty"`
	PolicyID       string          `json:"policy_id,omitempty"`
	Provider       string          `json:"provider,omitempty"`
	Status         Status          `json:"status"`
	Progress       int             `json:"progress"`
	Input          json.RawMessage `json:"input"`
	Options        json.RawMessage `json:"options,omitempty"`
	ClientMeta     json.RawMessage `json:"client_meta,omitempty"`
	Routing        *RoutingInfo    `json:"routing,omitempty"`
	RoutingHistory []RoutingInfo   `json:"routing_history"`
	Result         json.RawMessage `json:"result,omitempty"`
	// ResultFile is the blob key of the result file (docs/media.md).
	ResultFile string `json:"result_file,omitempty"`
	// Usage is the finished job's JobUsage, which the projection write
	// adds (docs/api.md, Usage and cost); the workflow never sets it.
	Usage       json.RawMessage `json:"usage,omitempty"`
	Error       *Error          `json:"error,omitempty"`
	WorkerID    string          `json:"worker_id,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	ProcessedAt *time.Time      `json:"processed_at,omitempty"`
	CompletedAt *time.Time      `json:"completed_at,omitempty"`
	// Revision increases with every projection write of the job.
	Revision int `json:"revision"`
	// Waiting is set while the job waits out an outage.
	Waiting *Waiting `json:"waiting,omitempty"`
	// Budgeted is the submission's: only such a job can hold budget
	// reservations, which its projection settles or releases.
	Budgeted bool `json:"budgeted,omitempty"`
}

// Complete ends the job as completed at at, with result. The workflow
// completes a job with it, and so does the local activity that projects
// a short call's outcome itself (generation 3).
func (s *Snapshot) Complete(result json.RawMessage, at time.Time) {
	s.Status = StatusCompleted
	s.Progress = 100
	s.Result = result
	s.CompletedAt = &at
}

// Record is the snapshot as the store persists it.
func (s Snapshot) Record() (*Record, error) {
	routing, history, err := s.routingJSON()
	if err != nil {
		return nil, err
	}
	row := &Record{
		ID:             s.ID,
		Service:        s.Service,
		Tenant:         s.Tenant,
		UserID:         s.UserID,
		Application:    s.Application,
		PolicyID:       s.PolicyID,
		Provider:       s.Provider,
		Status:         s.Status,
		Progress:       s.Progress,
		Input:          string(s.Input),
		Options:        string(s.Options),
		ClientMeta:     string(s.ClientMeta),
		Routing:        string(routing),
		RoutingHistory: string(history),
		Result:         string(s.Result),
		ResultFile:     s.ResultFile,
		Usage:          string(s.Usage),
		Waiting:        waitingJSON(s.Waiting),
		WorkerID:       s.WorkerID,
		Revision:       s.Revision,
		CreatedAt:      s.CreatedAt.UTC(),
		ProcessedAt:    s.ProcessedAt,
		CompletedAt:    s.CompletedAt,
	}
	if s.Error != nil {
		row.ErrorCode, row.ErrorMessage = s.Error.Code, s.Error.Message
	}
	return row, nil
}

// routingJSON encodes the routing (nil when there is none) and the routing
// history (an array, empty when there is none).
func (s Snapshot) routingJSON() (routing, history json.RawMessage, err error) {
	if s.Routing != nil {
		if routing, err = json.Marshal(s.Routing); err != nil {
			return nil, nil, err
		}
	}
	h := s.RoutingHistory
	if h == nil {
		h = []RoutingInfo{}
	}
	history, err = json.Marshal(h)
	return routing, history, err
}
