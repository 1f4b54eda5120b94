package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/gin-gonic/gin"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/app/budgets"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/app/jobwatch"
	"github.com/ai-job-gateway/gateway/internal/buildinfo"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/internal/netguard"
	"github.com/ai-job-gateway/gateway/internal/tracing"
	"github.com/ai-job-gateway/gateway/internal/vendorcallback"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// runServe runs the API against an external Temporal and database.
func runServe(ctx context.Context, cfg config, logger *slog.Logger) error {
	m := metrics.New()
	// Temporal is dialled lazily: serve starts, and accepts jobs into its
	// outbox, while Temporal is away (docs/operations.md, Health).
	deps, err := connect(ctx, &cfg, m, logger, true)
	if err != nil {
		return err
	}
	defer deps.close()
	registry, st, signer, tc := deps.registry, deps.store, deps.signer, deps.temporal
	listener, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	verifier := auth.NewVerifier(cfg.OIDCIssuer, cfg.OIDCAudience, nil)
	cfg.JobStarts = resolveJobStarts(cfg.JobStarts, st.Dialect())
	starts := runDispatcher(ctx, cfg, st, tc, false, searchAttributesReady(ctx, tc, cfg.TemporalNamespace, false, logger), logger)
	logger.Info("job starts", "made_by", cfg.JobStarts)
	m.Backlog(st.Jobs.CountJobStarts)
	m.Breakers(breakerSamples(st.Breakers, registry))
	defer starts.stopAndWait()
	backlog := startBacklogGuard(ctx, cfg, st, logger)
	apiCfg, err := apiConfig(cfg, store.NewCache(st, store.CacheTTL), tc, starts.Dispatcher, backlog, registry, verifier, signer, m, logger)
	if err != nil {
		return err
	}
	apiCfg.ReadyChecks = readyChecks(st, tc, verifier, false, true)
	apiCfg.Metrics = m
	watcher := startJobWatcher(ctx, st, logger)
	apiCfg.Waiter, apiCfg.Watcher, apiCfg.Events = watcher, watcher, st.Jobs
	apiCfg.CodecOrigins, _ = parseOrigins(cfg.TemporalUIOrigin) // validated
	files, err := openFiles(ctx, cfg, "", logger)
	if err != nil {
		return err
	}
	defer files.Close()
	apiCfg.LinkTTL = cfg.LinkTTL
	if files != nil {
		apiCfg.Files = files
	}
	srv, err := newAPI(apiCfg, st, signer, consoleOIDC(cfg, cfg.OIDCIssuer, false), logger)
	if err != nil {
		return err
	}
	logger.Info("gateway serve ready", "api", "http://"+listener.Addr().String(), "version", buildinfo.Read().Version)
	return serveHTTP(ctx, listener, srv.Handler(), logger)
}

// apiConfig is the API configuration dev and serve share, with the job
// operations it calls.
func apiConfig(cfg config, st *store.Cache, tc client.Client, starts *jobops.Dispatcher, backlog *jobops.BacklogGuard, registry *providers.Registry, verifier *auth.Verifier, signer *webhooksign.Signer, m *metrics.Metrics, logger *slog.Logger) (api.Config, error) {
	// Every API takes vendor callbacks: only a worker sharing the signing
	// key can make an address whose token it accepts.
	callbackTokens, err := vendorcallback.NewTokens(signer)
	if err != nil {
		return api.Config{}, err
	}
	keyTags, err := apikeys.NewTags(signer)
	if err != nil {
		return api.Config{}, err
	}
	ops, err := jobops.New(jobops.Config{
		CallbackTokens:         callbackTokens,
		Callbacks:              st.Store.Jobs,
		Jobs:                   st.Store.Jobs,
		Tenants:                st,
		Statuses:               st,
		Policies:               st,
		Rates:                  st,
		Catalog:                registry.Catalog(),
		Temporal:               tc,
		Starts:                 starts,
		CheckURLs:              !cfg.AllowPrivateNetworks,
		TenantCreatesPerMinute: cfg.TenantCreateRate,
		Backlog:                backlog,
		DataConverter:          cfg.temporal.DataConverter,
		Budgets:                budgetReserver(st.Store, registry, m, logger),
		Webhooks:               st.Store.Webhooks,
		Batches:                st.Store.Batches,
		WebhookGiveUpAfter:     cfg.WebhookGiveUpAfter,
		Generation:             cfg.JobGeneration,
		Audit:                  st.Store.Audit,
		Logger:                 logger,
	})
	if err != nil {
		return api.Config{}, err
	}
	proxies, err := api.ParseTrustedProxies(cfg.TrustedProxies)
	if err != nil {
		return api.Config{}, err
	}
	return api.Config{
		TrustedProxies: proxies,
		Store:          st.Store.Jobs,
		Jobs:           ops,
		Catalog:        registry.Catalog(),
		Verifier:       verifier,
		APIKeys:        apikeys.New(st.Store.APIKeys, st, keyTags, nil, logger.With("component", "api-keys")),
		Audit:          st.Store.Audit,
		Tenants:        st,
		Statuses:       st,
		Policies:       st,
		Breakers:       st,
		Region:         cfg.Region,
		NodeID:         nodeID(),
		Version:        buildinfo.Read().Version,
		Logger:         logger,
		WebhookKey:     signer,
		Deliveries:     st.Store.Webhooks,
		Webhooks:       ops,
		Usage:          st.Store.Usage,
		Batches:        st.Store.Batches,
		Callbacks:      ops,
		Tracing:        tracing.Enabled(),
		Codec:          cfg.codec,
		// The deployment's retention, shown for tenants that set none.
		RetentionDefaults: cfg.Retention,
	}, nil
}

// startJobWatcher is the watcher behind Prefer: wait and event streams
// (docs/api.md, Waiting for a job; Following a job live). It closes when ctx ends, so the requests waiting
// answer before the server shuts down.
func startJobWatcher(ctx context.Context, st *store.Store, logger *slog.Logger) *jobwatch.Watcher {
	w := jobwatch.New(st.Jobs, jobwatch.DefaultInterval, logger.With("component", "jobwatch"))
	context.AfterFunc(ctx, w.Close)
	return w
}

// runningDispatcher is the dispatcher of job starts of dev and serve,
// running until stopAndWait, which the commands call once the HTTP server
// has shut down.
type runningDispatcher struct {
	*jobops.Dispatcher
	stop context.CancelFunc
	done chan struct{}
}

// runDispatcher starts the workflows of the jobs this process accepts, and
// those left in the outbox. eager: the worker runs in this process.
func runDispatcher(ctx context.Context, cfg config, st *store.Store, tc client.Client, eager, searchAttributes bool, logger *slog.Logger) runningDispatcher {
	// Not stopped by the command's context: the API accepts jobs until its
	// requests have drained, and the dispatcher must take those too.
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	d := runningDispatcher{
		stop: stop,
		Dispatcher: jobops.NewDispatcher(jobops.DispatcherConfig{
			Store:            st.Jobs,
			Temporal:         tc,
			EagerStart:       eager,
			Concurrency:      cfg.StartConcurrency,
			AcceptTarget:     cfg.AcceptTarget,
			SearchAttributes: searchAttributes,
			Generation:       cfg.JobGeneration,
			HandOff:          handOff(cfg, st),
			Logger:           logger.With("component", "job-starts"),
		}),
		done: make(chan struct{}),
	}
	go func() {
		defer close(d.done)
		d.Run(ctx)
	}()
	return d
}

// --job-starts values (docs/operations.md, Where jobs are started).
const (
	jobStartsAuto    = "auto"
	jobStartsServe   = "serve"
	jobStartsWorkers = "workers"
)

// resolveJobStarts turns --job-starts auto into workers on PostgreSQL,
// whose notifications wake the workers at once, and serve otherwise.
func resolveJobStarts(mode, dialect string) string {
	if mode != jobStartsAuto {
		return mode
	}
	if dialect == "postgres" {
		return jobStartsWorkers
	}
	return jobStartsServe
}

// handOff is how serve wakes the workers' dispatchers with --job-starts
// workers; nil otherwise (serve starts jobs itself).
func handOff(cfg config, st *store.Store) func(context.Context) error {
	if cfg.JobStarts != jobStartsWorkers || st.Dialect() != "postgres" {
		return nil // SQLite cannot notify: serve starts the jobs itself
	}
	return st.Jobs.NotifyJobStarts
}

// runWorkerDispatcher starts, eagerly, the jobs serve hands off
// (--job-starts workers) and any start left due in the outbox, woken by
// serve's notifications on PostgreSQL; on SQLite it finds them by sweeping
// every second.
func runWorkerDispatcher(ctx context.Context, cfg config, st *store.Store, tc client.Client, logger *slog.Logger) runningDispatcher {
	// No creates of its own to pace by.
	cfg.AcceptTarget, cfg.JobStarts = 0, jobStartsServe
	d := runDispatcher(ctx, cfg, st, tc, true, searchAttributesReady(ctx, tc, cfg.TemporalNamespace, false, logger), logger)
	go func() {
		if err := st.Jobs.ListenJobStarts(ctx, d.Wake); err != nil && !errors.Is(err, store.ErrNoNotifications) {
			logger.Warn("listen for job starts", "error", err)
		}
	}()
	return d
}

// stopAndWait stops the dispatcher and waits until it has handed back the
// starts it held.
func (d runningDispatcher) stopAndWait() {
	d.stop()
	<-d.done
}

// externalDeps are what serve and worker connect to.
type externalDeps struct {
	registry *providers.Registry
	store    *store.Store
	signer   *webhooksign.Signer
	temporal client.Client
}

// connect loads the catalog and connects to the database and Temporal,
// setting the data converter that encrypts payloads in cfg.
// lazy connects to Temporal on first use rather than now.
func connect(ctx context.Context, cfg *config, m *metrics.Metrics, logger *slog.Logger, lazy bool) (*externalDeps, error) {
	registry, err := loadRegistry(*cfg)
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, *cfg, false)
	if err != nil {
		return nil, err
	}
	signer, err := webhookSigner(ctx, *cfg, st)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := encryptPayloads(ctx, cfg, "serve", encrypting, st, logger); err != nil {
		_ = st.Close()
		return nil, err
	}
	tc, err := dialTemporalMeasured(ctx, *cfg, m, logger, lazy)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	return &externalDeps{registry: registry, store: st, signer: signer, temporal: tc}, nil
}

func (d *externalDeps) close() {
	d.temporal.Close()
	_ = d.store.Close()
}

// runWorker runs the Temporal worker, with health endpoints on --listen.
func runWorker(ctx context.Context, cfg config, logger *slog.Logger) error {
	worker.SetStickyWorkflowCacheSize(workflowCacheSize)
	m := metrics.New()
	deps, err := connect(ctx, &cfg, m, logger, false)
	if err != nil {
		return err
	}
	defer deps.close()
	registry, st, signer, tc := deps.registry, deps.store, deps.signer, deps.temporal
	reads := store.NewCache(st, store.CacheTTL)
	defer reads.Flush(context.WithoutCancel(ctx))
	files, err := openFiles(ctx, cfg, "", logger)
	if err != nil {
		return err
	}
	defer files.Close()
	w, err := startWorker(ctx, cfg, tc, reads, registry, nodeID(), cfg.workerNetwork(signer), cfg.workerMedia(files, logger), m, logger)
	if err != nil {
		return err
	}
	defer w.Stop()
	starts := runWorkerDispatcher(ctx, cfg, st, tc, logger)
	defer starts.stopAndWait() // before the worker stops: its starts are eager
	listener, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	gin.SetMode(gin.ReleaseMode) // no debug route listing
	r := gin.New()
	checks := readyChecks(st, tc, nil, false, false)
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/metrics", gin.WrapH(m.Handler()))
	r.GET("/readyz", api.ReadyHandler(checks, logger))
	logger.Info("gateway worker ready", "task_queue", workflows.TaskQueue, "health", "http://"+listener.Addr().String(), "version", buildinfo.Read().Version)
	return serveHTTP(ctx, listener, r, logger)
}

// runMigrate applies the schema and exits.
func runMigrate(ctx context.Context, cfg config, logger *slog.Logger) error {
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = "sqlite:" + filepath.Join(cfg.DataDir, "gateway.db")
	}
	st, err := openStore(ctx, cfg, true)
	if err != nil {
		return err
	}
	logger.Info("database schema is up to date")
	if err := st.Close(); err != nil {
		return err
	}
	if cfg.TemporalAddress == "" {
		return nil
	}
	tc, err := dialTemporal(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer tc.Close()
	if err := registerSearchAttributes(ctx, tc, cfg.TemporalNamespace); err != nil {
		return err
	}
	logger.Info("search attributes are registered", "namespace", cfg.TemporalNamespace)
	return nil
}

// loadRegistry builds the adapters of the catalog (--providers, or the
// built-in one) with extra providers added to it.
func loadRegistry(cfg config, extra ...*providers.Provider) (*providers.Registry, error) {
	catalog, err := providers.LoadCatalog(cfg.ProvidersFile)
	if err != nil {
		return nil, err
	}
	for _, p := range extra {
		if _, taken := catalog.Lookup(p.ID); taken {
			return nil, fmt.Errorf("the catalog already has a provider %q; --local-engines adds one of that id: rename yours", p.ID)
		}
		catalog.Providers = append(catalog.Providers, p)
	}
	return providers.NewRegistry(catalog, adapterFactories(cfg))
}

func openStore(ctx context.Context, cfg config, migrate bool) (*store.Store, error) {
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	st.SetMaxConns(cfg.DatabaseMaxConns) // 0 (commands without the flag): the default
	if migrate {
		if err := st.Migrate(ctx); err != nil {
			_ = st.Close()
			return nil, err
		}
	}
	return st, nil
}

func dialTemporal(ctx context.Context, cfg config, logger *slog.Logger) (client.Client, error) {
	return dialTemporalMeasured(ctx, cfg, nil, logger, false)
}

// dialTemporalMeasured is dialTemporal with the SDK's own metrics exported
// into m (docs/operations.md, Metrics); m nil exports none.
// lazy: connect on first use (client.NewLazyClient), not now.
func dialTemporalMeasured(ctx context.Context, cfg config, m *metrics.Metrics, logger *slog.Logger, lazy bool) (client.Client, error) {
	opts := cfg.temporal // TLS, API key, gRPC metadata (resolveTemporal)
	opts.HostPort, opts.Namespace = cfg.TemporalAddress, cfg.TemporalNamespace
	opts.ConnectionOptions.GrpcCompression = cfg.grpcCompression(cfg.TemporalAddress)
	opts.Logger = sdklog.NewStructuredLogger(logger.With("component", "temporal-sdk"))
	if m != nil {
		handler, err := m.TemporalHandler()
		if err != nil {
			return nil, fmt.Errorf("temporal metrics: %w", err)
		}
		opts.MetricsHandler = handler
	}
	if tracing.Enabled() {
		// Spans for the workflow and its activities, children of the
		// span that started it; their log lines carry TraceID.
		traced, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{})
		if err != nil {
			return nil, fmt.Errorf("temporal tracing: %w", err)
		}
		opts.Interceptors = append(opts.Interceptors, traced)
	}
	if lazy {
		return client.NewLazyClient(opts)
	}
	tc, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, temporalDialError(opts, err)
	}
	return tc, nil
}

// workflowCacheSize is how many job workflows a worker keeps in memory
// between their workflow tasks (the SDK's default is 10,000). A job waits
// for its provider call between tasks; one that was evicted replays its
// short history when the call ends. This bounds a worker's memory when
// thousands of jobs are in flight. The cache is shared by every SDK worker
// of the process (the embedded server's own too) and sized when the first
// one starts, so the commands set it first. `gateway dev`, which shares
// its process with the embedded server, keeps fewer: about 6 MiB less
// with a thousand jobs in flight (docs/benchmarks-results.md, What was
// changed, change 9).
const (
	workflowCacheSize    = 256
	devWorkflowCacheSize = 64
)

// startWorker starts the job worker, makes the retention sweep's schedule,
// and runs its housekeeping until ctx ends.
//
// On stop (SIGTERM), the worker takes no new tasks and gives the running
// activities --worker-stop-timeout to finish; those still running then are
// cancelled and resume on another worker from their last heartbeat
// (docs/operations.md, Shutdown).
func startWorker(ctx context.Context, cfg config, tc client.Client, st *store.Cache, registry *providers.Registry, nodeID string, network workerNetwork, mediaCfg workerMedia, m *metrics.Metrics, logger *slog.Logger) (worker.Worker, error) {
	w := worker.New(tc, workflows.TaskQueue, workerOptions(cfg, nodeID))
	registerWorkflows(w)
	deleter, err := retentionDeleter(cfg, st, tc, registry, logger.With("component", "retention"))
	if err != nil {
		return nil, err
	}
	deps := activities.Deps{Store: st.Store.Jobs, Routing: st, Breakers: st, Providers: registry, Temporal: tc, WorkerID: nodeID, Metrics: m,
		Namespace: temporalNamespace(cfg), DataConverter: cfg.temporal.DataConverter, Tombstones: st.Store.Jobs, Deltas: st.Store.Jobs,
		RetentionStore: retentionStore{st.Store.Housekeeping, st.Store.Jobs}, Deleter: deleter, RetentionDefaults: cfg.Retention,
		Tenants: st.Store.Routing, Budgets: budgetReserver(st.Store, registry, m, logger), MaxOutageWait: cfg.MaxOutageWait,
		Logger: logger.With("component", "breakers")}
	if err := network.wire(&deps, st.Store); err != nil {
		return nil, err
	}
	mediaCfg.wire(&deps)
	if deps.BatchFiles, err = batchFileReader(ctx, cfg, st, tc, registry, mediaCfg.scratch, m, logger); err != nil {
		return nil, err
	}
	acts := activities.New(deps)
	acts.Register(w)
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	if err := ensureRetentionSchedule(ctx, tc); err != nil {
		logger.Warn("the retention sweep's schedule could not be made; the next worker start tries again", "schedule", workflows.RetentionScheduleID, "error", err)
	}
	notifier := budgetNotifier(cfg, st.Store, network.signer, m, logger)
	hlog := logger.With("component", "housekeeping")
	rec := newReconciler(st.Store, tc, cfg.temporal.DataConverter, m, hlog.With("sweep", "job_reconcile"))
	go housekeeper(acts.Sweeps, st.Store, cfg.Retention, notifier, rec, m, hlog).Run(ctx)
	return w, nil
}

// registerWorkflows registers the gateway's workflows with a worker or a
// replayer.
func registerWorkflows(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(workflows.JobWorkflow, workflow.RegisterOptions{Name: workflows.JobWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.DeletionWorkflow, workflow.RegisterOptions{Name: workflows.DeletionWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.RetentionWorkflow, workflow.RegisterOptions{Name: workflows.RetentionWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.WebhookResendWorkflow, workflow.RegisterOptions{Name: workflows.WebhookResendWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.BatchFileWorkflow, workflow.RegisterOptions{Name: workflows.BatchFileWorkflowName})
}

// temporalNamespace is the namespace of the gateway's workflows.
func temporalNamespace(cfg config) string {
	if cfg.temporal.Namespace != "" {
		return cfg.temporal.Namespace
	}
	if cfg.TemporalNamespace != "" {
		return cfg.TemporalNamespace
	}
	return client.DefaultNamespace
}

// readyChecks are the checks of /readyz. accepting (serve) needs Temporal
// and the identity provider to have answered once; after that it stays
// ready without them: jobs go to the outbox, tokens are checked against
// the keys already fetched (docs/operations.md, Health).
func readyChecks(st *store.Store, tc client.Client, verifier *auth.Verifier, worker, accepting bool) []api.ReadyCheck {
	checks := []api.ReadyCheck{
		{Name: "store", Check: st.Ping},
		{Name: "temporal", Degradable: accepting, Check: func(ctx context.Context) error {
			_, err := tc.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		}},
	}
	if verifier != nil {
		checks = append(checks, api.ReadyCheck{Name: "identity", Check: verifier.Ready, Degradable: accepting})
	}
	if worker {
		checks = append(checks, api.ReadyCheck{Name: "worker", Check: func(ctx context.Context) error {
			resp, err := tc.DescribeTaskQueue(ctx, workflows.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
			if err != nil {
				return err
			}
			if len(resp.GetPollers()) == 0 {
				return errors.New("no worker polls the task queue yet")
			}
			return nil
		}})
	}
	return checks
}

func serveHTTP(ctx context.Context, listener net.Listener, handler http.Handler, logger *slog.Logger) error {
	server := api.NewHTTPServer(handler, api.DefaultServerTimeouts)
	errc := make(chan error, 1)
	go func() { errc <- server.Serve(listener) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func nodeID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "gateway"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// budgetReserver reserves jobs against their tenant's budgets, in the
// store every process shares (docs/api.md, Budgets).
func budgetReserver(st *store.Store, registry *providers.Registry, m *metrics.Metrics, logger *slog.Logger) *budgets.Reserver {
	return &budgets.Reserver{Store: st.Usage, Prices: registry.Prices(), Metrics: m, Logger: logger.With("component", "budgets")}
}

// budgetNotifier delivers the budget.threshold events reservations queued,
// from the workers' housekeeping (docs/api.md, Budgets).
func budgetNotifier(cfg config, st *store.Store, signer *webhooksign.Signer, m *metrics.Metrics, logger *slog.Logger) *budgets.Notifier {
	return &budgets.Notifier{Store: st.Usage, Tenants: st.Routing, Signer: signer, Metrics: m, Logger: logger.With("component", "budgets"),
		Client: netguard.NewClient(cfg.AllowPrivateNetworks, activities.WebhookTimeout), GiveUpAfter: cfg.WebhookGiveUpAfter}
}

// retentionStore is what the retention activities read: the retention
// sweep's own store and the jobs it expires.
type retentionStore struct {
	*store.HousekeepingStore
	*store.JobStore
}
