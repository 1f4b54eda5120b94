package activities

import (
	"log/slog"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// Deps are the dependencies of all the activities; New gives each
// receiver the ones it uses.
type Deps struct {
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
	// heartbeat (default: half its heartbeat timeout). Media steps always
	// beat at half theirs.
	HeartbeatInterval time.Duration
	// Signer signs webhook requests.
	Signer *webhooksign.Signer
	// WebhookClient delivers webhooks (default: netguard.NewClient(false,
	// WebhookTimeout), public addresses only).
	WebhookClient *http.Client
	// Deliveries records webhook delivery attempts; nil records none.
	Deliveries DeliveryStore
	// WebhookMessages records what webhook messages carried and which
	// were given up (docs/webhooks.md); nil records none.
	WebhookMessages MessageStore
	// Jobs reads the stored jobs webhook payloads are rendered from.
	Jobs JobReader
	// Deltas records the pieces of streamed answers; nil records none.
	Deltas DeltaWriter

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
	// Breakers keeps the providers' circuit breakers; nil: none.
	Breakers BreakerStore
	// Logger logs what happens outside an activity (breakers' batched
	// outcomes); nil: slog's default.
	Logger *slog.Logger

	// CallbackURLs makes the addresses vendors post results back to
	// (docs/providers.md, Vendor callbacks); nil: this gateway takes no
	// callbacks. Callbacks reads what they posted.
	CallbackURLs CallbackAddresses
	Callbacks    CallbackStore

	// Namespace is Temporal's namespace of job workflows, and
	// DataConverter reads their payloads, for the erasure of deleted
	// jobs; Tombstones records its end (nil: this worker erases none).
	Namespace     string
	DataConverter converter.DataConverter
	Tombstones    TombstoneStore

	// RetentionStore, Deleter and RetentionDefaults are the retention
	// sweep's (docs/api.md, Retention); nil RetentionStore: this worker
	// sweeps nothing.
	RetentionStore    RetentionStore
	Deleter           Deleter
	RetentionDefaults store.RetentionDefaults

	// Tenants and Budgets reserve jobs against their tenant's budgets
	// (docs/api.md, Budgets); nil Budgets: none are.
	Tenants TenantReader
	Budgets BudgetReserver

	// MaxOutageWait is each service's maximum wait for an outage
	// (Routing.MaxOutageWait).
	MaxOutageWait map[jobs.ServiceID]time.Duration

	// BatchFiles reads file batches' items (docs/api.md, Batches); nil:
	// this worker reads none.
	BatchFiles BatchFileReader
}

// Set is all the activities of a worker, one receiver per group.
type Set struct {
	Projections *Projections
	Routing     *Routing
	Calls       *ProviderCalls
	AsyncCalls  *AsyncCalls
	Media       *Media
	Webhooks    *Webhooks
	Sweeps      *Sweeps
	Erasure     *Erasure
	Retention   *Retention
	Budgets     *Budgets
	BatchFiles  *BatchFiles
}

// New builds the activities, each receiver with its share of d.
func New(d Deps) *Set {
	files := Blobs{Store: d.Files, ScratchDir: d.ScratchDir}
	projections := &Projections{Store: d.Store, Metrics: d.Metrics, Providers: d.Providers, Budgets: d.Budgets}
	var breakers *Breakers
	if d.Breakers != nil {
		breakers = &Breakers{Store: d.Breakers, Providers: d.Providers, Metrics: d.Metrics, Logger: d.Logger}
	}
	return &Set{
		Projections: projections,
		Routing: &Routing{Store: d.Routing, Providers: d.Providers, HTTPClient: d.HTTPClient,
			WorkerID: d.WorkerID, Metrics: d.Metrics, Breakers: breakers, MaxOutageWait: d.MaxOutageWait},
		Calls: &ProviderCalls{Providers: d.Providers, Projections: projections, Files: files,
			Latencies: d.Routing, Temporal: d.Temporal, WorkerID: d.WorkerID,
			HeartbeatInterval: d.HeartbeatInterval, Metrics: d.Metrics, Breakers: breakers, Tombstones: d.Jobs, Deltas: d.Deltas},
		AsyncCalls: &AsyncCalls{Providers: d.Providers, Projections: projections, Files: files,
			CallbackURLs: d.CallbackURLs, Callbacks: d.Callbacks, WorkerID: d.WorkerID,
			HeartbeatInterval: d.HeartbeatInterval, Metrics: d.Metrics, Breakers: breakers, Tombstones: d.Jobs},
		Media: &Media{Files: files, Tools: d.MediaTools, Client: d.MediaClient, FetchLimits: d.FetchLimits,
			FetchSlots: d.FetchSlots, Providers: d.Providers, WorkerID: d.WorkerID, Metrics: d.Metrics},
		Webhooks: &Webhooks{Signer: d.Signer, Client: d.WebhookClient, Deliveries: d.Deliveries,
			Messages: d.WebhookMessages, Jobs: d.Jobs, Files: d.Files, LinkTTL: d.LinkTTL, Metrics: d.Metrics},
		Sweeps: &Sweeps{Files: files, Callbacks: d.Callbacks},
		Erasure: &Erasure{Temporal: d.Temporal, Namespace: d.Namespace, DataConverter: d.DataConverter,
			Providers: d.Providers, Files: d.Files, Tombstones: d.Tombstones},
		Retention: &Retention{Store: d.RetentionStore, Deleter: d.Deleter, Files: d.Files,
			Defaults: d.RetentionDefaults, Metrics: d.Metrics},
		Budgets:    &Budgets{Tenants: d.Tenants, Jobs: d.Jobs, Reserver: d.Budgets},
		BatchFiles: &BatchFiles{Reader: d.BatchFiles},
	}
}

// ActivityRegistry is where Register puts the activities:
// worker.Worker, or a test environment.
type ActivityRegistry interface {
	RegisterActivity(a any)
}

// Register registers every receiver's activities. Each is named after its
// method, as when they were methods of one struct: recorded histories
// replay.
func (s *Set) Register(r ActivityRegistry) {
	for _, receiver := range []any{s.Projections, s.Routing, s.Calls, s.AsyncCalls, s.Media, s.Webhooks, s.Sweeps, s.Erasure, s.Retention, s.Budgets, s.BatchFiles} {
		r.RegisterActivity(receiver)
	}
}
