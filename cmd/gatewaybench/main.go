// Command gatewaybench measures the gateway, in its dev and its production
// shape, beside two bare Temporal programs on the same server (the floor
// and the baseline): creation, end to end, reads, peak memory, fairness
// between tenants, overload and scale-out. docs/benchmarks.md says how to
// run it and what each figure means.
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

// options are the flags.
type options struct {
	Src             string           `json:"-"`
	JSONPath        string           `json:"-"`
	PostgresURL     string           `json:"-"`
	Keep            bool             `json:"-"`
	Phases          []string         `json:"phases"`
	Shapes          []string         `json:"shapes"`
	Quick           bool             `json:"quick"`
	JobStarts       string           `json:"production_job_starts"`
	JobGeneration   int              `json:"job_generation"`
	Duration        time.Duration    `json:"phase_duration_ns"`
	Rates           []int            `json:"rates"`
	CreateRuns      int              `json:"create_runs"`
	MaxWorkers      int              `json:"max_workers"`
	SerialJobs      int              `json:"serial_jobs"`
	Sustained       int              `json:"sustained_in_flight"`
	SustainedFor    time.Duration    `json:"sustained_duration_ns"`
	Jobs            int              `json:"jobs"`
	ReadRequests    int              `json:"read_requests"`
	MemoryJobs      int              `json:"memory_jobs"`
	MemoryDelay     time.Duration    `json:"memory_latency_ns"`
	FairnessJobs    int              `json:"fairness_jobs"`
	FairnessBJobs   int              `json:"fairness_b_jobs"`
	FairnessRuns    int              `json:"fairness_runs"`
	FairnessDelay   time.Duration    `json:"fairness_latency_ns"`
	OverloadBacklog int              `json:"overload_backlog"`
	OverloadFor     time.Duration    `json:"overload_duration_ns"`
	ScaleoutJobs    int              `json:"scaleout_in_flight"`
	ScaleoutLatency time.Duration    `json:"scaleout_latency_ns"`
	ScaleoutWindow  time.Duration    `json:"scaleout_window_ns"`
	ScaleoutConfigs []scaleoutConfig `json:"scaleout_configs"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run exits 2 on bad flags, 1 when a phase failed or any of the gateway's
// requests or jobs failed.
func run(args []string, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "gatewaybench: %v\n", err)
		return code
	}
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return fail(2, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := newBench(ctx, opts, stderr)
	if err != nil {
		return fail(1, err)
	}
	defer b.close()
	err = b.run(ctx)
	b.rep.print(stdout)
	if err := b.rep.writeJSON(opts.JSONPath); err != nil {
		return fail(1, err)
	}
	fmt.Fprintf(stdout, "\nresults written to %s\n", opts.JSONPath)
	if n := b.rep.errorCount(); err == nil && n > 0 {
		err = fmt.Errorf("%d of the gateway's requests or jobs failed; any fails the benchmark", n)
	}
	if err != nil {
		return fail(1, err)
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("gatewaybench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defJobs, err := benchdb.Jobs()
	if err != nil {
		return options{}, err
	}
	o := options{ReadRequests: 500}
	var phases, rates, shapes, scaleout string
	fs.StringVar(&o.Src, "src", "", "the gateway module to build the gateway and Temporal from (default: the working directory)")
	fs.StringVar(&o.JSONPath, "json", filepath.Join("bin", "bench-results.json"), "where to write the results as JSON")
	fs.StringVar(&phases, "phases", "load,reads,memory", "phases to run: e2e, create, load (both), reads, memory, fairness, overload, scaleout")
	fs.StringVar(&shapes, "shapes", "dev,production", "shapes to run: dev (gateway dev), production (Temporal on PostgreSQL, serve and workers apart)")
	fs.StringVar(&o.JobStarts, "job-starts", "workers", "gateway serve's --job-starts in the production shape: workers or serve")
	fs.IntVar(&o.JobGeneration, "job-generation", -1, "the gateways' --job-generation (-1: their default)")
	fs.BoolVar(&o.Quick, "quick", false, "short run: 5 s phases, 30 one-at-a-time jobs, 100,000 jobs for reads, 100 read requests, 40 s memory latency")
	fs.DurationVar(&o.Duration, "duration", 20*time.Second, "length of each create phase")
	fs.StringVar(&rates, "rates", "50,100,200", "offered create rates (per second), comma-separated; \"\" for none")
	fs.IntVar(&o.CreateRuns, "create-runs", 5, "runs of the gateway's create at 200/s, each on a fresh deployment")
	fs.IntVar(&o.MaxWorkers, "max-workers", 32, "clients of the maximum-rate create; 0 skips it")
	fs.IntVar(&o.SerialJobs, "serial", 100, "jobs of the one-at-a-time phase")
	fs.IntVar(&o.Sustained, "sustained", 64, "jobs kept in flight by the sustained phase")
	fs.DurationVar(&o.SustainedFor, "sustained-duration", 20*time.Second, "length of the sustained phase per system (not shortened by -quick)")
	fs.IntVar(&o.Jobs, "jobs", defJobs, "jobs seeded into PostgreSQL for the reads phase (env BENCH_JOBS)")
	fs.IntVar(&o.MemoryJobs, "memory-jobs", 1000, "jobs in flight for peak RSS")
	fs.DurationVar(&o.MemoryDelay, "memory-latency", time.Minute, "sandbox latency of the memory phase's jobs")
	fs.IntVar(&o.FairnessJobs, "fairness-jobs", 1000, "jobs tenant A submits in the fairness phase")
	fs.IntVar(&o.FairnessBJobs, "fairness-b-jobs", 10, "jobs tenant B submits at once, idle and again behind A")
	fs.IntVar(&o.FairnessRuns, "fairness-runs", 5, "runs of the fairness phase, each on a fresh deployment; the target holds their median")
	fs.DurationVar(&o.FairnessDelay, "fairness-latency", 200*time.Millisecond, "sandbox latency of the fairness phase's jobs")
	fs.IntVar(&o.OverloadBacklog, "overload-backlog", 2000, "serve's --max-backlog-per-tenant in the overload phase")
	fs.DurationVar(&o.OverloadFor, "overload-duration", time.Minute, "length of each run of the overload phase")
	fs.IntVar(&o.ScaleoutJobs, "scaleout-jobs", 1000, "jobs kept in flight by the scale-out phase")
	fs.DurationVar(&o.ScaleoutLatency, "scaleout-latency", 200*time.Millisecond, "sandbox latency of the scale-out phase's jobs")
	fs.DurationVar(&o.ScaleoutWindow, "scaleout-window", 20*time.Second, "how long each worker setup is measured, after a 10 s warm-up")
	fs.StringVar(&scaleout, "scaleout-configs", "1x4,2x4,1x16,1,2", "worker setups of the scale-out phase: <workers>[x<slots>], slots being each worker's workflow task and local activity slots (default: the SDK's)")
	fs.StringVar(&o.PostgresURL, "postgres", cmp.Or(os.Getenv("TEST_DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL of the reads phase and the production shape (env TEST_DATABASE_URL)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the data dirs and PostgreSQL schemas")
	if err := fs.Parse(args); err != nil {
		return o, err
	} else if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{"jobs": os.Getenv("BENCH_JOBS") != ""}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.Quick {
		o.ReadRequests = 100
		for name, quick := range map[string]func(){"duration": func() { o.Duration = 5 * time.Second }, "serial": func() { o.SerialJobs = 30 },
			"memory-latency": func() { o.MemoryDelay = 40 * time.Second }, "jobs": func() { o.Jobs = 100_000 }} {
			if !set[name] {
				quick()
			}
		}
	}
	list := func(s string) []string {
		return strings.FieldsFunc(s, func(c rune) bool { return c == ',' || c == ' ' })
	}
	for _, p := range list(phases) {
		if p == "load" {
			o.Phases = append(o.Phases, "e2e", "create")
		} else if slices.Contains([]string{"e2e", "create", "reads", "memory", "fairness", "overload", "scaleout"}, p) {
			o.Phases = append(o.Phases, p)
		} else {
			return o, fmt.Errorf("-phases: unknown phase %q", p)
		}
	}
	for _, s := range list(shapes) {
		if s != "dev" && s != "production" {
			return o, fmt.Errorf("-shapes: unknown shape %q", s)
		}
		o.Shapes = append(o.Shapes, s)
	}
	for _, r := range list(rates) {
		n, err := strconv.Atoi(r)
		if err != nil || n < 1 {
			return o, fmt.Errorf("-rates: %q is not a positive integer", r)
		}
		o.Rates = append(o.Rates, n)
	}
	if min(o.Duration, o.SustainedFor, o.OverloadFor, o.ScaleoutWindow) < time.Second || o.MaxWorkers < 0 ||
		min(o.Sustained, o.SerialJobs, o.MemoryJobs, o.CreateRuns, o.Jobs, o.FairnessJobs, o.FairnessBJobs, o.FairnessRuns, o.OverloadBacklog, o.ScaleoutJobs) < 1 {
		return o, errors.New("durations must be at least 1s, counts at least 1 (-max-workers at least 0)")
	}
	o.ScaleoutConfigs, err = parseScaleoutConfigs(list(scaleout))
	return o, err
}

func (o options) has(shape, phase string) bool {
	return slices.Contains(o.Shapes, shape) && slices.Contains(o.Phases, phase)
}
