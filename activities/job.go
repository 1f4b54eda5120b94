// Package activities holds the Temporal activities of the job workflow:
// routing decisions, provider calls and projection writes. Activities are
// methods on Activities, whose fields are their dependencies.
package activities

import (
	"context"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/providers"
)

// JobStore is what the activities need of the store.
type JobStore interface {
	SaveJob(ctx context.Context, job *jobs.Record) error
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
	// Jobs reads the stored jobs webhook payloads are rendered from.
	Jobs JobReader

	// Files is the blob store of media and result files (docs/media.md);
	// nil: jobs with media fail with MEDIA_PROCESSING_UNAVAILABLE.
	Files *blobstore.Store
	// MediaTools runs ffprobe and ffmpeg; nil when they are missing, and
	// jobs whose media must be probed fail.
	MediaTools *media.Tools
	// MediaClient fetches media (default http.DefaultClient); give it no
	// overall timeout: the fetch heartbeats while bytes arrive.
	MediaClient *http.Client
	// FetchLimits are the slowest transfer and the longest fetch accepted
	// (MaxBytes is set per job); zero: none.
	FetchLimits media.Limits
	// FetchSlots caps each tenant's concurrent fetches in this worker; nil:
	// no cap.
	FetchSlots *media.Slots
	// ScratchDir holds media steps' local files while they run (default
	// the system's temporary directory).
	ScratchDir string
	// LinkTTL is how long a download_url stays valid (default 1 h).
	LinkTTL time.Duration
	// Metrics records provider calls, routing decisions, finished jobs,
	// webhook deliveries and media steps; nil records none.
	Metrics *metrics.Metrics

	// CallbackURLs makes the addresses vendors post results back to
	// (docs/providers.md, Vendor callbacks); nil: this gateway takes no
	// callbacks. Callbacks reads what they posted.
	CallbackURLs CallbackAddresses
	Callbacks    CallbackStore
}

// CallbackAddresses makes the callback address of a job's attempt
// (*vendorcallback.Addresses is one).
type CallbackAddresses interface {
	URL(jobID string, attempt int) string
}

// CallbackStore reads what vendors posted back about jobs, and sweeps
// what no workflow read.
type CallbackStore interface {
	ProviderCallback(ctx context.Context, jobID string, attempt int) (body []byte, ok bool, err error)
	DeleteProviderCallbacksBefore(ctx context.Context, t time.Time) (int64, error)
}

// SaveJob writes a job snapshot into the store. It is idempotent, and a
// snapshot older than the stored one is ignored, so retries are safe.
func (a *Activities) SaveJob(ctx context.Context, snap jobs.Snapshot) error {
	row, err := snap.Record()
	if err != nil {
		return err
	}
	started := time.Now()
	err = a.Store.SaveJob(ctx, row)
	a.Metrics.StoreWrite("save_job", err, time.Since(started))
	if err != nil {
		return err
	}
	if snap.Status.Terminal() {
		code := ""
		if snap.Error != nil {
			code = snap.Error.Code
		}
		a.Metrics.JobFinished(string(snap.Service), snap.Provider, string(snap.Status), code)
	}
	return nil
}

// updateProgress projects a job's progress, measured as a store write.
func (a *Activities) updateProgress(ctx context.Context, jobID string, progress int) error {
	started := time.Now()
	err := a.Store.UpdateProgress(ctx, jobID, progress)
	a.Metrics.StoreWrite("update_progress", err, time.Since(started))
	return err
}
