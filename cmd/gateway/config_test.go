package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/ai-job-gateway/gateway/internal/buildinfo"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/builtin"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

func parse(t *testing.T, command string, args ...string) config {
	t.Helper()
	var cfg config
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	cfg.registerFlags(fs, command)
	require.NoError(t, fs.Parse(args))
	return cfg
}

func TestConfigPrecedence(t *testing.T) {
	// Not parallel: it sets environment variables.
	cfg := parse(t, "dev")
	require.Equal(t, "127.0.0.1:8080", cfg.Listen, "default")
	require.Equal(t, "./.data", cfg.DataDir)
	require.Equal(t, "127.0.0.1:8233", cfg.TemporalUIListen)
	require.Equal(t, "ai-job-gateway", cfg.OIDCAudience)

	t.Setenv("GATEWAY_LISTEN", "127.0.0.1:9000")
	t.Setenv("OIDC_AUDIENCE", "from-env")
	cfg = parse(t, "dev")
	require.Equal(t, "127.0.0.1:9000", cfg.Listen, "environment over default")
	require.Equal(t, "from-env", cfg.OIDCAudience)

	cfg = parse(t, "dev", "--listen", "127.0.0.1:9100")
	require.Equal(t, "127.0.0.1:9100", cfg.Listen, "flag over environment")
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	cfg := config{LogLevel: "info", StartConcurrency: 1, DatabaseMaxConns: 4, LinkTTL: time.Hour}
	err := cfg.validate("serve")
	require.ErrorContains(t, err, "serve needs --database-url or DATABASE_URL")
	require.ErrorContains(t, err, "--temporal-address, TEMPORAL_ADDRESS or a temporal.toml profile")
	require.ErrorContains(t, err, "--oidc-issuer or OIDC_ISSUER_URL")

	err = cfg.validate("worker")
	require.ErrorContains(t, err, "worker needs --database-url")
	require.NotContains(t, err.Error(), "oidc", "the worker verifies no tokens")

	require.NoError(t, cfg.validate("dev"), "dev has defaults for everything")

	cfg.LogLevel = "loud"
	require.ErrorContains(t, cfg.validate("dev"), `--log-level "loud"`)

	cfg = config{LogLevel: "info", StartConcurrency: 0, LinkTTL: time.Hour}
	require.ErrorContains(t, cfg.validate("dev"), "--start-concurrency (GATEWAY_START_CONCURRENCY) must be a whole number of at least 1")
	require.ErrorContains(t, cfg.validate("worker"), "--start-concurrency", "a worker's dispatcher starts the jobs serve hands off")
}

func TestStartConcurrency(t *testing.T) {
	// Not parallel: it sets environment variables.
	require.Equal(t, 4, parse(t, "dev").StartConcurrency, "dev: few starts at a time beside the embedded server")
	require.Equal(t, 8, parse(t, "serve").StartConcurrency)
	require.Equal(t, 8, parse(t, "worker").StartConcurrency)
	require.Equal(t, 32, parse(t, "worker", "--start-concurrency", "32").StartConcurrency)
	t.Setenv("GATEWAY_START_CONCURRENCY", "3")
	require.Equal(t, 3, parse(t, "dev").StartConcurrency)
	require.Equal(t, 5, parse(t, "serve", "--start-concurrency", "5").StartConcurrency)
	t.Setenv("GATEWAY_START_CONCURRENCY", "many")
	cfg := parse(t, "serve")
	cfg.LogLevel = "info"
	require.ErrorContains(t, cfg.validate("serve"), "--start-concurrency")
}

func TestDatabaseMaxConns(t *testing.T) {
	// Not parallel: it sets environment variables.
	for _, command := range []string{"dev", "serve", "worker"} {
		require.Equal(t, store.DefaultMaxConns, parse(t, command).DatabaseMaxConns, command)
	}
	require.Equal(t, 8, parse(t, "worker", "--database-max-conns", "8").DatabaseMaxConns)
	t.Setenv("GATEWAY_DATABASE_MAX_CONNS", "40")
	require.Equal(t, 40, parse(t, "serve").DatabaseMaxConns)
	for _, bad := range []string{"3", "0", "many"} {
		t.Setenv("GATEWAY_DATABASE_MAX_CONNS", bad)
		cfg := parse(t, "serve")
		cfg.LogLevel = "info"
		require.ErrorContains(t, cfg.validate("serve"), "--database-max-conns (GATEWAY_DATABASE_MAX_CONNS) must be a whole number of at least 4", bad)
	}
}

func TestJobGeneration(t *testing.T) {
	// Not parallel: it sets environment variables.
	for _, command := range []string{"dev", "serve", "worker", "jobs"} {
		require.Equal(t, workflows.StampedGeneration, parse(t, command).JobGeneration, command)
	}
	require.Equal(t, 2, parse(t, "serve", "--job-generation", "2").JobGeneration)
	t.Setenv("GATEWAY_JOB_GENERATION", "0")
	require.Zero(t, parse(t, "worker").JobGeneration, "0 stamps none, for a rollback to a build without generations")
	for _, bad := range []string{"5", "-1", "latest"} {
		t.Setenv("GATEWAY_JOB_GENERATION", bad)
		cfg := parse(t, "serve")
		cfg.LogLevel = "info"
		require.ErrorContains(t, cfg.validate("serve"), "--job-generation (GATEWAY_JOB_GENERATION) must be a whole number from 0 to 4", bad)
	}
}

func TestJobStarts(t *testing.T) {
	// Not parallel: it sets environment variables.
	require.Equal(t, jobStartsAuto, parse(t, "serve").JobStarts)
	require.Equal(t, jobStartsWorkers, resolveJobStarts(jobStartsAuto, "postgres"), "PostgreSQL notifies the workers")
	require.Equal(t, jobStartsServe, resolveJobStarts(jobStartsAuto, "sqlite"), "SQLite cannot")
	require.Equal(t, jobStartsServe, resolveJobStarts(jobStartsServe, "postgres"), "an operator's choice stands")
	t.Setenv("GATEWAY_JOB_STARTS", "workers")
	require.Equal(t, jobStartsWorkers, parse(t, "serve").JobStarts)
	cfg := parse(t, "serve", "--job-starts", "api")
	cfg.LogLevel = "info"
	require.ErrorContains(t, cfg.validate("serve"), `--job-starts (GATEWAY_JOB_STARTS) must be auto, serve or workers, not "api"`)
}

func TestRunRejectsUnknownCommand(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	require.Equal(t, 2, run([]string{"launch"}, &stderr, &stderr))
	require.Contains(t, stderr.String(), `unknown command "launch"`)
	require.Equal(t, 2, run(nil, &stderr, &stderr))
}

func TestUnknownAdapterIsAStartupError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	catalog := filepath.Join(dir, "providers.yaml")
	require.NoError(t, os.WriteFile(catalog, []byte(`providers:
  - id: acme-ai
    name: Acme AI
    adapter: acme
    services:
      llm-tasks:
        models: [m1]
        pricing: {unit: per_token, amount: 0.000001, currency: USD}
`), 0o644))
	var stderr bytes.Buffer
	code := run([]string{"dev", "--data-dir", dir, "--providers", catalog, "--listen", "127.0.0.1:0"}, &stderr, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), `provider "acme-ai" uses unknown adapter "acme"`)
}

func TestTokenNeedsADevIssuer(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run([]string{"token", "--data-dir", t.TempDir(), "--tenant", "acme"}, &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), "gateway dev")
	require.Empty(t, stdout.String())
}

func TestExampleCatalogShowsEveryAdapter(t *testing.T) {
	// Not parallel: it sets environment variables.
	mediatest.Require(t, "tesseract", "pocketsphinx_continuous") // the media adapter's OCR, the sphinx adapter's recognizer
	catalog, err := providers.LoadCatalog(filepath.Join("..", "..", "deploy", "providers.example.yaml"))
	require.NoError(t, err)
	used := map[string]bool{}
	for _, p := range catalog.Providers {
		used[p.Adapter] = true
	}
	for name := range builtin.Factories() {
		require.True(t, used[name], "deploy/providers.example.yaml has no provider with adapter %q", name)
	}
	// With its keys set, every provider's settings are accepted.
	for _, key := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPL_AUTH_KEY", "ASSEMBLYAI_API_KEY", "DEEPGRAM_API_KEY"} {
		t.Setenv(key, "example")
	}
	_, err = providers.NewRegistry(catalog, builtin.Factories())
	require.NoError(t, err)
}

func TestAcceptLatencyTarget(t *testing.T) {
	// Not parallel: it sets environment variables.
	require.Equal(t, 3*time.Millisecond, parse(t, "dev").AcceptTarget, "dev paces starts during a burst")
	require.Equal(t, 10*time.Millisecond, parse(t, "serve").AcceptTarget, "serve paces its own starts during a burst")
	require.Equal(t, time.Duration(0), parse(t, "dev", "--accept-latency-target", "0").AcceptTarget)
	t.Setenv("GATEWAY_ACCEPT_LATENCY_TARGET", "20ms")
	require.Equal(t, 20*time.Millisecond, parse(t, "serve").AcceptTarget)
	t.Setenv("GATEWAY_ACCEPT_LATENCY_TARGET", "soon")
	cfg := parse(t, "dev")
	cfg.LogLevel, cfg.StartConcurrency = "info", 1
	require.ErrorContains(t, cfg.validate("dev"), "--accept-latency-target (GATEWAY_ACCEPT_LATENCY_TARGET) must be a duration")
	cfg = parse(t, "dev", "--accept-latency-target", "4ms")
	require.Equal(t, 4*time.Millisecond, cfg.AcceptTarget)
	cfg.LogLevel, cfg.StartConcurrency = "info", 1
	require.NoError(t, cfg.validate("dev"), "the flag overrides the environment")
}

func TestMediaSettings(t *testing.T) {
	t.Setenv("GATEWAY_DOWNLOAD_URL_TTL", "15m")
	t.Setenv("GATEWAY_JOB_RETENTION", "720h")
	cfg := parse(t, "worker", "--result-retention", "48h", "--blob-url", "s3://files?region=eu-west-1")
	require.Equal(t, 15*time.Minute, cfg.LinkTTL, "environment over default")
	require.Equal(t, store.RetentionDefaults{Results: 48 * time.Hour, Jobs: 720 * time.Hour}, cfg.Retention)
	require.Equal(t, "s3://files?region=eu-west-1", cfg.BlobURL)

	cfg = parse(t, "serve", "--job-retention", "2160h")
	require.Equal(t, store.RetentionDefaults{Results: 168 * time.Hour, Jobs: 2160 * time.Hour}, cfg.Retention, "the flag over the environment")

	cfg = parse(t, "dev")
	cfg.LinkTTL, cfg.Retention = 0, store.RetentionDefaults{Results: -time.Hour, Jobs: -time.Hour}
	err := cfg.validate("dev")
	require.ErrorContains(t, err, "--download-url-ttl (GATEWAY_DOWNLOAD_URL_TTL) must be a duration between 1s and 168h")
	require.ErrorContains(t, err, "--result-retention (GATEWAY_RESULT_RETENTION) must be a duration of at least 0")
	require.ErrorContains(t, err, "--job-retention (GATEWAY_JOB_RETENTION) must be a duration of at least 0")
}

func TestMediaFetchSettings(t *testing.T) {
	// Not parallel: it sets environment variables.
	for _, command := range []string{"dev", "worker"} {
		cfg := parse(t, command)
		require.Equal(t, media.Limits{MinBytes: 32 << 10, RateWindow: 30 * time.Second, Timeout: 30 * time.Minute}, cfg.mediaFetchLimits(), command)
		require.Equal(t, 4, cfg.MediaFetchesPerTenant, command)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	new(config).registerFlags(fs, "serve")
	require.Nil(t, fs.Lookup("media-fetch-timeout"), "serve fetches no media")

	t.Setenv("GATEWAY_MEDIA_FETCHES_PER_TENANT", "2")
	t.Setenv("GATEWAY_MEDIA_FETCH_MIN_BYTES", "0")
	cfg := parse(t, "worker", "--media-fetch-timeout", "10m", "--media-fetch-rate-window", "1m")
	require.Equal(t, media.Limits{RateWindow: time.Minute, Timeout: 10 * time.Minute}, cfg.mediaFetchLimits())
	require.Equal(t, 2, cfg.MediaFetchesPerTenant, "environment over default")

	t.Setenv("GATEWAY_MEDIA_FETCHES_PER_TENANT", "many")
	cfg = parse(t, "worker", "--media-fetch-timeout", "2h", "--media-fetch-min-bytes", "-1", "--media-fetch-rate-window", "0s")
	err := cfg.validate("worker")
	require.ErrorContains(t, err, "--media-fetch-timeout (GATEWAY_MEDIA_FETCH_TIMEOUT) must be a duration between 0 and 1h")
	require.ErrorContains(t, err, "--media-fetch-min-bytes (GATEWAY_MEDIA_FETCH_MIN_BYTES) must be a whole number of at least 0")
	require.ErrorContains(t, err, "--media-fetches-per-tenant (GATEWAY_MEDIA_FETCHES_PER_TENANT) must be a whole number of at least 0")
	cfg = parse(t, "worker", "--media-fetches-per-tenant", "0", "--media-fetch-min-bytes", "1024", "--media-fetch-rate-window", "0s")
	require.ErrorContains(t, cfg.validate("worker"), "--media-fetch-rate-window (GATEWAY_MEDIA_FETCH_RATE_WINDOW) must be a duration above 0")
}

func TestHealthcheck(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/healthz", r.URL.Path)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"healthcheck", "--url", srv.URL + "/healthz"}, &stdout, &stderr), stderr.String())
	status = http.StatusServiceUnavailable
	require.Equal(t, 1, run([]string{"healthcheck", "--url", srv.URL + "/healthz"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "answered 503")

	t.Setenv("GATEWAY_LISTEN", "0.0.0.0:9090")
	require.Equal(t, "http://127.0.0.1:9090/healthz", healthURL(), "every address: ask through loopback")
	t.Setenv("GATEWAY_LISTEN", "10.0.0.7:8080")
	require.Equal(t, "http://10.0.0.7:8080/healthz", healthURL())
}

func TestLogFormat(t *testing.T) {
	// Not parallel: it sets environment variables.
	require.Equal(t, "json", parse(t, "serve").LogFormat, "read by log collectors")
	require.Equal(t, "json", parse(t, "worker").LogFormat)
	require.Equal(t, "text", parse(t, "dev").LogFormat, "read by people")
	t.Setenv("GATEWAY_LOG_FORMAT", "text")
	require.Equal(t, "text", parse(t, "serve").LogFormat)
	require.Equal(t, "json", parse(t, "serve", "--log-format", "json").LogFormat, "the flag wins")

	var out bytes.Buffer
	newLogger(&out, "json", slog.LevelInfo).Info("ready", "request_id", "r-1")
	var line map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &line), out.String())
	require.Equal(t, "ready", line["msg"])
	require.Equal(t, "r-1", line["request_id"])

	cfg := parse(t, "serve", "--log-format", "xml")
	require.ErrorContains(t, cfg.validate("serve"), `--log-format (GATEWAY_LOG_FORMAT) "xml": use json or text`)
}

func TestVersion(t *testing.T) {
	// Not parallel: it sets the version the linker would.
	saved := buildinfo.Version
	t.Cleanup(func() { buildinfo.Version = saved })
	buildinfo.Version = "v1.2.3-test"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())
		require.Contains(t, stdout.String(), "gateway v1.2.3-test (revision ")
		require.Contains(t, stdout.String(), runtime.Version())
		require.Empty(t, stderr.String())
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run([]string{"version", "extra"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), `unexpected argument "extra"`)

	stdout.Reset()
	require.Equal(t, 0, run([]string{"help"}, &stdout, &stderr))
	require.Contains(t, stdout.String(), "Usage:\n  gateway <command>")
	require.Contains(t, stdout.String(), "\n  version ")
}

func TestMaxOutageWaitFlag(t *testing.T) {
	t.Parallel()
	cfg := parse(t, "worker", "--max-outage-wait", "5m, transcriptions=30m")
	require.Equal(t, 30*time.Minute, cfg.MaxOutageWait[jobs.Transcriptions])
	require.Equal(t, 5*time.Minute, cfg.MaxOutageWait[jobs.LLMTasks], "the bare duration sets every other service")
	require.Empty(t, parse(t, "worker").MaxOutageWait, "unset: the routing's default")

	var w outageWaits
	require.ErrorContains(t, w.Set("llm-tasks=soon"), `"soon" is not a duration`)
	require.ErrorContains(t, w.Set("podcasts=1m"), `"podcasts" is not a service`)
	require.ErrorContains(t, w.Set("-1m"), "at least 0")
}

func TestWebhookGiveUpAfter(t *testing.T) {
	// Not parallel: it sets environment variables.
	require.Zero(t, parse(t, "serve").WebhookGiveUpAfter, "0: the workflows' 24 h")
	require.Equal(t, 5*time.Second, parse(t, "dev", "--webhook-give-up-after", "5s").WebhookGiveUpAfter)
	require.Equal(t, time.Minute, parse(t, "jobs", "--webhook-give-up-after", "1m").WebhookGiveUpAfter, "resends started by the CLI")
	t.Setenv("GATEWAY_WEBHOOK_GIVE_UP_AFTER", "2h")
	require.Equal(t, 2*time.Hour, parse(t, "serve").WebhookGiveUpAfter)
	t.Setenv("GATEWAY_WEBHOOK_GIVE_UP_AFTER", "later")
	cfg := parse(t, "dev")
	cfg.LogLevel, cfg.StartConcurrency = "info", 1
	require.ErrorContains(t, cfg.validate("dev"), "--webhook-give-up-after (GATEWAY_WEBHOOK_GIVE_UP_AFTER) must be a duration")
}

func TestWebhooksCommandArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"webhooks", "recover"}, "needs --since"},
		{[]string{"webhooks", "recover", "--since", "yesterday"}, "use RFC 3339"},
		{[]string{"webhooks", "recover", "--since", "2026-11-26T10:00:00Z", "--until", "2026-11-26T09:00:00Z"}, "--until must be after --since"},
		{[]string{"webhooks", "resend"}, "give one job id"},
		{[]string{"webhooks", "replay"}, `unknown command "replay"`},
	} {
		var stdout, stderr strings.Builder
		require.Equal(t, 2, run(append(tc.args, "--data-dir", t.TempDir()), &stdout, &stderr), "%v", tc.args)
		require.Contains(t, stderr.String(), tc.want, "%v", tc.args)
	}
	var stdout, stderr strings.Builder
	require.Equal(t, 2, run([]string{"webhooks"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "gateway webhooks resend")
}

func TestWorkerConcurrency(t *testing.T) {
	// Not parallel: it sets environment variables.
	cfg := parse(t, "worker")
	require.Zero(t, cfg.WorkerConcurrency, "the SDK's defaults")
	opts := workerOptions(cfg, "node-1")
	require.Equal(t, "node-1", opts.Identity)
	require.Zero(t, opts.MaxConcurrentLocalActivityExecutionSize)

	t.Setenv("GATEWAY_MAX_CONCURRENT_LOCAL_ACTIVITIES", "2000")
	t.Setenv("GATEWAY_MAX_CONCURRENT_WORKFLOW_TASKS", "1500")
	cfg = parse(t, "dev", "--max-concurrent-activities", "300", "--max-concurrent-workflow-tasks", "2500",
		"--activity-pollers", "4", "--workflow-task-pollers", "8", "--worker-stop-timeout", "30s")
	require.Equal(t, workerConcurrency{Activities: 300, LocalActivities: 2000, WorkflowTasks: 2500, ActivityPollers: 4, WorkflowTaskPollers: 8},
		cfg.WorkerConcurrency, "flag over environment over default")
	opts = workerOptions(cfg, "node-2")
	require.Equal(t, 300, opts.MaxConcurrentActivityExecutionSize)
	require.Equal(t, 2000, opts.MaxConcurrentLocalActivityExecutionSize)
	require.Equal(t, 2500, opts.MaxConcurrentWorkflowTaskExecutionSize)
	require.Equal(t, 4, opts.MaxConcurrentActivityTaskPollers)
	require.Equal(t, 8, opts.MaxConcurrentWorkflowTaskPollers)
	require.Equal(t, 30*time.Second, opts.WorkerStopTimeout)

	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	(&config{}).registerFlags(fs, "serve")
	require.Nil(t, fs.Lookup("max-concurrent-activities"), "serve runs no worker")

	t.Setenv("GATEWAY_MAX_CONCURRENT_LOCAL_ACTIVITIES", "lots")
	cfg = parse(t, "worker", "--max-concurrent-workflow-tasks", "1", "--workflow-task-pollers", "1", "--activity-pollers", "-2")
	cfg.LogLevel = "info"
	err := cfg.validate("worker")
	require.ErrorContains(t, err, "--max-concurrent-local-activities (GATEWAY_MAX_CONCURRENT_LOCAL_ACTIVITIES) must be a whole number of at least 0")
	require.ErrorContains(t, err, "--max-concurrent-workflow-tasks (GATEWAY_MAX_CONCURRENT_WORKFLOW_TASKS) cannot be 1")
	require.ErrorContains(t, err, "--workflow-task-pollers (GATEWAY_WORKFLOW_TASK_POLLERS) cannot be 1")
	require.ErrorContains(t, err, "--activity-pollers (GATEWAY_ACTIVITY_POLLERS) must be a whole number of at least 0")
	require.NotContains(t, err.Error(), "--max-concurrent-activities", "a valid value is no problem")
}

func TestTemporalCompression(t *testing.T) {
	// Not parallel: it sets environment variables.
	none, gzip := &client.GrpcCompressionNone{}, &client.GrpcCompressionGzip{}
	cfg := parse(t, "serve")
	require.Equal(t, compressionAuto, cfg.TemporalCompression)
	for address, want := range map[string]client.GrpcCompression{
		"127.0.0.1:7233":              none, // dev's embedded server, or one beside the gateway
		"localhost:7233":              none,
		"[::1]:7233":                  none,
		"temporal.internal:7233":      gzip,
		"10.0.0.7:7233":               gzip,
		"acme.a1b2c.tmprl.cloud:7233": gzip,
	} {
		require.IsType(t, want, cfg.grpcCompression(address), address)
	}
	require.IsType(t, gzip, parse(t, "worker", "--temporal-compression", "gzip").grpcCompression("127.0.0.1:7233"), "an operator's choice stands")
	t.Setenv("GATEWAY_TEMPORAL_COMPRESSION", "none")
	require.IsType(t, none, parse(t, "dev").grpcCompression("temporal.internal:7233"))
	t.Setenv("GATEWAY_TEMPORAL_COMPRESSION", "zstd")
	cfg = parse(t, "serve")
	cfg.LogLevel = "info"
	require.ErrorContains(t, cfg.validate("serve"), `--temporal-compression (GATEWAY_TEMPORAL_COMPRESSION) must be auto, gzip or none, not "zstd"`)
}

// --webhook-give-up-after bounds budget and batch events as it bounds
// job events: the budget notifier carries it, and housekeeping hands it
// to the batch notifier (docs/webhooks.md, Budget and batch events).
func TestWebhookGiveUpAfterReachesTheBudgetNotifier(t *testing.T) {
	cfg := parse(t, "worker", "--webhook-give-up-after", "2h")
	require.Equal(t, 2*time.Hour, budgetNotifier(cfg, &store.Store{}, nil, nil, slog.Default()).GiveUpAfter)
}
