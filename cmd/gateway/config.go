package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/vendorcallback"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// config is the gateway's configuration: defaults, then environment
// variables, then flags (docs/operations.md, Configuration), then
// validate().
type config struct {
	Listen            string
	DataDir           string
	ProvidersFile     string
	LocalEngines      bool
	IdPIssuerURL      string
	WorkerStopTimeout time.Duration
	DatabaseURL       string
	DatabaseMaxConns  int
	TemporalAddress   string
	TemporalNamespace string
	// TemporalCompression is --temporal-compression
	// (temporalcompression.go).
	TemporalCompression string
	TemporalDevListen   string
	TemporalUIListen    string
	OIDCIssuer          string
	OIDCAudience        string
	// ConsoleOIDCClientID and ConsoleOIDCClientSecret are the console's
	// client at the OIDC issuer (docs/console.md).
	ConsoleOIDCClientID     string
	ConsoleOIDCClientSecret string
	Region                  string
	LogLevel                string
	LogFormat               string
	AllowPrivateNetworks    bool
	CallbackURL             string
	WebhookSigningKey       string
	StartConcurrency        int
	JobStarts               string
	AcceptTarget            time.Duration
	TrustedProxies          string
	TenantCreateRate        int
	// Backlog bounds the outbox of accepted jobs (backlog.go).
	Backlog jobops.BacklogLimits
	BlobURL string
	// MaxOutageWait is --max-outage-wait (outagewait.go);
	// maxOutageWaitProblem says what was wrong with its environment value.
	MaxOutageWait outageWaits
	// WebhookGiveUpAfter is --webhook-give-up-after (docs/webhooks.md).
	WebhookGiveUpAfter time.Duration
	// JobGeneration is --job-generation: the generation of the job
	// workflow stamped on the jobs this process starts (docs/operations.md,
	// Replaying histories).
	JobGeneration        int
	maxOutageWaitProblem string
	PublicURL            string
	LinkTTL              time.Duration
	// Retention is --result-retention and --job-retention: the defaults of
	// tenants that set none (docs/api.md, Tenants).
	Retention store.RetentionDefaults
	// Media fetches of a worker (docs/media.md, Slow media hosts).
	MediaFetchMinBytes    int
	MediaFetchRateWindow  time.Duration
	MediaFetchTimeout     time.Duration
	MediaFetchesPerTenant int
	// WorkerConcurrency is the worker's slots and pollers
	// (workeroptions.go).
	WorkerConcurrency workerConcurrency
	// PayloadKeys (GATEWAY_PAYLOAD_KEYS, never a flag) and PayloadKeyFile
	// encrypt Temporal payloads (payloads.go).
	PayloadKeys    string
	PayloadKeyFile string
	// TemporalUIOrigin lists the browser origins (Temporal UIs) allowed to
	// call serve's codec server, comma-separated (payloads.go).
	TemporalUIOrigin string
	// temporal is the Temporal connection resolveTemporal read: TLS, API
	// key and gRPC metadata beside the address and namespace above.
	temporal client.Options
	// codec are the codec server's codecs encryptPayloads made (nil
	// without keys).
	codec api.PayloadCodecs
}

// Default --start-concurrency: in dev the starts share the process with
// the embedded server and the worker, so few at a time (one capped jobs
// per second at one over a start's latency: docs/benchmarks-results.md,
// What was changed, change 7); serve makes a network round trip per
// start.
const (
	devStartConcurrency   = 4
	serveStartConcurrency = 8
	// workerStartConcurrency: a worker's dispatcher starts jobs handed
	// off by serve (--job-starts workers).
	workerStartConcurrency = 8
)

// serveTenantCreateRate is serve's default --tenant-create-rate: ten jobs
// a second per tenant, far above a client's steady use and well below
// what would starve the other tenants of the outbox (dev has no cap).
const serveTenantCreateRate = 600

// devAcceptTarget is dev's default --accept-latency-target: its starts
// share two cores with the API, so a burst of new jobs is started at
// the pace that keeps accepting one within a few milliseconds.
const devAcceptTarget = 3 * time.Millisecond

// serveAcceptTarget is serve's: while creates come much faster than its
// own starts and more than one in twenty takes longer than this, serve
// starts them more slowly, so that the jobs' work leaves the database,
// and the cores serve may share with it, free to answer creates
// (docs/operations.md, Overload).
const serveAcceptTarget = 10 * time.Millisecond

// registerFlags binds the flags a command takes; each default is the
// environment variable's value when set.
func (c *config) registerFlags(fs *flag.FlagSet, command string) {
	str := func(p *string, name, env, def, usage string) {
		if v, ok := os.LookupEnv(env); ok && v != "" {
			def = v
		}
		fs.StringVar(p, name, def, usage+" (env "+env+")")
	}
	str(&c.LogLevel, "log-level", "GATEWAY_LOG_LEVEL", "info", "log level: debug, info, warn or error")
	logFormat := "text"
	if command == "serve" || command == "worker" {
		logFormat = "json" // read by log collectors, not people
	}
	str(&c.LogFormat, "log-format", "GATEWAY_LOG_FORMAT", logFormat, "log format: json (one object a line) or text (key=value)")
	str(&c.DataDir, "data-dir", "GATEWAY_DATA_DIR", "./.data", "directory for the dev databases and keys")
	if command == "token" {
		str(&c.OIDCAudience, "audience", "OIDC_AUDIENCE", "ai-job-gateway", "audience of the token")
		return
	}
	if command == "idp" {
		str(&c.Listen, "listen", "GATEWAY_LISTEN", "127.0.0.1:9000", "address of the identity provider")
		str(&c.IdPIssuerURL, "issuer-url", "GATEWAY_IDP_ISSUER_URL", "", "the issuer URL tokens carry, as the API reaches it, ending in "+devidp.Path+" (default: http:// + --listen + "+devidp.Path+")")
		return
	}
	str(&c.DatabaseURL, "database-url", "DATABASE_URL", "", "postgres://… or sqlite:path (dev default: SQLite file in the data dir)")
	if command == "dev" || command == "serve" || command == "worker" {
		fs.IntVar(&c.DatabaseMaxConns, "database-max-conns", envOr("GATEWAY_DATABASE_MAX_CONNS", store.DefaultMaxConns, strconv.Atoi, -1),
			"PostgreSQL connections this process keeps open at most; size them against the server's max_connections or a pooler's (SQLite: always one) (env GATEWAY_DATABASE_MAX_CONNS)")
	}
	if command == "providers" {
		str(&c.ProvidersFile, "providers", "GATEWAY_PROVIDERS_FILE", "", "provider catalog YAML file (default: built-in sandbox providers)")
		return
	}
	if command == "usage" {
		return
	}
	if command != "migrate" {
		c.registerPayloadFlags(fs)
	}
	if command == "jobs" || command == "replay" {
		c.registerWebhookGiveUp(fs)
		c.registerJobGeneration(fs)
		str(&c.TemporalAddress, "temporal-address", "TEMPORAL_ADDRESS", "", "Temporal frontend host:port (default: the temporal.toml profile's, else gateway dev's embedded server at "+defaultLocalTemporal+")")
		str(&c.TemporalNamespace, "temporal-namespace", "TEMPORAL_NAMESPACE", "", namespaceUsage)
		return
	}
	if command == "migrate" {
		str(&c.TemporalAddress, "temporal-address", "TEMPORAL_ADDRESS", "", "Temporal frontend host:port: also register the job workflows' search attributes there (optional; or the temporal.toml profile's)")
		str(&c.TemporalNamespace, "temporal-namespace", "TEMPORAL_NAMESPACE", "", namespaceUsage)
		return
	}
	str(&c.Listen, "listen", "GATEWAY_LISTEN", "127.0.0.1:8080", "address of the HTTP API (worker: health endpoints)")
	str(&c.ProvidersFile, "providers", "GATEWAY_PROVIDERS_FILE", "", "provider catalog YAML file (default: built-in sandbox providers)")
	str(&c.TemporalAddress, "temporal-address", "TEMPORAL_ADDRESS", "", "Temporal frontend host:port (default: the temporal.toml profile's; dev: its embedded server)")
	str(&c.TemporalNamespace, "temporal-namespace", "TEMPORAL_NAMESPACE", "", namespaceUsage)
	str(&c.TemporalCompression, "temporal-compression", "GATEWAY_TEMPORAL_COMPRESSION", compressionAuto, temporalCompressionUsage)
	str(&c.Region, "region", "GATEWAY_REGION", "local", "region reported in meta.system")
	c.registerNetworkFlags(fs, command)
	c.registerMediaFlags(fs, command)
	if command == "dev" || command == "worker" {
		c.registerOutageFlags(fs)
	}
	if command == "worker" || command == "dev" {
		stop := 90 * time.Second
		if command == "dev" {
			stop = 5 * time.Second
		}
		fs.DurationVar(&c.WorkerStopTimeout, "worker-stop-timeout", envOr("GATEWAY_WORKER_STOP_TIMEOUT", stop, time.ParseDuration, -1),
			"on SIGTERM, how long running activities may take to finish before they are cancelled and resume elsewhere (env GATEWAY_WORKER_STOP_TIMEOUT)")
		c.registerWorkerConcurrencyFlags(fs)
	}
	c.registerJobGeneration(fs)
	if command == "worker" {
		// Its reader of batch files records jobs as the API does.
		c.registerBacklogFlags(fs)
		c.registerWebhookGiveUp(fs)
		fs.IntVar(&c.StartConcurrency, "start-concurrency", envOr("GATEWAY_START_CONCURRENCY", workerStartConcurrency, strconv.Atoi, -1),
			"job workflows this worker's dispatcher starts at once, eagerly, from the outbox (env GATEWAY_START_CONCURRENCY)")
		return
	}
	str(&c.OIDCIssuer, "oidc-issuer", "OIDC_ISSUER_URL", "", "OIDC issuer URL (dev default: the built-in dev issuer)")
	str(&c.OIDCAudience, "oidc-audience", "OIDC_AUDIENCE", "ai-job-gateway", "audience tokens must carry")
	str(&c.ConsoleOIDCClientID, "console-oidc-client-id", "CONSOLE_OIDC_CLIENT_ID", "",
		"the console's client id at the OIDC issuer, for people to sign in through it; empty: API keys only (dev default with its own issuer: gateway-console)")
	c.ConsoleOIDCClientSecret = os.Getenv("CONSOLE_OIDC_CLIENT_SECRET") // a secret: environment only
	createRate := serveTenantCreateRate
	if command == "dev" {
		createRate = 0
	}
	fs.IntVar(&c.TenantCreateRate, "tenant-create-rate", envOr("GATEWAY_TENANT_CREATE_RATE", createRate, strconv.Atoi, -1),
		"jobs one tenant may create a minute, across every API replica; 0: no cap (env GATEWAY_TENANT_CREATE_RATE)")
	c.registerBacklogFlags(fs)
	str(&c.TrustedProxies, "trusted-proxies", "GATEWAY_TRUSTED_PROXIES", "", "comma-separated addresses and CIDR prefixes of the reverse proxies whose X-Forwarded-* headers are believed (default: none)")
	starts, target := serveStartConcurrency, serveAcceptTarget
	if command == "dev" {
		starts, target = devStartConcurrency, devAcceptTarget
	}
	if command == "serve" {
		str(&c.TemporalUIOrigin, "temporal-ui-origin", "GATEWAY_TEMPORAL_UI_ORIGIN", "",
			"comma-separated origins (scheme://host[:port]) of the Temporal UIs whose browsers may call the codec server at /codec (CORS; default: none)")
		str(&c.JobStarts, "job-starts", "GATEWAY_JOB_STARTS", jobStartsAuto,
			"which processes start accepted jobs' workflows: serve (this one), workers (theirs are eager starts, a matching round faster; they learn of new jobs from PostgreSQL notifications), or auto: workers on PostgreSQL, serve otherwise")
	}
	fs.IntVar(&c.StartConcurrency, "start-concurrency", envOr("GATEWAY_START_CONCURRENCY", starts, strconv.Atoi, -1),
		"job workflows started at once from the outbox of accepted jobs (env GATEWAY_START_CONCURRENCY)")
	fs.DurationVar(&c.AcceptTarget, "accept-latency-target", envOr("GATEWAY_ACCEPT_LATENCY_TARGET", target, time.ParseDuration, -1),
		"during a burst of new jobs, start this process's jobs more slowly while accepting one takes longer than this; 0: never (env GATEWAY_ACCEPT_LATENCY_TARGET)")
	c.registerWebhookGiveUp(fs)
	if command == "dev" {
		fs.BoolVar(&c.LocalEngines, "local-engines", os.Getenv("GATEWAY_LOCAL_ENGINES") == "true",
			"add the local engines this machine has (Apertium, ffmpeg and tesseract) to the catalog; those it lacks are listed as disabled (env GATEWAY_LOCAL_ENGINES)")
		str(&c.TemporalUIListen, "temporal-ui-listen", "TEMPORAL_UI_LISTEN", "127.0.0.1:8233", "address of the embedded Temporal Web UI (empty: no UI)")
		str(&c.TemporalDevListen, "temporal-dev-listen", "TEMPORAL_DEV_LISTEN", "127.0.0.1:7233", "address of the embedded Temporal frontend")
	}
}

// namespaceUsage describes --temporal-namespace. TLS and API keys are
// read from Temporal's own variables (TEMPORAL_TLS_*, TEMPORAL_API_KEY)
// and temporal.toml profiles: docs/operations.md, Temporal connection.
const namespaceUsage = "Temporal namespace (default: the temporal.toml profile's, else default)"

// registerWebhookGiveUp binds --webhook-give-up-after: how long the
// workflows of jobs accepted (and resends started) here retry a webhook
// event before giving it up (docs/webhooks.md).
func (c *config) registerWebhookGiveUp(fs *flag.FlagSet) {
	fs.DurationVar(&c.WebhookGiveUpAfter, "webhook-give-up-after", envOr("GATEWAY_WEBHOOK_GIVE_UP_AFTER", 0, time.ParseDuration, -1),
		"how long a webhook event is retried before it is given up; 0: 24h (env GATEWAY_WEBHOOK_GIVE_UP_AFTER)")
}

// registerJobGeneration binds --job-generation: the generation stamped on
// the jobs started (and retried) here.
func (c *config) registerJobGeneration(fs *flag.FlagSet) {
	fs.IntVar(&c.JobGeneration, "job-generation", envOr("GATEWAY_JOB_GENERATION", workflows.StampedGeneration, strconv.Atoi, -1),
		fmt.Sprintf("generation of the job workflow stamped on new jobs, 0 to %d; while workers of an older build run, no higher than they understand (env GATEWAY_JOB_GENERATION)",
			workflows.Generation))
}

// envOr is the value of the environment variable env, parsed, or def when
// it is unset; invalid (which validate() reports) when it does not parse.
func envOr[T any](env string, def T, parse func(string) (T, error), invalid T) T {
	v, ok := os.LookupEnv(env)
	if !ok || v == "" {
		return def
	}
	if parsed, err := parse(v); err == nil {
		return parsed
	}
	return invalid
}

// validate checks what a command requires, with messages that say how to
// fix it.
func (c *config) validate(command string) error {
	var problems []string
	need := func(value, flagName, env string) {
		if value == "" {
			problems = append(problems, fmt.Sprintf("%s needs --%s or %s", command, flagName, env))
		}
	}
	switch command {
	case "dev", "serve", "worker", "migrate", "jobs", "replay":
		if err := c.resolveTemporal(command); err != nil {
			problems = append(problems, err.Error())
		}
	}
	needTemporal := func() {
		if c.TemporalAddress == "" {
			problems = append(problems, fmt.Sprintf("%s needs --temporal-address, TEMPORAL_ADDRESS or a temporal.toml profile with an address (%s)", command, temporalConfigFile()))
		}
	}
	switch command {
	case "serve":
		need(c.DatabaseURL, "database-url", "DATABASE_URL")
		needTemporal()
		need(c.OIDCIssuer, "oidc-issuer", "OIDC_ISSUER_URL")
	case "worker":
		need(c.DatabaseURL, "database-url", "DATABASE_URL")
		needTemporal()
	}
	if c.WebhookGiveUpAfter < 0 {
		problems = append(problems, "--webhook-give-up-after (GATEWAY_WEBHOOK_GIVE_UP_AFTER) must be a duration of at least 0, such as 30m")
	}
	problems = append(problems, c.validateTemporalCompression()...)
	if c.JobGeneration < 0 || c.JobGeneration > workflows.Generation {
		problems = append(problems, fmt.Sprintf("--job-generation (GATEWAY_JOB_GENERATION) must be a whole number from 0 to %d, the newest generation this release understands", workflows.Generation))
	}
	if c.TenantCreateRate < 0 && (command == "dev" || command == "serve") {
		problems = append(problems, "--tenant-create-rate (GATEWAY_TENANT_CREATE_RATE) must be a whole number of at least 0")
	}
	if command == "dev" || command == "serve" || command == "worker" {
		problems = append(problems, c.validateBacklog()...)
	}
	if _, err := api.ParseTrustedProxies(c.TrustedProxies); err != nil {
		problems = append(problems, fmt.Sprintf("--trusted-proxies (GATEWAY_TRUSTED_PROXIES): %v; give addresses or CIDR prefixes, comma-separated", err))
	}
	if command == "serve" && c.JobStarts != jobStartsAuto && c.JobStarts != jobStartsServe && c.JobStarts != jobStartsWorkers {
		problems = append(problems, fmt.Sprintf("--job-starts (GATEWAY_JOB_STARTS) must be %s, %s or %s, not %q", jobStartsAuto, jobStartsServe, jobStartsWorkers, c.JobStarts))
	}
	if (command == "dev" || command == "serve" || command == "worker") && c.DatabaseMaxConns < store.MinMaxConns {
		problems = append(problems, fmt.Sprintf("--database-max-conns (GATEWAY_DATABASE_MAX_CONNS) must be a whole number of at least %d", store.MinMaxConns))
	}
	if (command == "dev" || command == "serve" || command == "worker") && c.StartConcurrency < 1 {
		problems = append(problems, "--start-concurrency (GATEWAY_START_CONCURRENCY) must be a whole number of at least 1")
	}
	if c.AcceptTarget < 0 {
		problems = append(problems, "--accept-latency-target (GATEWAY_ACCEPT_LATENCY_TARGET) must be a duration of at least 0, such as 5ms")
	}
	if (command == "dev" || command == "worker") && c.WorkerStopTimeout < 0 {
		problems = append(problems, "--worker-stop-timeout (GATEWAY_WORKER_STOP_TIMEOUT) must be a duration of at least 0, such as 90s")
	}
	if command == "dev" || command == "worker" {
		problems = append(problems, c.validateWorkerConcurrency()...)
	}
	if command == "dev" || command == "serve" || command == "worker" {
		problems = append(problems, c.validateMedia(command)...)
	}
	problems = append(problems, c.validatePayloadKeys()...)
	if c.maxOutageWaitProblem != "" {
		problems = append(problems, c.maxOutageWaitProblem)
	}
	if _, err := parseOrigins(c.TemporalUIOrigin); err != nil {
		problems = append(problems, "--temporal-ui-origin (GATEWAY_TEMPORAL_UI_ORIGIN): "+err.Error())
	}
	if err := checkSigningKey(c.WebhookSigningKey); err != nil {
		problems = append(problems, err.Error())
	}
	if c.CallbackURL != "" {
		if _, err := vendorcallback.NewAddresses(c.CallbackURL, nil); err != nil {
			problems = append(problems, "--callback-url (GATEWAY_CALLBACK_URL): "+err.Error())
		}
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		problems = append(problems, err.Error())
	}
	if c.LogFormat != "json" && c.LogFormat != "text" && c.LogFormat != "" {
		problems = append(problems, fmt.Sprintf("--log-format (GATEWAY_LOG_FORMAT) %q: use json or text", c.LogFormat))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// newLogger is the process's logger: JSON or text lines on w, at level.
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func parseLevel(s string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: use debug, info, warn or error", s)
	}
	return level, nil
}

// tokenFlags are the flags of `gateway token`.
type tokenFlags struct {
	Tenant     string
	Subject    string
	Scope      string
	SuperAdmin bool
	TTL        time.Duration
}
