//go:build !nodev

package main

// The dev command: the whole stack in one process, with the embedded
// Temporal server and Web UI. A production build leaves it out (go build
// -tags nodev, as deploy/Dockerfile does), and with it the Temporal server
// module and its dependencies.

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.temporal.io/sdk/worker"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/api/console"
	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/cmd/gateway/internal/devtemporal"
	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/buildinfo"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/store"
)

// devMemoryLimit is the soft memory limit of `gateway dev` unless GOMEMLIMIT
// is set: the embedded Temporal server's caches would otherwise let the
// heap grow to twice its live size before collecting. GOGC stays Go's
// default: at 25 the collector took a sixth of the CPU under load and
// slowed a small tenant's jobs behind a flood (docs/operations.md, What
// gateway dev runs).
const devMemoryLimit = 256 << 20

// runDev runs the whole stack in one process.
func runDev(ctx context.Context, cfg config, logger *slog.Logger) error {
	worker.SetStickyWorkflowCacheSize(devWorkflowCacheSize)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(devMemoryLimit)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = "sqlite:" + filepath.Join(cfg.DataDir, "gateway.db")
	}
	// dev reaches local webhooks and media (docs/webhooks.md, Address rules).
	cfg.AllowPrivateNetworks = true
	var engines *localEngines
	if cfg.LocalEngines {
		var err error
		if engines, err = startLocalEngines(ctx, cfg.DataDir, logger); err != nil {
			return err
		}
		defer engines.stop()
	}
	registry, err := loadRegistry(cfg, engines.catalogEntries()...)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer st.Close()
	reads := store.NewCache(st, store.CacheTTL) // the API's and the worker's
	defer reads.Flush(context.WithoutCancel(ctx))
	signer, err := webhookSigner(ctx, cfg, st)
	if err != nil {
		return err
	}
	if err := encryptPayloads(ctx, &cfg, "dev", encrypting, st, logger); err != nil {
		return err
	}

	// Listening before the embedded UI starts: its codec endpoint is the
	// API's address.
	listener, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	defer func() { _ = listener.Close() }() // on an early return; serveHTTP closes it too
	base := "http://" + listener.Addr().String()
	publicBase := cfg.PublicURL
	if publicBase == "" {
		publicBase = base
	}
	var uiOrigins []string
	codecSecret := ""
	if cfg.TemporalAddress == "" {
		codecEndpoint := ""
		if cfg.codec != nil && cfg.TemporalUIListen != "" {
			// Given to the embedded UI only, drawn afresh at each start
			// (docs/operations.md, Codec server).
			codecSecret = rand.Text()
			codecEndpoint = strings.TrimSuffix(publicBase, "/") + api.CodecDevPath + "/" + codecSecret
		}
		start := time.Now()
		server, err := devtemporal.Start(ctx, devtemporal.Options{
			DatabaseFile:    filepath.Join(cfg.DataDir, "temporal.db"),
			FrontendAddress: cfg.TemporalDevListen,
			UIAddress:       cfg.TemporalUIListen,
			CodecEndpoint:   codecEndpoint,
			Namespace:       cfg.TemporalNamespace,
			Logger:          logger.With("component", "temporal"),
			LogLevel:        slog.LevelWarn,
		})
		if err != nil {
			return fmt.Errorf("embedded Temporal: %w", err)
		}
		defer server.Stop()
		cfg.TemporalAddress = server.FrontendAddress()
		uiOrigins = localOrigins(server.UIAddress())
		logger.Info("embedded Temporal ready", "frontend", server.FrontendAddress(), "ui", uiURL(server.UIAddress()), "took", time.Since(start).Round(time.Millisecond))
	}
	m := metrics.New()
	tc, err := dialTemporalMeasured(ctx, cfg, m, logger, false)
	if err != nil {
		return err
	}
	defer tc.Close()

	files, err := openFiles(ctx, cfg, publicBase, logger)
	if err != nil {
		return err
	}
	defer files.Close()

	nodeID := nodeID()
	w, err := startWorker(ctx, cfg, tc, reads, registry, nodeID, cfg.workerNetwork(signer), cfg.workerMedia(files, logger), m, logger)
	if err != nil {
		return err
	}
	defer w.Stop()
	issuerURL := cfg.OIDCIssuer
	var issuer *devidp.Issuer
	if issuerURL == "" {
		issuerURL = base + "/dev/oidc"
		if issuer, err = devidp.Open(cfg.DataDir, issuerURL); err != nil {
			return err
		}
	}
	verifier := auth.NewVerifier(issuerURL, cfg.OIDCAudience, nil)
	routes := []func(gin.IRouter){registerSamples, serveFiles(files)}
	if issuer != nil {
		routes = append(routes, issuer.Routes)
	}
	starts := runDispatcher(ctx, cfg, st, tc, true, searchAttributesReady(ctx, tc, cfg.TemporalNamespace, true, logger), logger)
	m.Backlog(st.Jobs.CountJobStarts)
	m.Breakers(breakerSamples(st.Breakers, registry))
	defer starts.stopAndWait()
	backlog := startBacklogGuard(ctx, cfg, st, logger)
	apiCfg, err := apiConfig(cfg, reads, tc, starts.Dispatcher, backlog, registry, verifier, signer, m, logger)
	if err != nil {
		return err
	}
	apiCfg.Routes = routes
	apiCfg.Metrics = m
	watcher := startJobWatcher(ctx, st, logger)
	apiCfg.Waiter, apiCfg.Watcher, apiCfg.Events = watcher, watcher, st.Jobs
	apiCfg.LinkTTL = cfg.LinkTTL
	if files != nil {
		apiCfg.Files = files
	}
	apiCfg.ReadyChecks = readyChecks(st, tc, verifier, true, false)
	apiCfg.NodeID = nodeID
	// The embedded UI has no login: the codec server serves it without a
	// token at the endpoint holding codecSecret (docs/operations.md, Codec
	// server).
	apiCfg.CodecOrigins, apiCfg.CodecDevSecret = uiOrigins, codecSecret
	srv, err := newAPI(apiCfg, st, signer, consoleOIDC(cfg, issuerURL, issuer != nil), logger, withTemporalUI(uiOrigins, temporalNamespace(cfg)))
	if err != nil {
		return err
	}
	key, keyFile, err := devAPIKey(ctx, apiCfg.APIKeys, cfg.DataDir)
	if err != nil {
		return fmt.Errorf("dev API key: %w", err)
	}
	logger.Info("gateway dev ready", "api", base, "issuer", issuerURL, "data_dir", cfg.DataDir, "version", buildinfo.Read().Version)
	// On the terminal, never in the logs: a developer's key for the
	// walkthrough (docs/operations.md, What gateway dev runs).
	fmt.Fprintf(os.Stdout, "API key for tenant %s (every job scope and usage:read; also in %s): %s\n", devKeyTenant, keyFile, key)
	fmt.Fprintf(os.Stdout, "console: %s/console/ (sign in with the API key above)\n", base)
	return serveHTTP(ctx, listener, srv.Handler(), logger)
}

func uiURL(addr string) string {
	if addr == "" {
		return "disabled"
	}
	return "http://" + addr
}

// serveFiles serves dev's download links (blobstore.FilesPath); a bucket
// serves its own.
func serveFiles(files *blobstore.Store) func(gin.IRouter) {
	return func(r gin.IRouter) {
		if files == nil || files.Handler() == nil {
			return
		}
		h := gin.WrapH(files.Handler())
		r.GET(blobstore.FilesPath+"*key", h)
		r.HEAD(blobstore.FilesPath+"*key", h)
	}
}

// withTemporalUI links job pages to their workflows in the Temporal UI
// at origins[0] (dev's embedded UI), in namespace; none without one.
// serve has no flag naming the UI's address (docs/console.md).
func withTemporalUI(origins []string, namespace string) consoleOption {
	return func(c *console.Config) {
		if len(origins) > 0 {
			c.TemporalUIURL = origins[0] + "/namespaces/" + url.PathEscape(namespace) + "/workflows"
		}
	}
}
