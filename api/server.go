// Package api is the gateway's REST API (docs/api.md). Handlers only
// translate HTTP: jobs are submitted and cancelled, and vendor callbacks
// taken, through jobops; the rest is read from and written to the store
// and the provider catalog through the small interfaces each handler
// declares. One struct per resource, wired by New in this file:
//
//   - jobs.go: jobsHandler, a service's jobs (create, read, cancel, retry)
//   - results.go: resultsHandler, a job's result
//   - events.go: eventsHandler, a job's event stream
//   - joblist.go: jobListing, GET /v1/jobs
//   - batches.go: batchesHandler, batches of jobs
//   - usage.go: usageHandler, GET /v1/usage
//   - catalog.go: catalogHandler, services and providers
//   - statuses.go: statusesHandler, their status updates
//   - tenants.go: tenantsHandler
//   - policies.go, policies_crud.go, policies_scoped.go, policybody.go:
//     policiesHandler, scopedPolicies and their policyCodec
//   - webhooks.go: webhooksHandler, the signing key and delivery attempts
//   - callbacks.go: callbacksHandler, vendors' callbacks
//   - codec.go: codecServer, Temporal's remote codec protocol for operators
//   - readiness.go, openapi.go: /readyz and /openapi.json
//   - openai.go: openAIHandler, the OpenAI-compatible /openai/v1
//
// Shared pieces are plain functions, errors.go (error rendering),
// envelope.go and decode.go (request bodies), pagination.go and
// requestid.go, and one small struct, jobViews (jobview.go), that shows
// jobs; api/auth extracts the caller.
package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"

	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/app/jobwatch"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/internal/tracing"
	"github.com/ai-job-gateway/gateway/internal/vendorcallback"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// JobStore is what the API reads of jobs.
type JobStore interface {
	GetJob(ctx context.Context, id string) (*jobs.Record, error)
	GetTombstone(ctx context.Context, id string) (*jobs.Tombstone, error)
	ListJobs(ctx context.Context, f store.JobFilter, offset, limit int) ([]jobs.Record, int64, error)
}

// JobOps accepts, cancels and retries jobs (jobops.Service).
type JobOps interface {
	Submit(ctx context.Context, req jobops.SubmitRequest) (*jobs.Record, error)
	Cancel(ctx context.Context, job *jobs.Record) (*jobs.Record, error)
	Retry(ctx context.Context, job *jobs.Record) (*jobs.Record, error)
	Delete(ctx context.Context, job *jobs.Record, by string) (*jobs.Tombstone, error)
}

// JobWaiter waits until a job is completed or failed, or ctx ends
// (jobwatch.Watcher).
type JobWaiter interface {
	WaitTerminal(ctx context.Context, id string) bool
}

// Config is the API's dependencies.
type Config struct {
	Store JobStore
	// Jobs accepts, cancels and retries jobs.
	Jobs     JobOps
	Catalog  *providers.Catalog
	Verifier *auth.Verifier
	// APIKeys issues and checks the gateway's own API keys (docs/api.md,
	// API keys); nil refuses keys and leaves out their routes.
	APIKeys *apikeys.Service
	// Audit reads the audit log (docs/api.md, Audit log); nil leaves out
	// its route.
	Audit    AuditLog
	Tenants  TenantStore
	Statuses StatusStore
	Policies PolicyStore
	// Breakers keeps the providers' circuit breakers; nil: providers show
	// no health and their breakers cannot be forced.
	Breakers BreakerStore
	// Waiter lets job create and GET wait for the job on Prefer: wait
	// (docs/api.md, Waiting for a job); nil ignores that preference.
	Waiter JobWaiter
	// Watcher and Events serve GET /v1/{resource}/{id}/events (docs/api.md,
	// Following a job live); without both that route answers 404.
	Watcher *jobwatch.Watcher
	Events  JobEventStore
	// EventsHeartbeat is how often an idle event stream sends a comment
	// (default DefaultEventsHeartbeat).
	EventsHeartbeat time.Duration
	// Routes registers extra routes outside /v1, such as the dev issuer.
	Routes []func(gin.IRouter)
	// ReadyChecks gate /readyz.
	ReadyChecks []ReadyCheck
	// Region and NodeID fill meta.system of responses.
	Region string
	NodeID string
	// Version is the gateway's build version, served in /openapi.json as
	// info.x-gateway-version; "" leaves it out.
	Version string
	Logger  *slog.Logger
	// Now is the clock (tests fix it).
	Now func() time.Time
	// WebhookKey is published at GET /v1/webhooks/public-key; nil (webhook
	// signing not configured) answers that route 503.
	WebhookKey PublicKeySource
	// Deliveries reads webhook delivery attempts.
	Deliveries DeliveryStore
	// Webhooks resends webhook events; nil answers those routes 503.
	Webhooks WebhookOps
	// Usage sums the usage ledger (GET /v1/usage).
	Usage UsageStore
	// Files mints the download_url of result files; nil gives results no
	// download_url.
	Files FileLinks
	// LinkTTL is how long a download_url stays valid (default 1 h).
	LinkTTL time.Duration
	// Metrics records requests and serves GET /metrics; nil records none.
	Metrics *metrics.Metrics
	// Tracing gives each request a span (docs/operations.md, Traces).
	Tracing bool
	// Callbacks takes vendors' callbacks (docs/providers.md, Vendor
	// callbacks); nil answers their route 404.
	Callbacks CallbackReceiver
	// TrustedProxies are the reverse proxies whose X-Forwarded-* headers
	// the gateway believes; from any other peer they are dropped.
	TrustedProxies []netip.Prefix
	// Codec are the codecs the codec server serves Temporal's remote codec
	// protocol with at /codec/encode and /codec/decode, to tokens with
	// admin:codec (docs/operations.md, Codec server): a payloadcodec
	// Encryptor's ReadOnly view. nil answers those routes 404.
	Codec PayloadCodecs
	// CodecOrigins are the browser origins (the Temporal UI's) allowed to
	// call the codec routes (CORS).
	CodecOrigins []string
	// CodecDevSecret, when set, serves the codec routes under
	// CodecDevPath/<secret> too, without a token to loopback peers:
	// gateway dev's embedded Temporal UI, which has no login, is given
	// that endpoint. serve leaves it empty.
	CodecDevSecret string
	// Batches reads batches (docs/api.md, Batches). Without it, or with
	// Jobs no BatchOps, /v1/batches answers 404.
	Batches BatchReader
	// RetentionDefaults is the deployment's retention, for tenants that set
	// none (docs/api.md, Tenants).
	RetentionDefaults store.RetentionDefaults
}

// FileLinks mints pre-signed links to result files (docs/media.md).
type FileLinks interface {
	SignedURL(ctx context.Context, key string, expiry time.Duration) (string, error)
}

// validate names the first required dependency cfg lacks.
func (cfg *Config) validate() error {
	required := []struct {
		field, what string
		missing     bool
	}{
		{"Store", "the job store", cfg.Store == nil},
		{"Jobs", "the job operations (jobops.New)", cfg.Jobs == nil},
		{"Catalog", "the provider catalog", cfg.Catalog == nil},
		{"Verifier", "the token verifier (auth.NewVerifier)", cfg.Verifier == nil},
		{"Tenants", "the tenant store", cfg.Tenants == nil},
		{"Statuses", "the store of service and provider statuses", cfg.Statuses == nil},
		{"Policies", "the policy store", cfg.Policies == nil},
		{"Deliveries", "the store of webhook deliveries", cfg.Deliveries == nil},
		{"Usage", "the usage ledger's store", cfg.Usage == nil},
	}
	for _, r := range required {
		if r.missing {
			return fmt.Errorf("api: Config.%s is required: set it to %s", r.field, r.what)
		}
	}
	return nil
}

// Server serves the API.
type Server struct {
	handler http.Handler
}

// MaxBodyBytes is the largest request body accepted (docs/api.md,
// Validation).
const MaxBodyBytes = 8 << 20

// New builds the API server. The stores, Jobs, Catalog and Verifier are
// required: New names the first one cfg lacks.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Region == "" {
		cfg.Region = "local"
	}
	docs, err := openAPIHandler(cfg.Verifier, cfg.Version)
	if err != nil {
		return nil, err
	}
	return &Server{handler: router(cfg, docs)}, nil
}

// Handler returns the HTTP handler with every route.
func (s *Server) Handler() http.Handler { return s.handler }

// router wires each route to the handler of its resource, each given only
// the dependencies it uses.
func router(cfg Config, docs gin.HandlerFunc) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.ContextWithFallback = true
	proxies := make([]string, 0, len(cfg.TrustedProxies))
	for _, p := range cfg.TrustedProxies {
		proxies = append(proxies, p.String())
	}
	_ = r.SetTrustedProxies(proxies) // parsed already: cannot fail
	if cfg.Tracing {
		// A span per request, continuing a caller's traceparent
		// (docs/operations.md, Traces).
		r.Use(otelgin.Middleware("ai-job-gateway", otelgin.WithGinFilter(notDevCodec)))
	}
	r.Use(dropUntrustedForwarding(cfg.TrustedProxies), assignRequestID, gin.Recovery(), logRequests(cfg.Logger, cfg.Metrics), renderErrors(cfg.Logger),
		// Under /openai/v1, before renderErrors: OpenAI's shape (docs/openai.md).
		openAIErrors(cfg.Logger), limitBody(MaxBodyBytes, map[string]int64{
			vendorcallback.Path: CallbackMaxBodyBytes, "/v1/batches": BatchMaxBodyBytes, CodecPath + "/encode": CodecMaxBodyBytes, CodecPath + "/decode": CodecMaxBodyBytes,
			CodecDevPath + "/:secret/encode": CodecMaxBodyBytes, CodecDevPath + "/:secret/decode": CodecMaxBodyBytes,
			OpenAIPath + "/audio/transcriptions": openAIAudioRouteLimit,
			OpenAIPath + "/audio/translations":   openAIAudioRouteLimit,
			OpenAIPath + "/files":                BatchMaxBodyBytes,
		}), interactive)
	r.NoRoute(handle(notFoundRoute))
	r.NoMethod(handle(methodNotAllowed))

	r.GET("/healthz", healthz)
	r.GET("/readyz", ReadyHandler(cfg.ReadyChecks, cfg.Logger))
	r.GET("/openapi.json", docs)
	if cfg.Metrics != nil {
		// No token: scrapers reach it on the network they are given
		// (docs/operations.md, Metrics).
		r.GET("/metrics", gin.WrapH(cfg.Metrics.Handler()))
	}
	for _, register := range cfg.Routes {
		register(r)
	}

	views := jobViews{files: cfg.Files, linkTTL: cfg.LinkTTL, region: cfg.Region, nodeID: cfg.NodeID,
		tenants: cfg.Tenants, retention: cfg.RetentionDefaults, now: cfg.Now}
	jobsH := jobsHandler{jobs: cfg.Store, ops: cfg.Jobs, views: views, metrics: cfg.Metrics, waiter: cfg.Waiter}
	results := resultsHandler{jobs: cfg.Store, views: views}
	events := eventsHandler{jobs: cfg.Store, events: cfg.Events, watcher: cfg.Watcher, views: views,
		heartbeat: cfg.EventsHeartbeat, logger: cfg.Logger}
	var keys auth.KeyAuthenticator
	if cfg.APIKeys != nil {
		keys = cfg.APIKeys
	}
	authenticate := auth.Middleware(cfg.Verifier, keys)
	v1 := r.Group("/v1", authenticate, recordActor)
	if cfg.Audit != nil {
		auditHandler{log: cfg.Audit}.routes(v1)
	}
	if cfg.APIKeys != nil {
		apiKeysHandler{keys: cfg.APIKeys}.routes(v1)
	}
	for _, svc := range jobs.Services() {
		res := v1.Group(svc.Endpoint()[len("/v1"):])
		write := auth.RequireScope(string(svc.ID) + ":write")
		read := auth.RequireScope(string(svc.ID) + ":read")
		res.POST("", write, jobsH.create(svc))
		res.GET("/:id", read, jobsH.get(svc))
		res.GET("/:id/result", read, results.get(svc))
		if cfg.Watcher != nil && cfg.Events != nil {
			res.GET("/:id/events", read, events.stream(svc))
		}
		res.POST("/:id/cancel", write, jobsH.cancel(svc))
		res.POST("/:id/retry", write, jobsH.retry(svc))
		res.DELETE("/:id", write, jobsH.remove(svc))
	}
	v1.POST("/jobs/:id/retry", auth.RequireScope(auth.ScopeCrossTenant), jobsH.retry(anyService))
	v1.DELETE("/jobs/:id", auth.RequireScope(auth.ScopeCrossTenant), jobsH.remove(anyService))
	catalogHandler{catalog: cfg.Catalog, statuses: cfg.Statuses, breakers: cfg.Breakers}.routes(v1)
	if cfg.Breakers != nil {
		breakersHandler{catalog: cfg.Catalog, breakers: cfg.Breakers}.routes(v1)
	}
	if ops, ok := cfg.Jobs.(BatchOps); ok && cfg.Batches != nil {
		batchesHandler{ops: ops, batches: cfg.Batches, deliveries: cfg.Deliveries, views: views, logger: cfg.Logger}.routes(v1)
	}
	v1.GET("/jobs", handle(jobListing{jobs: cfg.Store, views: views}.list))
	usageHandler{usage: cfg.Usage, deliveries: cfg.Deliveries, tenants: cfg.Tenants, now: cfg.Now}.routes(v1)
	statusesHandler{catalog: cfg.Catalog, statuses: cfg.Statuses}.routes(v1)
	tenantsHandler{tenants: cfg.Tenants, policies: cfg.Policies, catalog: cfg.Catalog, retention: cfg.RetentionDefaults, now: cfg.Now}.routes(v1)
	codec := policyCodec{catalog: cfg.Catalog}
	policyRoutes(v1, policiesHandler{policies: cfg.Policies, codec: codec}, scopedPolicies{policies: cfg.Policies, codec: codec})
	webhooksHandler{key: cfg.WebhookKey, deliveries: cfg.Deliveries, jobs: cfg.Store, resends: cfg.Webhooks}.routes(r, v1)
	newCallbacksHandler(cfg.Callbacks).routes(r)
	uploads, _ := cfg.Files.(blobUploads) // a blob store takes uploads too
	openAIHandler{jobs: cfg.Store, ops: cfg.Jobs, catalog: cfg.Catalog, policies: cfg.Policies, waiter: cfg.Waiter, uploads: uploads,
		events: cfg.Events, metrics: cfg.Metrics, logger: cfg.Logger,
		batches: newOpenAIBatches(cfg),
	}.routes(r, authenticate)
	codecServer{codecs: cfg.Codec, verifier: cfg.Verifier, keys: keys, origins: cfg.CodecOrigins, devSecret: cfg.CodecDevSecret}.routes(r)
	return r
}

// interactive marks each request's store statements as a client's, to go
// before background work's on a single-connection store (SQLite).
func interactive(c *gin.Context) {
	c.Request = c.Request.WithContext(store.Interactive(c.Request.Context()))
	c.Next()
}

// healthz answers GET /healthz: the process is up (docs/operations.md,
// Health).
func healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// logRequests logs each request at debug level and records it in m (nil
// records none), its duration less any wait on Prefer: wait.
func logRequests(logger *slog.Logger, m *metrics.Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		took := time.Since(start)
		waited := c.GetDuration(waitedKey)
		if logger.Enabled(c, slog.LevelDebug) {
			attrs := []any{"method", c.Request.Method, "path", c.Request.URL.Path, "status", c.Writer.Status(), "duration", took, "request_id", RequestID(c.Request.Context())}
			if waited > 0 {
				attrs = append(attrs, "waited", waited)
			}
			if id := tracing.TraceID(c.Request.Context()); id != "" {
				attrs = append(attrs, "trace_id", id)
			}
			logger.Debug("request", attrs...)
		}
		m.HTTPRequest(c.FullPath(), c.Request.Method, c.Writer.Status(), took-waited)
	}
}
