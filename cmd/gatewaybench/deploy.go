package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ai-job-gateway/gateway/providers/sandbox"
	"github.com/ai-job-gateway/gateway/store"
)

// process is one process of a deployment.
type process struct {
	name   string // its role: gateway (dev), temporal, idp, serve, worker-<n>
	dir    string // its data dir
	listen string // its HTTP address
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error
}

// deployment is a fresh deployment of a shape: `gateway dev`, or
// temporal-server, `gateway idp`, `gateway serve` and workers.
type deployment struct {
	b        *bench
	name     string
	bin      string     // serve's and the workers'
	api      *process   // answers the API
	issuer   *process   // whose data dir signs tokens
	procs    []*process // measured (CPU, memory), with the workers
	workers  []*process
	started  int // workers started, for their names
	temporal string
	storeURL string
	catalog  string   // the providers file
	env      []string // serve's and the workers'
	obs      client.Client
	st       *store.Store // the gateway's, for results and starts
	starts   *startWatch
	undo
}

// deploySpec says what to deploy besides the shape.
type deploySpec struct {
	workers  int           // production: gateway workers to start with
	latency  time.Duration // the sandbox providers'
	storeURL string        // dev: the gateway's store ("": SQLite in its data dir)
	env      []string      // production: more settings of serve and the workers
	nodev    bool          // production: serve and the workers built as deploy/Dockerfile builds them
}

// deploy starts a deployment of shape with sandbox providers of
// spec.latency for every service, and an observer client of its Temporal.
func (b *bench) deploy(ctx context.Context, shape, name string, spec deploySpec) (*deployment, error) {
	d := &deployment{b: b, name: name, bin: b.bin, catalog: filepath.Join(b.work, name+"-providers.yaml"), storeURL: spec.storeURL}
	b.logf("%s: starting the %s shape (sandbox latency %s)", name, shape, spec.latency)
	err := os.WriteFile(d.catalog, []byte(sandbox.Catalog("bench", spec.latency.Milliseconds())), 0o644)
	if err == nil && shape == "dev" {
		err = d.startDev(ctx)
	} else if err == nil {
		err = d.startProduction(ctx, spec)
	}
	if err == nil {
		d.obs, err = dial(ctx, d.temporal)
	}
	if err != nil {
		d.close()
		return nil, err
	}
	d.undo = append(d.undo, d.obs.Close)
	return d, nil
}

func (d *deployment) startDev(ctx context.Context) (err error) {
	if d.temporal, err = freeAddr(); err != nil {
		return err
	}
	d.api, err = d.start(ctx, "gateway", append(d.b.env(), "DATABASE_URL="+d.storeURL), nil, d.bin, func(p *process) []string {
		return []string{"dev", "--data-dir", p.dir, "--listen", p.listen, "--temporal-dev-listen", d.temporal,
			"--temporal-ui-listen", "", "--providers", d.catalog}
	})
	if err == nil {
		d.storeURL = cmp.Or(d.storeURL, "sqlite:"+filepath.Join(d.api.dir, "gateway.db"))
		d.issuer, d.procs = d.api, []*process{d.api}
	}
	return err
}

// startProduction deploys the shape of docs/operations.md on this machine,
// the store and Temporal in fresh schemas and databases of -postgres.
func (d *deployment) startProduction(ctx context.Context, spec deploySpec) (err error) {
	b := d.b
	if b.tools.server == "" {
		if b.tools, err = b.buildTemporal(ctx); err != nil {
			return err
		}
	}
	if spec.nodev {
		if d.bin, err = b.nodevBinary(ctx); err != nil {
			return err
		}
	}
	if d.storeURL, err = b.freshSchema(ctx, b.opts.PostgresURL, d.name); err != nil {
		return err
	}
	if err := d.startTemporal(ctx); err != nil {
		return err
	}
	if d.issuer, err = d.start(ctx, "idp", b.env(), nil, b.bin, func(p *process) []string {
		return []string{"idp", "--data-dir", p.dir, "--listen", p.listen}
	}); err != nil {
		return err
	}
	d.env = slices.Concat(b.env(), []string{"DATABASE_URL=" + d.storeURL, "TEMPORAL_ADDRESS=" + d.temporal,
		"OIDC_ISSUER_URL=" + d.issuer.url("/dev/oidc")}, spec.env)
	migrate := exec.CommandContext(ctx, b.bin, "migrate")
	migrate.Env = d.env
	if out, err := migrate.CombinedOutput(); err != nil {
		return fmt.Errorf("gateway migrate: %w\n%s", err, out)
	}
	for range spec.workers {
		if err := d.addWorker(ctx); err != nil {
			return err
		}
	}
	// The benchmark's one tenant creates far above serve's default
	// per-tenant create rate, which is a limit for clients, not a cost.
	d.api, err = d.start(ctx, "serve", d.env, nil, d.bin, func(p *process) []string {
		return []string{"serve", "--listen", p.listen, "--providers", d.catalog, "--tenant-create-rate", "0", "--job-starts", b.opts.JobStarts}
	})
	d.procs = append(d.procs, d.api)
	return err
}

// addWorker starts one more `gateway worker` with args.
func (d *deployment) addWorker(ctx context.Context, args ...string) error {
	d.started++
	w, err := d.start(ctx, fmt.Sprintf("worker-%d", d.started), d.env, nil, d.bin, func(p *process) []string {
		return append([]string{"worker", "--listen", p.listen, "--providers", d.catalog, "--data-dir", p.dir}, args...)
	})
	if err == nil {
		d.workers = append(d.workers, w)
	}
	return err
}

// stopWorkers SIGTERMs all but the newest keep workers; their jobs go on.
func (d *deployment) stopWorkers(keep int) {
	old := d.workers[:len(d.workers)-keep]
	for _, w := range old {
		w.end(syscall.SIGTERM)
	}
	d.workers = slices.Clone(d.workers[len(old):])
}

// measured are the processes whose CPU is measured.
func (d *deployment) measured() []*process { return slices.Concat(d.procs, d.workers) }

// start runs bin with args(p) as the process role, with its own data dir,
// address and log, until ready (nil: /readyz answers 200), 3 minutes at most.
func (d *deployment) start(ctx context.Context, role string, env []string, ready func() bool, bin string, args func(*process) []string) (*process, error) {
	logName := d.name + "-" + role
	p := &process{name: role, dir: filepath.Join(d.b.work, logName), log: filepath.Join(d.b.work, logName+".log"), exited: make(chan struct{})}
	// A phase's runs share names; each starts from an empty data dir.
	err := os.RemoveAll(p.dir)
	if err == nil {
		p.listen, err = freeAddr()
	}
	if err != nil {
		return nil, err
	}
	f, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, args(p)...)
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = env, f, f
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	go func() { p.err = p.cmd.Wait(); f.Close(); close(p.exited) }()
	d.undo = append(d.undo, func() { p.end(syscall.SIGKILL) })
	if ready == nil {
		ready = func() bool {
			resp, err := http.Get(p.url("/readyz"))
			if err == nil {
				resp.Body.Close()
			}
			return err == nil && resp.StatusCode == http.StatusOK
		}
	}
	for deadline := time.Now().Add(3 * time.Minute); !ready(); {
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited (%v); its log:\n%s", logName, p.err, p.tail())
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s not ready after 3 minutes; its log:\n%s", logName, p.tail())
		}
	}
	return p, nil
}

func (p *process) url(path string) string { return "http://" + p.listen + path }

func (p *process) pid() int { return p.cmd.Process.Pid }

// end sends the process sig, and SIGKILL if it still runs after 20 s.
func (p *process) end(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// tail is the end of the process's log.
func (p *process) tail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	return string(b[max(0, len(b)-4000):])
}

// freeAddr is a free 127.0.0.1 port.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// token mints a token with `gateway token`, as the README does.
func (d *deployment) token(tenant, scopes string) (string, error) {
	args := []string{"token", "--data-dir", d.issuer.dir, "--sub", "bench-user", "--scope", scopes, "--ttl", "24h"}
	if tenant != "" {
		args = append(args, "--tenant", tenant)
	}
	cmd := exec.Command(d.b.bin, args...)
	cmd.Env = d.b.env()
	out, err := cmd.Output()
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		return "", fmt.Errorf("gateway token: %w: %s", err, exit.Stderr)
	} else if err != nil {
		return "", fmt.Errorf("gateway token: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// dial connects an SDK client to a Temporal frontend.
func dial(ctx context.Context, hostPort string) (client.Client, error) {
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	return client.DialContext(ctx, client.Options{HostPort: hostPort, Namespace: "default", Logger: sdklog.NewStructuredLogger(quiet)})
}

// temporalTools are temporal-server and temporal-sql-tool built from the
// go.mod's go.temporal.io/server, and its dir (config and schemas).
type temporalTools struct {
	server, sqlTool, module string
}

func (b *bench) buildTemporal(ctx context.Context) (temporalTools, error) {
	t := temporalTools{server: filepath.Join(b.work, "temporal-server"), sqlTool: filepath.Join(b.work, "temporal-sql-tool")}
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/server")
	cmd.Dir = b.src
	dir, err := cmd.Output()
	if err != nil {
		return t, fmt.Errorf("find the go.temporal.io/server module: %w", err)
	}
	t.module = strings.TrimSpace(string(dir))
	if err := b.goBuild(ctx, "temporal-server", "-o", t.server, "go.temporal.io/server/cmd/server"); err != nil {
		return t, err
	}
	return t, b.goBuild(ctx, "temporal-sql-tool", "-o", t.sqlTool, "go.temporal.io/server/cmd/tools/sql")
}

// temporalDynamicConfig lets the server's four history shards read new
// tasks at more than 20 a second, as gateway dev does for its one
// (docs/benchmarks-results.md, Why the baseline's tasks waited).
const temporalDynamicConfig = `history.transferProcessorMaxPollRPS:
  - value: 10000
history.timerProcessorMaxPollRPS:
  - value: 10000
history.visibilityProcessorMaxPollRPS:
  - value: 10000
`

// temporalEnv configures config/docker.yaml, which the Compose file's
// temporalio/server runs, for databases db and db_visibility at pgURL, 10
// connections instead of 20 (serve and two workers share PostgreSQL's
// 100) and free ports below 32768 (membership ports are smallints).
func temporalEnv(pgURL, db, dynamicConfig string) (env []string, frontend string, err error) {
	pg, err := url.Parse(pgURL)
	if err != nil {
		return nil, "", fmt.Errorf("-postgres: %w", err)
	}
	password, _ := pg.User.Password()
	env = []string{"DB=postgres12", "POSTGRES_SEEDS=" + pg.Hostname(), "DB_PORT=" + cmp.Or(pg.Port(), "5432"), "POSTGRES_PORT=" + cmp.Or(pg.Port(), "5432"),
		"POSTGRES_USER=" + pg.User.Username(), "POSTGRES_PWD=" + password, "DBNAME=" + db, "VISIBILITY_DBNAME=" + db + "_visibility",
		"SQL_MAX_CONNS=10", "SQL_MAX_IDLE_CONNS=10", "SQL_VIS_MAX_CONNS=2", "SQL_VIS_MAX_IDLE_CONNS=2", "LOG_LEVEL=warn",
		"TEMPORAL_BROADCAST_ADDRESS=127.0.0.1", "DYNAMIC_CONFIG_FILE_PATH=" + dynamicConfig}
	for _, name := range []string{"FRONTEND_GRPC", "FRONTEND_HTTP", "FRONTEND_MEMBERSHIP", "HISTORY_GRPC", "HISTORY_MEMBERSHIP",
		"MATCHING_GRPC", "MATCHING_MEMBERSHIP", "WORKER_GRPC", "WORKER_MEMBERSHIP"} {
		port := 0
		for tries := 0; port == 0 && tries < 100; tries++ {
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(20000+rand.IntN(12000))); err == nil {
				port = l.Addr().(*net.TCPAddr).Port
				l.Close()
			}
		}
		if port == 0 {
			return nil, "", errors.New("no free port between 20000 and 32000")
		}
		env = append(env, fmt.Sprintf("%s_PORT=%d", name, port))
		frontend = cmp.Or(frontend, fmt.Sprintf("127.0.0.1:%d", port))
	}
	return env, frontend, nil
}

// startTemporal makes Temporal's two databases with temporal-sql-tool,
// starts temporal-server on them and registers the default namespace.
func (d *deployment) startTemporal(ctx context.Context) error {
	b := d.b
	dynamicConfig := filepath.Join(b.work, d.name+"-temporal-dynamic.yaml")
	if err := os.WriteFile(dynamicConfig, []byte(temporalDynamicConfig), 0o644); err != nil {
		return err
	}
	db := "gatewaybench_temporal_" + strings.ReplaceAll(d.name, "-", "_")
	env, frontend, err := temporalEnv(b.opts.PostgresURL, db, dynamicConfig)
	if err != nil {
		return err
	}
	pg, _ := url.Parse(b.opts.PostgresURL)
	password, _ := pg.User.Password()
	for schema, db := range map[string]string{"temporal": db, "visibility": db + "_visibility"} {
		sqlTool := func(args ...string) ([]byte, error) {
			return exec.Command(b.tools.sqlTool, append([]string{"--plugin", "postgres12", "--ep", pg.Hostname(), "-p", cmp.Or(pg.Port(), "5432"),
				"-u", pg.User.Username(), "--pw", password, "--db", db}, args...)...).CombinedOutput()
		}
		d.undo = append(d.undo, func() { _, _ = sqlTool("drop", "--force") })
		for _, args := range [][]string{{"drop", "--force"}, {"create"}, {"setup-schema", "-v", "0.0"},
			{"update-schema", "-d", filepath.Join(b.tools.module, "schema", "postgresql", "v12", schema, "versioned")}} {
			if out, err := sqlTool(args...); err != nil && args[0] != "drop" {
				return fmt.Errorf("temporal-sql-tool %s %s: %w\n%s", db, args[0], err, out)
			}
		}
	}
	d.temporal = frontend
	t, err := d.start(ctx, "temporal", append(b.env(), env...), func() bool {
		c, err := dial(ctx, d.temporal)
		if err != nil {
			return false
		}
		defer c.Close()
		return registerNamespace(ctx, c) == nil
	}, b.tools.server, func(*process) []string {
		return []string{"--config-file", filepath.Join(b.tools.module, "config", "docker.yaml"), "--allow-no-auth", "start"}
	})
	d.procs = append(d.procs, t)
	return err
}

// registerNamespace registers "default" (72 h retention, as the Compose
// file) and reports whether the frontend serves it yet (within ~10 s).
func registerNamespace(ctx context.Context, c client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: "default", WorkflowExecutionRetentionPeriod: durationpb.New(72 * time.Hour)})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return err
	}
	_, err = c.WorkflowService().ListOpenWorkflowExecutions(ctx, &workflowservice.ListOpenWorkflowExecutionsRequest{
		Namespace: "default", MaximumPageSize: 1})
	return err
}
