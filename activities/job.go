// Package activities holds the Temporal activities of the job workflow:
// routing decisions, provider calls and projection writes. Activities are
// methods on Activities, whose fields are their dependencies.
package activities

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ai-job-gateway/gateway/activities/webhooksign"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// JobStore is what the activities need of the store.
type JobStore interface {
	SaveJob(ctx context.Context, job *store.Job) error
	UpdateProgress(ctx context.Context, id string, progress int) error
}

// Activities are the job workflow's activities and their dependencies.
type Activities struct {
	Store JobStore
	// Routing is the routing state; nil routes by the catalog alone.
	Routing   RoutingStore
	Providers *providers.Registry
	// HTTPClient makes the HEAD requests that learn media sizes (default
	// http.DefaultClient).
	HTTPClient *http.Client
	// Temporal signals progress to job workflows (for *.progress events).
	Temporal client.Client
	// WorkerID identifies this worker process in job metadata.
	WorkerID string
	// HeartbeatInterval is how often a running provider call records a
	// heartbeat (default: half its heartbeat timeout).
	HeartbeatInterval time.Duration
	// Signer signs webhook requests.
	Signer *webhooksign.Signer
	// WebhookClient delivers webhooks (default: netguard.NewClient(false,
	// WebhookTimeout), public addresses only).
	WebhookClient *http.Client
	// Deliveries records webhook delivery attempts; nil records none.
	Deliveries DeliveryStore
}

// JobError is the {code, message} of a failed job.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// JobSnapshot is the state of a job as the workflow knows it; SaveJob
// projects it into the store.
type JobSnapshot struct {
	ID             string               `json:"id"`
	Service        string               `json:"service"`
	Tenant         string               `json:"tenant"`
	UserID         string               `json:"user_id"`
	Application    string               `json:"application,omitempty"`
	PolicyID       string               `json:"policy_id,omitempty"`
	Provider       string               `json:"provider,omitempty"`
	Status         string               `json:"status"`
	Progress       int                  `json:"progress"`
	Input          json.RawMessage      `json:"input"`
	Options        json.RawMessage      `json:"options,omitempty"`
	ClientMeta     json.RawMessage      `json:"client_meta,omitempty"`
	Routing        *policy.RoutingInfo  `json:"routing,omitempty"`
	RoutingHistory []policy.RoutingInfo `json:"routing_history"`
	Result         json.RawMessage      `json:"result,omitempty"`
	Error          *JobError            `json:"error,omitempty"`
	WorkerID       string               `json:"worker_id,omitempty"`
	CreatedAt      time.Time            `json:"created_at"`
	ProcessedAt    *time.Time           `json:"processed_at,omitempty"`
	CompletedAt    *time.Time           `json:"completed_at,omitempty"`
	// Revision increases with every projection write of the job.
	Revision int `json:"revision"`
}

// SaveJob writes a job snapshot into the store. It is idempotent, and a
// snapshot older than the stored one is ignored, so retries are safe.
func (a *Activities) SaveJob(ctx context.Context, snap JobSnapshot) error {
	row, err := snap.Record()
	if err != nil {
		return err
	}
	return a.Store.SaveJob(ctx, row)
}

// Record converts the snapshot into the store's record.
func (s JobSnapshot) Record() (*store.Job, error) {
	row := &store.Job{
		ID:          s.ID,
		Service:     s.Service,
		Tenant:      s.Tenant,
		UserID:      s.UserID,
		Application: s.Application,
		PolicyID:    s.PolicyID,
		Provider:    s.Provider,
		Status:      s.Status,
		Progress:    s.Progress,
		Input:       string(s.Input),
		Options:     string(s.Options),
		ClientMeta:  string(s.ClientMeta),
		Result:      string(s.Result),
		WorkerID:    s.WorkerID,
		Revision:    s.Revision,
		CreatedAt:   s.CreatedAt.UTC(),
		ProcessedAt: s.ProcessedAt,
		CompletedAt: s.CompletedAt,
	}
	if s.Routing != nil {
		b, err := json.Marshal(s.Routing)
		if err != nil {
			return nil, err
		}
		row.Routing = string(b)
	}
	history := s.RoutingHistory
	if history == nil {
		history = []policy.RoutingInfo{}
	}
	b, err := json.Marshal(history)
	if err != nil {
		return nil, err
	}
	row.RoutingHistory = string(b)
	if s.Error != nil {
		row.ErrorCode, row.ErrorMessage = s.Error.Code, s.Error.Message
	}
	return row, nil
}
