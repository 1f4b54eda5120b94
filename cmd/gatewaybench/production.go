package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The production shape: the gateway as docs/operations.md deploys it, on
// this one machine. A Temporal server in its own process, built from the
// server module the gateway already uses (`temporal-server`, with its
// schema made by `temporal-sql-tool`, as the Compose file does), on
// PostgreSQL; `gateway serve` and one or more `gateway worker`s as
// processes of their own, the store on PostgreSQL; `gateway idp` issues
// the tokens. The floor's and the baseline's workers run in the benchmark
// process against the same server.

// temporalTools are the Temporal server and its SQL tool, built once.
type temporalTools struct {
	server, sqlTool, schemaDir string
}

// buildTemporal builds temporal-server and temporal-sql-tool from the
// go.temporal.io/server module in the gateway's go.mod.
func buildTemporal(ctx context.Context, src, dir string, log func(string, ...any)) (temporalTools, error) {
	t := temporalTools{server: filepath.Join(dir, "temporal-server"), sqlTool: filepath.Join(dir, "temporal-sql-tool")}
	modDir, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/server").Output()
	if err != nil {
		return t, fmt.Errorf("find the go.temporal.io/server module: %w", err)
	}
	t.schemaDir = filepath.Join(strings.TrimSpace(string(modDir)), "schema", "postgresql", "v12")
	start := time.Now()
	for bin, pkg := range map[string]string{t.server: "go.temporal.io/server/cmd/server", t.sqlTool: "go.temporal.io/server/cmd/tools/sql"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			return t, fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	}
	log("built temporal-server and temporal-sql-tool in %s", time.Since(start).Round(100*time.Millisecond))
	return t, nil
}

// productionShape is one production-shape deployment.
type productionShape struct {
	temporal *process
	idp      *process
	api      *process
	workers  []*process
	started  int    // workers started, for their names
	pprof    bool   // workers listen for pprof (-profile)
	frontend string // host:port of Temporal's frontend
	env      []string
	storeURL string // the gateway's database
	catalog  string
	work     string
	name     string
	dbs      []string // PostgreSQL databases made for Temporal
	admin    string   // URL of the PostgreSQL the databases are in
}

// startProduction deploys the production shape with workers gateway
// workers; the store goes into a fresh schema of the benchmark's
// PostgreSQL, Temporal into two fresh databases of the same server.
func (b *bench) startProduction(ctx context.Context, name string, workers int, env ...string) (*productionShape, error) {
	return b.startProductionWith(ctx, name, workers, catalog("bench-zero", 0), b.bin, env...)
}

// startProductionWith is startProduction with the providers file cat and
// serve and the workers run from bin (the identity provider and migrate
// from the benchmark's gateway); env adds settings of serve and the
// workers.
func (b *bench) startProductionWith(ctx context.Context, name string, workers int, cat, bin string, env ...string) (_ *productionShape, err error) {
	if b.temporalTools.server == "" {
		if b.temporalTools, err = buildTemporal(ctx, b.src, b.work, b.logf); err != nil {
			return nil, err
		}
	}
	p := &productionShape{work: b.work, name: name, admin: b.opts.PostgresURL, pprof: b.opts.ProfileDir != ""}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	tag := strings.ReplaceAll(name, "-", "_")
	storeURL, err := b.freshSchema(ctx, b.opts.PostgresURL, tag)
	if err != nil {
		return nil, err
	}
	if err := p.startTemporal(ctx, b.temporalTools, tag); err != nil {
		return nil, err
	}
	p.catalog = filepath.Join(b.work, name+"-providers.yaml")
	if err := os.WriteFile(p.catalog, []byte(cat), 0o644); err != nil {
		return nil, err
	}
	idpDir := filepath.Join(b.work, name+"-idp")
	p.idp = &process{bin: b.bin, dataDir: idpDir}
	if p.idp.listen, err = freeAddr(); err != nil {
		return nil, err
	}
	p.idp.cmd = exec.Command(b.bin, "idp", "--data-dir", idpDir, "--listen", p.idp.listen)
	p.idp.cmd.Env = cleanEnv()
	if err := p.idp.start(ctx, b.work, name+"-idp", p.idp.readyz); err != nil {
		return nil, err
	}
	p.storeURL = storeURL
	p.env = append(cleanEnv(), "DATABASE_URL="+storeURL, "TEMPORAL_ADDRESS="+p.frontend,
		"OIDC_ISSUER_URL="+p.idp.url("/dev/oidc"), payloadKeysEnv())
	p.env = append(p.env, env...)
	migrate := exec.CommandContext(ctx, b.bin, "migrate")
	migrate.Env = p.env
	if out, err := migrate.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("gateway migrate: %w\n%s", err, out)
	}
	for range workers {
		if err := p.addWorker(ctx, bin); err != nil {
			return nil, err
		}
	}
	// The benchmark's one tenant creates far above serve's default
	// per-tenant create rate, which is a limit for clients, not a cost.
	p.api = &process{bin: bin, dataDir: idpDir}
	if p.api.listen, err = freeAddr(); err != nil {
		return nil, err
	}
	args := []string{"serve", "--listen", p.api.listen, "--providers", p.catalog, "--tenant-create-rate", "0", "--job-starts", b.opts.JobStarts}
	if b.opts.AcceptTarget != nil {
		args = append(args, "--accept-latency-target", b.opts.AcceptTarget.String())
	}
	p.api.cmd = exec.Command(bin, args...)
	p.api.cmd.Env = p.env
	if err := p.api.start(ctx, b.work, name+"-serve", p.api.readyz); err != nil {
		return nil, err
	}
	return p, nil
}

// addWorker starts one more `gateway worker`, with args added to its
// command line.
func (p *productionShape) addWorker(ctx context.Context, bin string, args ...string) error {
	p.started++
	n := p.started
	w := &process{bin: bin, dataDir: filepath.Join(p.work, fmt.Sprintf("%s-worker-%d", p.name, n))}
	var err error
	if w.listen, err = freeAddr(); err != nil {
		return err
	}
	w.cmd = exec.Command(bin, append([]string{"worker", "--listen", w.listen, "--providers", p.catalog, "--data-dir", w.dataDir}, args...)...)
	w.cmd.Env = p.env
	if p.pprof {
		if w.pprof, err = freeAddr(); err != nil {
			return err
		}
		w.cmd.Env = append(slices.Clone(p.env), profileEnv+"="+w.pprof)
	}
	if err := w.start(ctx, p.work, fmt.Sprintf("%s-worker-%d", p.name, n), w.readyz); err != nil {
		return err
	}
	p.workers = append(p.workers, w)
	return nil
}

// stopWorkers stops the workers started before the newest keep, each as
// SIGTERM does (the rest of its jobs go on elsewhere).
func (p *productionShape) stopWorkers(keep int) {
	old := p.workers[:len(p.workers)-keep]
	for _, w := range old {
		w.stop()
	}
	p.workers = slices.Clone(p.workers[len(old):])
}

// close kills every process and drops Temporal's databases.
func (p *productionShape) close() {
	for _, w := range p.workers {
		w.kill()
	}
	p.workers = nil
	for _, x := range []**process{&p.api, &p.idp, &p.temporal} {
		if *x != nil {
			(*x).kill()
			*x = nil
		}
	}
	if len(p.dbs) > 0 {
		if db, err := sql.Open("pgx", p.admin); err == nil {
			for _, name := range p.dbs {
				_, _ = db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
			}
			_ = db.Close()
		}
		p.dbs = nil
	}
}

// temporalConfig is the server's configuration: the upstream
// development-postgres12.yaml with free ports and without archival, and
// 10 connections per service instead of 20: its four services share the
// one PostgreSQL (max_connections 100) with serve and up to two workers
// of 20 each, and at 20 the phase with two workers ran out of
// connections ("too many clients", creates answered 503).
var temporalConfig = template.Must(template.New("temporal").Parse(`log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
    default:
      sql:
        pluginName: postgres12
        databaseName: {{.DB}}
        connectAddr: "{{.PG}}"
        connectProtocol: tcp
        user: "{{.User}}"
        password: "{{.Password}}"
        maxConns: 10
        maxIdleConns: 10
        maxConnLifetime: 1h
    visibility:
      sql:
        pluginName: postgres12
        databaseName: {{.DB}}_visibility
        connectAddr: "{{.PG}}"
        connectProtocol: tcp
        user: "{{.User}}"
        password: "{{.Password}}"
        maxConns: 2
        maxIdleConns: 2
        maxConnLifetime: 1h
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
{{- range .Services}}
  {{.Name}}:
    rpc:
      grpcPort: {{.GRPC}}
      membershipPort: {{.Membership}}
      bindOnLocalHost: true
{{- end}}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:{{.Frontend}}"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: "{{.DynamicConfig}}"
  pollInterval: 10s
`))

// temporalDynamicConfig raises the rate at which a history shard reads
// its new tasks from 20 a second (a pace meant for hundreds of shards)
// for this server's four, as gateway dev does for its one: at 20, a task
// dispatched through matching waited for the next 50 ms tick of its
// shard (docs/benchmarks-results.md, Why the baseline's tasks waited).
// It applies to all three systems alike.
const temporalDynamicConfig = `history.transferProcessorMaxPollRPS:
  - value: 10000
history.timerProcessorMaxPollRPS:
  - value: 10000
history.visibilityProcessorMaxPollRPS:
  - value: 10000
`

// temporalService is one of the server's four services and its ports.
type temporalService struct {
	Name             string
	GRPC, Membership int
}

// temporalSettings fill in temporalConfig.
type temporalSettings struct {
	DB, PG, User, Password string
	Services               []temporalService // the frontend first
	Frontend               int
	DynamicConfig          string
}

// writeTemporalConfig writes the server's configuration to path and its
// dynamic config beside it.
func writeTemporalConfig(path string, s temporalSettings) error {
	s.Frontend = s.Services[0].GRPC
	s.DynamicConfig = strings.TrimSuffix(path, ".yaml") + "-dynamic.yaml"
	if err := os.WriteFile(s.DynamicConfig, []byte(temporalDynamicConfig), 0o644); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = temporalConfig.Execute(f, s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// startTemporal makes Temporal's two databases with temporal-sql-tool,
// starts temporal-server on them and registers the default namespace.
func (p *productionShape) startTemporal(ctx context.Context, tools temporalTools, tag string) error {
	pg, err := url.Parse(p.admin)
	if err != nil {
		return fmt.Errorf("-postgres: %w", err)
	}
	host, port, err := net.SplitHostPort(pg.Host)
	if err != nil {
		host, port = pg.Host, "5432"
	}
	user := pg.User.Username()
	password, _ := pg.User.Password()
	db := "gatewaybench_temporal_" + tag
	for _, name := range []string{db, db + "_visibility"} {
		p.dbs = append(p.dbs, name)
		schema := "temporal"
		if strings.HasSuffix(name, "_visibility") {
			schema = "visibility"
		}
		for _, args := range [][]string{
			{"drop", "--force"},
			{"create"},
			{"setup-schema", "-v", "0.0"},
			{"update-schema", "-d", filepath.Join(tools.schemaDir, schema, "versioned")},
		} {
			cmd := exec.CommandContext(ctx, tools.sqlTool, append([]string{"--plugin", "postgres12", "--ep", host, "-p", port,
				"-u", user, "--pw", password, "--db", name}, args...)...)
			if out, err := cmd.CombinedOutput(); err != nil && args[0] != "drop" {
				return fmt.Errorf("temporal-sql-tool %s %s: %w\n%s", name, args[0], err, out)
			}
		}
	}
	var services []temporalService
	for _, name := range []string{"frontend", "history", "matching", "worker"} {
		s := temporalService{Name: name}
		for _, port := range []*int{&s.GRPC, &s.Membership} {
			if *port, err = freeLowPort(); err != nil {
				return err
			}
		}
		services = append(services, s)
	}
	cfgPath := filepath.Join(p.work, p.name+"-temporal.yaml")
	if err := writeTemporalConfig(cfgPath, temporalSettings{DB: db, PG: net.JoinHostPort(host, port), User: user,
		Password: password, Services: services}); err != nil {
		return err
	}
	p.frontend = "127.0.0.1:" + strconv.Itoa(services[0].GRPC)
	p.temporal = &process{bin: tools.server, listen: p.frontend}
	p.temporal.cmd = exec.Command(tools.server, "--config-file", cfgPath, "--allow-no-auth", "start")
	p.temporal.cmd.Env = cleanEnv()
	var c client.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	ready := func() bool {
		if c == nil {
			dialed, err := dial(ctx, p.frontend)
			if err != nil {
				return false
			}
			c = dialed
		}
		return registerNamespace(ctx, c) == nil
	}
	return p.temporal.start(ctx, p.work, p.name+"-temporal", ready)
}

// registerNamespace registers "default" (72 h retention, as the Compose
// file) and reports whether the frontend serves it yet: its namespace
// cache learns of a new namespace within about ten seconds.
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

// freeLowPort is a free 127.0.0.1 port below 32768: Temporal stores
// membership ports in a smallint column, and the kernel's ephemeral
// ports start above it.
func freeLowPort() (int, error) {
	for range 100 {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			_ = l.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free port between 20000 and 32000")
}
