// Package devtemporal runs an embedded Temporal dev server (and, optionally,
// the Temporal Web UI) inside the `gateway dev` process.
//
// The server is go.temporal.io/server with all four services (frontend,
// history, matching, worker) in one process, static membership (no ringpop),
// one history shard and SQLite persistence, either in a file (state survives
// restarts) or in memory (tests).
package devtemporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	// DefaultNamespace is used when Options.Namespace is empty.
	DefaultNamespace = "default"
	// DefaultFrontendAddress is used when Options.FrontendAddress is empty.
	DefaultFrontendAddress = "127.0.0.1:7233"
	// DefaultRetention is the retention of closed workflow histories in the
	// namespace created by Start. It only applies when the namespace is
	// created; an existing namespace keeps its retention.
	DefaultRetention = 72 * time.Hour
	// DefaultStartTimeout bounds Start when ctx carries no deadline.
	DefaultStartTimeout = 60 * time.Second

	clusterName = "active"
	loopbackV4  = "127.0.0.1"
)

// Options configures Start.
type Options struct {
	// DatabaseFile is the SQLite file. It is created (schema and namespace) on
	// first start and reused afterwards, so workflows survive a process
	// restart. The parent directory must exist. "" keeps everything in memory
	// (tests); note that the SQLite plugin never frees its connections, so an
	// in-memory database lives until the process exits.
	DatabaseFile string
	// FrontendAddress is the host:port of the gRPC frontend, e.g.
	// "127.0.0.1:7233". Port 0 picks a free port. An empty host or
	// "localhost" means 127.0.0.1; otherwise the host must be an IP literal.
	// "" means DefaultFrontendAddress.
	FrontendAddress string
	// UIAddress is the host:port of the Web UI. "" disables the UI; port 0
	// picks a free port. Host handling as for FrontendAddress.
	UIAddress string
	// CodecEndpoint is the codec server the UI decodes payloads with (the
	// gateway API's base URL + "/codec/dev/<secret>"), called from the
	// browser without a token; "" leaves payloads as Temporal holds them.
	CodecEndpoint string
	// Namespace is created if missing. "" means DefaultNamespace.
	Namespace string
	// Logger receives the server's logs. nil means slog.Default().
	Logger *slog.Logger
	// LogLevel is the minimum level of server logs passed to Logger. The
	// server is chatty, so nil means slog.LevelWarn. Any slog.Level can be
	// assigned; a *slog.LevelVar allows changing it at run time.
	//
	// This is a slog.Leveler rather than a slog.Level because the zero Level
	// is Info, which would make "unset → Warn" impossible to express.
	LogLevel slog.Leveler
}

// Server is a running embedded Temporal dev server.
type Server struct {
	dbFile          string // absolute path, "" for memory
	frontendAddress string
	uiAddress       string
	namespace       string

	server       temporal.Server
	serverLogger *serverLogger
	ui           *uiserver.Server
	uiDone       chan struct{}
	logger       *slog.Logger

	stopOnce sync.Once
}

// FrontendAddress returns the host:port clients should dial.
func (s *Server) FrontendAddress() string { return s.frontendAddress }

// UIAddress returns the host:port of the Web UI, or "" when it is disabled.
func (s *Server) UIAddress() string { return s.uiAddress }

// Namespace returns the namespace created (or found) by Start.
func (s *Server) Namespace() string { return s.namespace }

// Stop stops the UI and then the server. It is idempotent and safe to call
// from several goroutines. From Stop on, only server errors are logged.
//
// Known v1.32.1 limitation: the worker service never stops the system SDK
// workers of its scanners and parent-close-policy processor ("Nothing is
// gracefully stopping these workers" in service/worker/scanner), so about a
// hundred goroutines keep polling the closed frontend (with back-off) after
// Stop. This only matters when several servers are started in one process
// (tests); `gateway dev` stops the server when it exits.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.serverLogger != nil {
			s.serverLogger.state.stopping.Store(true)
		}
		if s.ui != nil {
			s.ui.Stop()
			select {
			case <-s.uiDone:
			case <-time.After(5 * time.Second):
				s.logger.Warn("devtemporal: UI server did not stop in time")
			}
		}
		if s.server != nil {
			if err := s.server.Stop(); err != nil {
				s.logger.Warn("devtemporal: error stopping Temporal server", "error", err)
			}
		}
		if s.dbFile != "" {
			releaseDatabase(s.dbFile)
		}
	})
}

// Start starts the server (and the UI when Options.UIAddress is set). It
// returns once the frontend accepts connections, the namespace can be
// described and the history service answers for it. It gives up when ctx is
// done or, if ctx has no deadline, after DefaultStartTimeout.
func Start(ctx context.Context, opts Options) (_ *Server, retErr error) {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.FrontendAddress == "" {
		opts.FrontendAddress = DefaultFrontendAddress
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LogLevel == nil {
		opts.LogLevel = slog.LevelWarn
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}

	// Ports. Everything is resolved and checked before the server is built:
	// Temporal and the UI server treat a failing listener as fatal (the UI
	// server even calls os.Exit), so a conflict must be reported here.
	unlockPorts := sync.OnceFunc(lockPorts())
	defer unlockPorts()
	frontendIP, frontendPort, err := resolveListenAddress("frontend", opts.FrontendAddress)
	if err != nil {
		return nil, err
	}
	frontendDial := net.JoinHostPort(dialIP(frontendIP), strconv.Itoa(frontendPort))
	var uiIP string
	var uiPort int
	if opts.UIAddress != "" {
		if uiIP, uiPort, err = resolveListenAddress("UI", opts.UIAddress); err != nil {
			return nil, err
		}
	}
	// Internal services only ever talk to each other: keep them on loopback.
	var internalPorts [3]int
	for i := range internalPorts {
		if internalPorts[i], err = FreePort(loopbackV4); err != nil {
			return nil, fmt.Errorf("devtemporal: picking a port for an internal service: %w", err)
		}
	}

	dbFile := ""
	if opts.DatabaseFile != "" {
		if dbFile, err = filepath.Abs(opts.DatabaseFile); err != nil {
			return nil, fmt.Errorf("devtemporal: database file %q: %w", opts.DatabaseFile, err)
		}
		if err := claimDatabase(dbFile); err != nil {
			return nil, err
		}
		defer func() {
			if retErr != nil {
				releaseDatabase(dbFile)
			}
		}()
	}
	sqlConf, err := prepareDatabase(dbFile, opts.Namespace)
	if err != nil {
		return nil, err
	}

	logger := newServerLogger(opts.Logger, opts.LogLevel)
	conf := buildConfig(sqlConf, frontendIP, frontendPort, frontendDial, internalPorts)
	serverOpts, err := buildServerOptions(conf, logger, frontendDial, internalPorts)
	if err != nil {
		return nil, err
	}
	srv, err := temporal.NewServer(serverOpts...)
	if err != nil {
		return nil, fmt.Errorf("devtemporal: creating Temporal server: %w", err)
	}
	s := &Server{
		dbFile:          dbFile,
		frontendAddress: frontendDial,
		namespace:       opts.Namespace,
		serverLogger:    logger,
		logger:          opts.Logger,
	}
	started := time.Now()
	err = srv.Start()
	unlockPorts() // the services have bound their ports (or failed)
	if err != nil {
		// Start may have brought up some services before failing.
		logger.state.stopping.Store(true)
		_ = srv.Stop()
		return nil, fmt.Errorf("devtemporal: starting Temporal server on %s: %w", frontendDial, err)
	}
	s.server = srv
	defer func() {
		if retErr != nil {
			s.Stop()
		}
	}()

	if err := waitReady(ctx, frontendDial, opts.Namespace); err != nil {
		return nil, fmt.Errorf("devtemporal: Temporal server on %s not ready after %s: %w",
			frontendDial, time.Since(started).Round(time.Millisecond), err)
	}

	if opts.UIAddress != "" {
		if err := s.startUI(ctx, uiIP, uiPort, frontendDial, opts.Namespace, opts.CodecEndpoint); err != nil {
			return nil, err
		}
	}
	opts.Logger.Debug("devtemporal: started",
		"frontend", s.frontendAddress, "ui", s.uiAddress, "namespace", s.namespace,
		"database", opts.DatabaseFile, "elapsed", time.Since(started))
	return s, nil
}

// prepareDatabase builds the SQLite persistence config, creating the schema
// when the database file (an absolute path, or "" for memory) does not exist
// yet and the namespace when missing.
func prepareDatabase(file, namespace string) (*config.SQL, error) {
	conf := &config.SQL{PluginName: sqliteplugin.PluginName}
	if file == "" {
		// The plugin creates the schema itself for in-memory databases. The
		// name only has to be unique in this process: the plugin shares one
		// connection per DSN between all services.
		conf.DatabaseName = fmt.Sprintf("devtemporal-%d-%d", os.Getpid(), memDBSeq.Add(1))
		conf.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
	} else {
		abs := file
		// The plugin builds a "file:<name>?<params>" URI, so these characters
		// would be misread as query, fragment or escape.
		if strings.ContainsAny(abs, "?#%") {
			return nil, fmt.Errorf("devtemporal: database file %q: path must not contain '?', '#' or '%%'", abs)
		}
		conf.DatabaseName = abs
		// Every key that is not an SQLite URI parameter (mode, cache, ...)
		// is turned into a "_pragma=key=value" DSN parameter by the v1.32.1
		// plugin, which modernc.org/sqlite runs as "PRAGMA key=value" on each
		// new connection. The plugin itself does not restrict pragmas (only
		// temporaltest's wrapper does, to these two).
		conf.ConnectAttributes = map[string]string{
			"mode": "rwc",
			// WAL: readers do not block the writer and each commit is one
			// sequential append instead of a rollback-journal round trip.
			"journal_mode": "wal",
			// NORMAL in WAL mode: no fsync per commit, only at checkpoints.
			// A process crash loses nothing; a power loss or OS crash can
			// lose the last transactions but never corrupts the database.
			"synchronous": "NORMAL",
		}
		// MaxConns stays at the plugin default of 1: all services share one
		// connection, which avoids SQLITE_BUSY between Temporal's own
		// transactions (WAL would allow more readers, but deferred
		// transactions that upgrade to writers can then fail with BUSY).

		if _, err := os.Stat(abs); errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat(filepath.Dir(abs)); err != nil {
				return nil, fmt.Errorf("devtemporal: directory for database file: %w", err)
			}
			if err := sqliteschema.SetupSchema(conf); err != nil {
				// Do not leave a half-initialised file behind: the next start
				// would skip the schema setup.
				for _, suffix := range []string{"", "-wal", "-shm"} {
					_ = os.Remove(abs + suffix)
				}
				return nil, fmt.Errorf("devtemporal: setting up schema in %s: %w", abs, err)
			}
		} else if err != nil {
			return nil, fmt.Errorf("devtemporal: database file: %w", err)
		}
	}

	nsConf, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, nil)
	if err != nil {
		return nil, fmt.Errorf("devtemporal: namespace config: %w", err)
	}
	nsConf.Detail.Config.Retention = durationpb.New(DefaultRetention)
	// CreateNamespaces skips namespaces that already exist (looked up by
	// name), so this is safe on every start.
	if err := sqliteschema.CreateNamespaces(conf, nsConf); err != nil {
		return nil, fmt.Errorf("devtemporal: creating namespace %q: %w", namespace, err)
	}
	return conf, nil
}

var memDBSeq atomic.Int64

// Database files used by running servers of this process. Two servers on one
// file would both claim its only history shard. (Another process on the same
// file is normally stopped earlier by the frontend port check.)
var (
	openDBsMu sync.Mutex
	openDBs   = map[string]bool{}
)

func claimDatabase(file string) error {
	openDBsMu.Lock()
	defer openDBsMu.Unlock()
	if openDBs[file] {
		return fmt.Errorf("devtemporal: database file %s is already used by a running server in this process", file)
	}
	openDBs[file] = true
	return nil
}

func releaseDatabase(file string) {
	openDBsMu.Lock()
	defer openDBsMu.Unlock()
	delete(openDBs, file)
}

func buildConfig(sqlConf *config.SQL, frontendIP string, frontendPort int, frontendDial string, internalPorts [3]int) *config.Config {
	const store = "sqlite-default"
	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = loopbackV4
	// Global.Metrics nil → no-op metrics handler, no Prometheus listener.
	// Global.PProf.Port 0 → no pprof listener.
	conf.Persistence.DefaultStore = store
	conf.Persistence.VisibilityStore = store
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{store: {SQL: sqlConf}}
	conf.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				// Updated in the persisted cluster metadata on each start,
				// so a new port after a restart is fine.
				RPCAddress: frontendDial,
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = map[string]config.Service{
		// HTTPPort 0: the frontend's HTTP API is not started.
		string(primitives.FrontendService): {RPC: config.RPC{GRPCPort: frontendPort, BindOnIP: frontendIP}},
		string(primitives.HistoryService):  {RPC: config.RPC{GRPCPort: internalPorts[0], BindOnIP: loopbackV4}},
		string(primitives.MatchingService): {RPC: config.RPC{GRPCPort: internalPorts[1], BindOnIP: loopbackV4}},
		string(primitives.WorkerService):   {RPC: config.RPC{GRPCPort: internalPorts[2], BindOnIP: loopbackV4}},
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontendDial
	return &conf
}

func buildServerOptions(conf *config.Config, logger *serverLogger, frontendDial string, internalPorts [3]int) ([]temporal.ServerOption, error) {
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("devtemporal: authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("devtemporal: claim mapper: %w", err)
	}
	internal := func(port int) static.Hosts {
		return static.SingleLocalHost(net.JoinHostPort(loopbackV4, strconv.Itoa(port)))
	}
	return []temporal.ServerOption{
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		// Static membership: no ringpop gossip, no membership ports, and no
		// join delay at start-up.
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: static.SingleLocalHost(frontendDial),
			primitives.HistoryService:  internal(internalPorts[0]),
			primitives.MatchingService: internal(internalPorts[1]),
			primitives.WorkerService:   internal(internalPorts[2]),
		}),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynamicConfig()),
	}, nil
}

// dynamicConfig returns the dynamic config of the dev server. Only values
// that differ from the v1.32.1 defaults in a way that matters here are set.
func dynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// Mutable-state cache: 256 workflows instead of 128000 (the CLI dev
		// server keeps 8096). With 1,000 jobs in flight 8096 held every
		// running job's state, 10 to 15 MiB; past 256 running jobs an
		// evicted one is reloaded from SQLite at its next heartbeat or its
		// end. 128 thrashed (docs/benchmarks-results.md, 2026-11-26, peak memory).
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 256,
		// Visibility API rate limit per namespace: 100 RPS (as the CLI)
		// instead of 10, so that the Web UI's list/count polling and the
		// gateway's own list calls are not throttled.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key():        100,
		dynamicconfig.TimerProcessorSchedulerWorkerCount.Key():                  32,
		dynamicconfig.TransferProcessorSchedulerWorkerCount.Key():               32,
		dynamicconfig.VisibilityProcessorSchedulerWorkerCount.Key():             32,
		dynamicconfig.MemoryTimerProcessorSchedulerWorkerCount.Key():            8,
		dynamicconfig.ReplicationProcessorSchedulerWorkerCount.Key():            1,
		dynamicconfig.ReplicationLowPriorityProcessorSchedulerWorkerCount.Key(): 1,
		// The history service reads new tasks of a shard's queues at most
		// 20 times a second (per shard), a pace meant for servers of
		// hundreds of shards. With this server's one shard it held every
		// task dispatched through matching (a workflow task after an
		// activity, an activity task) to a 50 ms grid: about 37 ms per
		// dispatch once the limiter's burst was spent
		// (docs/benchmarks-results.md, Why the baseline's tasks waited).
		// 10,000 is 20 for each of 500 shards.
		dynamicconfig.TransferProcessorMaxPollRPS.Key():   10000,
		dynamicconfig.TimerProcessorMaxPollRPS.Key():      10000,
		dynamicconfig.VisibilityProcessorMaxPollRPS.Key(): 10000,
		// One partition per task queue instead of four: one process polls
		// them, so more partitions only add goroutines and forwarding.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// Fairness between the tasks' fairness keys (the jobs' tenants), so
		// that one tenant's backlog does not hold up another's jobs
		// (docs/operations.md, Fairness between tenants).
		dynamicconfig.MatchingEnableFairness.Key(): true,
		// The transfer queue's ack level is saved every second instead of
		// every 30: Temporal deletes a closed workflow run only once its
		// close task is acked, so a deleted job's runs (docs/api.md,
		// Deleting a job) are gone in seconds rather than half a minute.
		dynamicconfig.TransferProcessorUpdateAckInterval.Key(): time.Second,
	}
}

// waitReady polls until the frontend answers, the namespace is visible and
// the history service owns its shard (a describe of an unknown workflow
// returns NotFound rather than Unavailable).
func waitReady(ctx context.Context, hostPort, namespace string) error {
	var c client.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		lastErr := probe(attemptCtx, &c, hostPort, namespace)
		cancel()
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func probe(ctx context.Context, c *client.Client, hostPort, namespace string) error {
	if *c == nil {
		dialed, err := client.DialContext(ctx, client.Options{
			HostPort:  hostPort,
			Namespace: namespace,
			Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
		})
		if err != nil {
			return err
		}
		*c = dialed
	}
	if _, err := (*c).CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	if _, err := (*c).WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace}); err != nil {
		return err
	}
	_, err := (*c).DescribeWorkflowExecution(ctx, "devtemporal-readiness-probe", "")
	var notFound *serviceerror.NotFound
	if err == nil || errors.As(err, &notFound) {
		return nil
	}
	return err
}

func (s *Server) startUI(ctx context.Context, ip string, port int, frontendDial, namespace, codecEndpoint string) error {
	// Check the port again right before use (the check in Start happened
	// before the Temporal server started): echo exits the process if it
	// cannot listen.
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("devtemporal: UI address %s is not available: %w", addr, err)
	}
	_ = ln.Close()

	ui := uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                hostForURL(ip),
		Port:                port,
		TemporalGRPCAddress: frontendDial,
		DefaultNamespace:    namespace,
		// Assets compiled into the ui-server module (ui/assets, go:embed);
		// no UIAssetPath, nothing fetched at run time.
		EnableUI: true,
		// Served over plain HTTP on a local address: the CSRF cookie must not
		// be marked Secure or browsers drop it. The UI is same-origin, so no
		// CORS origins are needed.
		CORS: uiconfig.CORS{CookieInsecure: true},
		// No calls to the internet: the browser-side news feed is off, and
		// the server-side GitHub release check runs only with
		// NotifyOnNewVersion (left false).
		DisableNewsFetch:   true,
		NotifyOnNewVersion: false,
		HideLogs:           true,
		// The UI has no login, so no token to pass: the endpoint's path
		// holds the secret the gateway serves it by
		// (api.Config.CodecDevSecret).
		Codec: uiconfig.Codec{Endpoint: codecEndpoint},
	}))
	s.ui = ui
	s.uiDone = make(chan struct{})
	go func() {
		defer close(s.uiDone)
		// Blocks until Stop. On a listen error the UI server calls os.Exit
		// through echo's logger; the port was checked free just before, so
		// only the small race described at freePort remains.
		if err := ui.Start(); err != nil {
			s.logger.Error("devtemporal: UI server failed", "error", err)
		}
	}()
	s.uiAddress = net.JoinHostPort(dialIP(ip), strconv.Itoa(port))

	url := "http://" + s.uiAddress + "/healthz"
	httpClient := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("devtemporal: UI health request: %w", err)
		}
		resp, err := httpClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devtemporal: UI on %s not ready: %w (last error: %v)", s.uiAddress, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// resolveListenAddress parses host:port, normalises the host to an IP and
// resolves port 0 to a free port. A fixed port is checked by binding it, so
// that a conflict is reported as an error instead of crashing the server.
func resolveListenAddress(what, addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("devtemporal: %s address %q: %w", what, addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("devtemporal: %s address %q: invalid port", what, addr)
	}
	switch host {
	case "", "localhost":
		host = loopbackV4
	default:
		ip := net.ParseIP(host)
		if ip == nil {
			return "", 0, fmt.Errorf("devtemporal: %s address %q: host must be an IP address or localhost", what, addr)
		}
		host = ip.String()
	}
	if port == 0 {
		if port, err = FreePort(host); err != nil {
			return "", 0, fmt.Errorf("devtemporal: %s address %q: picking a free port: %w", what, addr, err)
		}
		return host, port, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return "", 0, fmt.Errorf("devtemporal: %s address %s is not available: %w", what, addr, err)
	}
	_ = ln.Close()
	return host, port, nil
}

// FreePort picks a free TCP port on ip for a server that binds it a moment
// later. It draws from below Linux's ephemeral range (32768-60999), so the
// port cannot be handed meanwhile to an outgoing connection, which takes
// its local port from that range: a server that then fails to bind would
// take the process down (the Temporal server panics on it). Start holds
// lockPorts from its picks until the server bound them, so dev servers
// starting at once on one machine do not pick the same port.
func FreePort(ip string) (int, error) {
	const low, high = 20000, 32768
	var lastErr error
	for range 50 {
		port := low + rand.IntN(high-low)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			lastErr = err
			continue
		}
		if err := ln.Close(); err != nil {
			return 0, err
		}
		return port, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d: %w", low, high-1, lastErr)
}

// dialIP maps an unspecified listen IP (0.0.0.0, ::) to the loopback address
// clients in this process should dial.
func dialIP(ip string) string {
	parsed := net.ParseIP(ip)
	switch {
	case parsed == nil || !parsed.IsUnspecified():
		return ip
	case parsed.To4() != nil:
		return loopbackV4
	default:
		return "::1"
	}
}

// hostForURL brackets IPv6 literals; the UI server formats "%s:%d".
func hostForURL(ip string) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]"
	}
	return ip
}
