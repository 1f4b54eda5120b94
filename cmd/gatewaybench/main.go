// Command gatewaybench measures the gateway beside two bare Temporal
// programs, the floor (eager start, one local activity) and the baseline
// (three regular activities), on the same server: job creation
// throughput and latency, submit→completed latency and sustained
// completions, reads at a million jobs on PostgreSQL, the gateway's
// peak memory with a thousand jobs in flight, and (-phases fairness) how
// long one tenant's jobs wait behind another's thousand.
//
// It runs two shapes: dev (`gateway dev` as a subprocess, its embedded
// Temporal on SQLite) and production (temporal-server on PostgreSQL,
// built from the server module in go.mod, with `gateway serve`, `gateway
// worker` and `gateway idp` as processes of their own). Fresh data dirs
// and schemas, free ports on 127.0.0.1, sandbox providers of zero
// latency. It prints one table per shape and writes the results as JSON.
//
//	go run ./cmd/gatewaybench                          # everything, about 27 minutes
//	go run ./cmd/gatewaybench -quick                   # shorter phases, 100,000 jobs: about 15 minutes
//	go run ./cmd/gatewaybench -phases load -shapes dev # creation and end to end, dev shape only
//
// See docs/benchmarks.md for what each number means.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ai-job-gateway/gateway/store/benchdb"
)

// options are the benchmark's settings (flags; BENCH_JOBS, DATABASE_URL and
// TEST_DATABASE_URL from the environment).
type options struct {
	GatewayBin   string         `json:"-"`
	Src          string         `json:"-"`
	JSONPath     string         `json:"-"`
	ProfileDir   string         `json:"-"`
	Phases       []string       `json:"phases"`
	Shapes       []string       `json:"shapes"`
	CreateRuns   int            `json:"create_runs"`
	AcceptTarget *time.Duration `json:"production_accept_latency_target_ns,omitempty"` // nil: serve's default
	JobStarts    string         `json:"production_job_starts"`
	Quick        bool           `json:"quick"`
	Duration     time.Duration  `json:"phase_duration_ns"`
	Rates        []int          `json:"rates"`
	MaxWorkers   int            `json:"max_workers"`
	SerialJobs   int            `json:"serial_jobs"`
	PollInterval time.Duration  `json:"poll_interval_ns"`
	Sustained    int            `json:"sustained_in_flight"`
	SustainedFor time.Duration  `json:"sustained_duration_ns"`
	E2ERate      int            `json:"e2e_rate"`
	Jobs         int            `json:"jobs"`
	ReadRequests int            `json:"read_requests"`
	MemoryJobs   int            `json:"memory_jobs"`
	MemoryDelay  time.Duration  `json:"memory_latency_ns"`
	DrainTimeout time.Duration  `json:"drain_timeout_ns"`
	DatabaseURL  string         `json:"-"`
	PostgresURL  string         `json:"-"`
	Keep         bool           `json:"-"`

	// The fairness phase (docs/benchmarks.md, Fairness between tenants).
	FairnessJobs int `json:"fairness_jobs"`
	// The overload phase (docs/benchmarks.md, Overload) and the gateways'
	// --job-generation.
	OverloadBacklog int           `json:"overload_backlog"`
	OverloadFor     time.Duration `json:"overload_duration_ns"`
	JobGeneration   int           `json:"job_generation"`
	// GatewayLogLevel is the gateways' --log-level ("": their default);
	// debug logs each change of pace (docs/operations.md, Durability).
	GatewayLogLevel string        `json:"gateway_log_level,omitempty"`
	FairnessDelay   time.Duration `json:"fairness_latency_ns"`

	// The scale-out phase (docs/benchmarks.md, Scale out).
	ScaleoutJobs    int              `json:"scaleout_in_flight"`
	ScaleoutLatency time.Duration    `json:"scaleout_latency_ns"`
	ScaleoutWindow  time.Duration    `json:"scaleout_window_ns"`
	ScaleoutConfigs []scaleoutConfig `json:"scaleout_configs"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "gatewaybench: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	gatewayEnv = gatewaySettings(opts)

	b, err := newBench(ctx, opts, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "gatewaybench: %v\n", err)
		return 1
	}
	defer b.close()
	rep, err := b.run(ctx)
	if rep != nil {
		rep.print(stdout)
		if werr := rep.writeJSON(opts.JSONPath); werr != nil {
			fmt.Fprintf(stderr, "gatewaybench: %v\n", werr)
			return 1
		}
		fmt.Fprintf(stdout, "\nresults written to %s\n", opts.JSONPath)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gatewaybench: %v\n", err)
		return 1
	}
	if n := rep.errorCount(); n > 0 {
		fmt.Fprintf(stderr, "gatewaybench: %d request(s) failed; any error fails the benchmark\n", n)
		return 1
	}
	return 0
}

// gatewaySettings are the environment settings every gateway process of
// the run gets from the flags.
func gatewaySettings(opts options) []string {
	var env []string
	if opts.JobGeneration >= 0 {
		env = append(env, fmt.Sprintf("GATEWAY_JOB_GENERATION=%d", opts.JobGeneration))
	}
	if opts.GatewayLogLevel != "" {
		env = append(env, "GATEWAY_LOG_LEVEL="+opts.GatewayLogLevel)
	}
	return env
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("gatewaybench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defJobs, err := benchdb.Jobs()
	if err != nil {
		return options{}, err
	}
	var o options
	var phases, rates, shapes, scaleout string
	fs.StringVar(&o.GatewayBin, "gateway", "", "use this gateway binary instead of building one from -src")
	fs.StringVar(&o.Src, "src", "", "module directory to build the gateway from (default: the module of the working directory)")
	fs.StringVar(&o.JSONPath, "json", filepath.Join("bin", "bench-results.json"), "where to write the results as JSON")
	fs.StringVar(&o.ProfileDir, "profile", "", "collect CPU, heap and block profiles of the gateway into this directory (builds the gateway with a pprof listener)")
	fs.StringVar(&phases, "phases", "load,reads,memory", "phases to run: e2e (end to end), create, load (both; with the floor and the baseline), reads, memory, fairness, overload (production shape: creates beyond what the workers start), scaleout (production shape: workers and their slots)")
	fs.StringVar(&shapes, "shapes", "dev,production", "shapes to run the load phases on: dev (gateway dev, one process), production (Temporal on PostgreSQL, serve and worker as processes of their own); memory runs on both, reads and fairness on dev, overload and scaleout on production")
	fs.StringVar(&o.JobStarts, "job-starts", "workers", "gateway serve's --job-starts in the production shape: workers (eager starts in the worker processes) or serve")
	fs.Func("accept-latency-target", "gateway serve's --accept-latency-target in the production shape (default: serve's own, 10ms; 0: no pacing; 3ms is gateway dev's)", func(v string) error {
		d, err := time.ParseDuration(v)
		o.AcceptTarget = &d
		return err
	})
	fs.IntVar(&o.CreateRuns, "create-runs", 5, "runs of the gateway's create phase at the target rate (200/s), each on a fresh deployment, for the spread")
	fs.BoolVar(&o.Quick, "quick", false, "short run: 5 s phases, 100,000 jobs for reads, fewer samples")
	fs.DurationVar(&o.Duration, "duration", 20*time.Second, "length of each load phase")
	fs.StringVar(&rates, "rates", "50,100,200", "offered create rates (requests per second), comma-separated; \"\" for none")
	fs.IntVar(&o.MaxWorkers, "max-workers", 32, "concurrent clients of the maximum-rate create phase; 0 skips it")
	fs.IntVar(&o.SerialJobs, "serial", 100, "jobs of the one-at-a-time end-to-end phase")
	fs.DurationVar(&o.PollInterval, "poll", 5*time.Millisecond, "GET polling interval of the API-visible one-at-a-time phase")
	fs.IntVar(&o.Sustained, "sustained", 64, "jobs kept in flight by the sustained end-to-end phase")
	fs.DurationVar(&o.SustainedFor, "sustained-duration", 20*time.Second, "length of the sustained end-to-end phase, per system (not shortened by -quick: it needs several job latencies)")
	fs.IntVar(&o.E2ERate, "e2e-rate", 0, "offered rate of the end-to-end phase under load (default: half the baseline's sustained rate)")
	fs.IntVar(&o.Jobs, "jobs", defJobs, "jobs seeded into PostgreSQL for the reads phase (env BENCH_JOBS)")
	fs.IntVar(&o.ReadRequests, "read-requests", 500, "requests per read case")
	fs.IntVar(&o.MemoryJobs, "memory-jobs", 1000, "jobs in flight for the peak-RSS phase")
	fs.DurationVar(&o.MemoryDelay, "memory-latency", time.Minute, "sandbox latency of the jobs of the peak-RSS phase")
	fs.IntVar(&o.FairnessJobs, "fairness-jobs", 1000, "jobs tenant A submits before tenant B's ten in the fairness phase")
	fs.DurationVar(&o.FairnessDelay, "fairness-latency", 200*time.Millisecond, "sandbox latency of the jobs of the fairness phase")
	fs.IntVar(&o.ScaleoutJobs, "scaleout-jobs", 1000, "jobs kept in flight by the scale-out phase")
	fs.DurationVar(&o.ScaleoutLatency, "scaleout-latency", 200*time.Millisecond, "sandbox latency of the jobs of the scale-out phase")
	fs.DurationVar(&o.ScaleoutWindow, "scaleout-window", 20*time.Second, "how long each worker setup of the scale-out phase is measured (after a 10 s warm-up)")
	fs.StringVar(&scaleout, "scaleout-configs", "1x4,2x4,1x16,1,2", "worker setups of the scale-out phase, in turn: <workers>[x<slots>][s<starts>], slots being each worker's workflow task and local activity slots (default: the SDK's), starts its --start-concurrency (default 8)")
	fs.DurationVar(&o.DrainTimeout, "drain-timeout", 5*time.Minute, "how long to wait for a phase's jobs to complete")
	fs.StringVar(&o.PostgresURL, "postgres", cmp.Or(os.Getenv("TEST_DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL for the reads phase (a fresh schema is created in it; env TEST_DATABASE_URL)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the data dirs and PostgreSQL schemas")
	fs.IntVar(&o.JobGeneration, "job-generation", -1, "the gateways' --job-generation (-1: their default)")
	fs.StringVar(&o.GatewayLogLevel, "gateway-log-level", "", "the gateways' --log-level (default: theirs, info); their logs are in the work dir, kept with -keep")
	fs.IntVar(&o.OverloadBacklog, "overload-backlog", 2000, "serve's --max-backlog-per-tenant in the overload phase")
	fs.DurationVar(&o.OverloadFor, "overload-duration", time.Minute, "length of each run of the overload phase")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.Quick {
		quick := map[string]func(){
			"duration":       func() { o.Duration = 5 * time.Second },
			"serial":         func() { o.SerialJobs = 30 },
			"jobs":           func() { o.Jobs = 100_000 },
			"read-requests":  func() { o.ReadRequests = 100 },
			"memory-latency": func() { o.MemoryDelay = 40 * time.Second },
		}
		for name, apply := range quick {
			if !set[name] && (name != "jobs" || os.Getenv("BENCH_JOBS") == "") {
				apply()
			}
		}
	}
	o.DatabaseURL = os.Getenv("DATABASE_URL")
	for _, p := range strings.Split(phases, ",") {
		p = strings.TrimSpace(p)
		switch p {
		case "e2e", "create", "reads", "memory", "fairness", "overload", "scaleout":
			o.Phases = append(o.Phases, p)
		case "load":
			o.Phases = append(o.Phases, "e2e", "create")
		case "":
		default:
			return o, fmt.Errorf("-phases: unknown phase %q; use e2e, create, load, reads, memory, fairness, overload and scaleout", p)
		}
	}
	for _, s := range strings.Split(shapes, ",") {
		switch s = strings.TrimSpace(s); s {
		case "dev", "production":
			o.Shapes = append(o.Shapes, s)
		case "":
		default:
			return o, fmt.Errorf("-shapes: unknown shape %q; use dev and production", s)
		}
	}
	for _, r := range strings.Split(rates, ",") {
		if strings.TrimSpace(r) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil || n < 1 {
			return o, fmt.Errorf("-rates: %q is not a positive integer", r)
		}
		o.Rates = append(o.Rates, n)
	}
	switch {
	case o.Duration < time.Second || o.SustainedFor < 2*time.Second:
		return o, errors.New("-duration: use at least 1s; -sustained-duration at least 2s")
	case o.MaxWorkers < 0 || o.Sustained < 1 || o.SerialJobs < 1 || o.ReadRequests < 1 || o.MemoryJobs < 1 || o.CreateRuns < 1:
		return o, errors.New("-sustained, -serial, -read-requests, -memory-jobs and -create-runs must be positive, -max-workers at least 0")
	case o.Jobs < 1:
		return o, errors.New("-jobs: must be positive")
	case o.FairnessJobs < 1 || o.FairnessDelay < 0:
		return o, errors.New("-fairness-jobs must be positive, -fairness-latency at least 0")
	case o.PollInterval <= 0:
		return o, errors.New("-poll: must be positive")
	case o.OverloadBacklog < 1 || o.OverloadFor < time.Second:
		return o, errors.New("-overload-backlog must be positive, -overload-duration at least 1s")
	case o.ScaleoutJobs < 1 || o.ScaleoutLatency < 0 || o.ScaleoutWindow < time.Second:
		return o, errors.New("-scaleout-jobs must be positive, -scaleout-latency at least 0, -scaleout-window at least 1s")
	}
	if o.ScaleoutConfigs, err = parseScaleoutConfigs(scaleout); err != nil {
		return o, err
	}
	return o, nil
}

func (o options) has(phase string) bool { return slices.Contains(o.Phases, phase) }

func (o options) hasShape(shape string) bool { return slices.Contains(o.Shapes, shape) }
