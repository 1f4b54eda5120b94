package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The scale-out phase (docs/benchmarks.md, Scale out): the production
// shape with sandbox providers of -scaleout-latency (200 ms: the work is
// waiting, not CPU), -scaleout-jobs jobs kept in flight, and jobs
// completed per second measured with each worker setup of
// -scaleout-configs in turn, on one deployment. With few slots a worker's
// slots bound its throughput (a 200 ms call holds its job's workflow task
// and a local activity slot), so that adding workers or slots shows.

// scaleoutConfig is one worker setup: how many `gateway worker`s, and
// their workflow task and local activity slots (0: the SDK's defaults).
type scaleoutConfig struct {
	Workers int `json:"workers"`
	Slots   int `json:"slots"`
	// Starts is each worker's --start-concurrency (0: its default).
	Starts int `json:"starts,omitempty"`
}

func (c scaleoutConfig) String() string {
	s := strconv.Itoa(c.Workers)
	if c.Slots > 0 {
		s += fmt.Sprintf("x%d", c.Slots)
	}
	if c.Starts > 0 {
		s += fmt.Sprintf("s%d", c.Starts)
	}
	return s
}

// label says it in words.
func (c scaleoutConfig) label() string {
	slots := "SDK default slots"
	if c.Slots > 0 {
		slots = fmt.Sprintf("%d slots", c.Slots)
	}
	if c.Starts > 0 {
		slots += fmt.Sprintf(", %d starts at once", c.Starts)
	}
	return fmt.Sprintf("%d worker(s), %s", c.Workers, slots)
}

// args are a worker's flags for the setup.
func (c scaleoutConfig) args() []string {
	args := []string{"--worker-stop-timeout", "5s"}
	if c.Slots > 0 {
		n := strconv.Itoa(c.Slots)
		args = append(args, "--max-concurrent-workflow-tasks", n, "--max-concurrent-local-activities", n)
	}
	if c.Starts > 0 {
		args = append(args, "--start-concurrency", strconv.Itoa(c.Starts))
	}
	return args
}

// parseScaleoutConfigs reads -scaleout-configs: comma-separated
// <workers>[x<slots>][s<starts>], such as 1x8,2x8,1,1x16s32.
func parseScaleoutConfigs(s string) ([]scaleoutConfig, error) {
	var out []scaleoutConfig
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		rest, starts, hasStarts := strings.Cut(part, "s")
		w, slots, hasSlots := strings.Cut(rest, "x")
		c := scaleoutConfig{}
		var err error
		if hasStarts {
			if c.Starts, err = strconv.Atoi(starts); err != nil || c.Starts < 1 {
				return nil, fmt.Errorf("-scaleout-configs: %q: starts must be a whole number of at least 1", part)
			}
		}
		if c.Workers, err = strconv.Atoi(w); err != nil || c.Workers < 1 {
			return nil, fmt.Errorf("-scaleout-configs: %q: workers must be a whole number of at least 1", part)
		}
		if hasSlots {
			if c.Slots, err = strconv.Atoi(slots); err != nil || c.Slots < 2 {
				return nil, fmt.Errorf("-scaleout-configs: %q: slots must be a whole number of at least 2", part)
			}
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("-scaleout-configs: name at least one setup, such as 1x8,2x8,1")
	}
	return out, nil
}

// scaleoutWarmup is how long a new setup runs before it is measured.
const scaleoutWarmup = 10 * time.Second

func (b *bench) scaleoutPhase(ctx context.Context, rep *report) error {
	rep.shape = "production"
	defer func() { rep.shape = "dev" }()
	o := b.opts
	b.logf("scaleout: starting the production shape (sandbox latency %s)", o.ScaleoutLatency)
	p, err := b.startProductionWith(ctx, "scaleout", 0, catalog("bench-zero", o.ScaleoutLatency), b.bin)
	if err != nil {
		return err
	}
	defer p.close()
	token, err := p.idp.token("bench", benchScopes)
	if err != nil {
		return err
	}
	db, err := sql.Open("pgx", p.storeURL)
	if err != nil {
		return err
	}
	defer db.Close()
	gw := &gatewaySystem{base: p.api.url(""), token: token, hc: b.hc}

	f := &feeder{gw: gw, db: db, target: o.ScaleoutJobs}
	feedCtx, stopFeeding := context.WithCancel(ctx)
	var feeding sync.WaitGroup
	var prev scaleoutConfig
	for i, c := range o.ScaleoutConfigs {
		if i > 0 && c.Slots == prev.Slots && c.Starts == prev.Starts && c.Workers > prev.Workers {
			for range c.Workers - prev.Workers {
				if err := p.addWorker(ctx, b.bin, c.args()...); err != nil {
					stopFeeding()
					return err
				}
			}
		} else {
			for range c.Workers {
				if err := p.addWorker(ctx, b.bin, c.args()...); err != nil {
					stopFeeding()
					return err
				}
			}
			p.stopWorkers(c.Workers)
		}
		prev = c
		if i == 0 {
			b.logf("scaleout: keeping %d jobs in flight", o.ScaleoutJobs)
			feeding.Go(func() { f.run(feedCtx) })
		}
		b.logf("scaleout: %s, warm-up %s, then measured for %s", c.label(), scaleoutWarmup, o.ScaleoutWindow)
		if err := b.measureScaleout(ctx, rep, p, f, c); err != nil {
			stopFeeding()
			feeding.Wait()
			return err
		}
	}
	stopFeeding()
	feeding.Wait()
	// Which path the calls took: one job's history (a short call is a
	// local activity's marker in the job's one workflow task).
	if id, _ := f.firstID.Load().(string); id != "" {
		if obs, err := dial(ctx, p.frontend); err == nil {
			cost, err := historyCost(ctx, obs, id)
			obs.Close()
			if err == nil {
				rep.PerJob.Temporal["gateway (scale out)"] = cost
			}
		}
	}
	if n := f.errors.Load(); n > 0 {
		rep.add(row{Section: "scale out", Key: "scaleout/creates", System: "gateway", Measure: "creates of the scale-out phase",
			Latency: stats{N: int(f.submitted.Load()), Errors: int(n)}, ErrorSamples: f.firstErrors()})
	}
	return nil
}

// measureScaleout measures one setup: jobs completed per second over the
// window after the warm-up, CPU by process, and the outbox's reads.
func (b *bench) measureScaleout(ctx context.Context, rep *report, p *productionShape, f *feeder, c scaleoutConfig) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(scaleoutWarmup):
	}
	f.setups++
	procs := []namedPID{{"temporal", p.temporal.pid()}, {"serve", p.api.pid()}}
	for i, w := range p.workers {
		procs = append(procs, namedPID{fmt.Sprintf("worker-%d", i+1), w.pid()})
	}
	before, err := countJobs(ctx, f.db)
	if err != nil {
		return err
	}
	outbox0, err := tableStats(ctx, f.db)
	if err != nil {
		return err
	}
	cpu := readCPU(procs)
	window := b.opts.ScaleoutWindow
	var profiles sync.WaitGroup
	for i, w := range p.workers {
		if w.pprof != "" {
			name := fmt.Sprintf("cpu-scaleout-%d-%s-worker-%d", f.setups, c, i+1)
			profiles.Go(func() {
				if err := fetchProfile(w.pprof, "profile", max(1, int(window.Seconds())-1), b.opts.ProfileDir, name); err != nil {
					b.logf("profile %s: %v", name, err)
				}
			})
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(window):
	}
	after, err := countJobs(ctx, f.db)
	if err != nil {
		return err
	}
	use := cpu.since(after.finished()-before.finished(), procs)
	outbox1, err := tableStats(ctx, f.db)
	if err != nil {
		return err
	}
	profiles.Wait()
	done := after.finished() - before.finished()
	failed := after.failed - before.failed
	rate := float64(done) / window.Seconds()
	key := "scaleout/" + c.String()
	rep.add(row{Section: "scale out", Key: key, System: "gateway",
		Measure: fmt.Sprintf("jobs completed per second, %d in flight, %s calls, %s", b.opts.ScaleoutJobs, b.opts.ScaleoutLatency, c.label()),
		Rate:    rate, Latency: stats{N: done, Errors: failed}, CPU: use})
	js0, js1 := outbox0["job_starts"], outbox1["job_starts"]
	if done > 0 {
		n := float64(done)
		rep.addInfo("scale out", "  outbox reads per job: job_starts scans (index + seq), rows leased or handed back", "gateway",
			fmt.Sprintf("%.2f scans, %.2f updates", float64(js1.IndexScans+js1.SeqScans-js0.IndexScans-js0.SeqScans)/n, float64(js1.Updated-js0.Updated)/n))
	}
	if use != nil {
		rep.addInfo("scale out", "  CPU cores used: by process; by other work on the machine", "gateway",
			fmt.Sprintf("%s; other %.2f", formatCores(use.Cores), use.OtherCores))
	}
	rep.addInfo("scale out", "  jobs at the end: pending, processing", "gateway",
		fmt.Sprintf("%d, %d", after.pending, after.processing))
	b.logf("scaleout: %s: %.1f jobs/s (%d failed), %d pending and %d processing at the end", c.label(), rate, failed, after.pending, after.processing)
	return nil
}

// jobCounts are the store's jobs by status, from job_counts.
type jobCounts struct {
	pending, processing, completed, failed int
}

func (c jobCounts) finished() int { return c.completed + c.failed }

func countJobs(ctx context.Context, db *sql.DB) (jobCounts, error) {
	var c jobCounts
	rows, err := db.QueryContext(ctx, "SELECT status, CAST(SUM(n) AS BIGINT) FROM job_counts GROUP BY status")
	if err != nil {
		return c, err
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return c, err
		}
		switch status {
		case "pending":
			c.pending = n
		case "processing":
			c.processing = n
		case "completed":
			c.completed = n
		case "failed":
			c.failed = n
		}
	}
	return c, rows.Err()
}

// feeder keeps target jobs in flight (accepted, not finished): it counts
// the finished ones in the store and creates as many new ones.
type feeder struct {
	gw        *gatewaySystem
	db        *sql.DB
	target    int
	setups    int // measured so far, for the profiles' names
	submitted atomic.Int64
	errors    atomic.Int64
	firstID   atomic.Value // the first job created, for its history
	mu        sync.Mutex
	errs      []string
}

// feedClients create the feeder's jobs: few, so that creating them takes
// little of what the jobs are measured on.
const feedClients = 8

func (f *feeder) run(ctx context.Context) {
	for ctx.Err() == nil {
		c, err := countJobs(ctx, f.db)
		if err != nil {
			f.fail(err)
			time.Sleep(time.Second)
			continue
		}
		need := f.target - (int(f.submitted.Load()) - c.finished())
		if need <= 0 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		forEach(make([]struct{}, need), feedClients, func(int, struct{}) {
			if ctx.Err() != nil {
				return
			}
			id, err := f.gw.submit(ctx)
			if err != nil {
				if ctx.Err() == nil {
					f.fail(err)
				}
				return
			}
			f.submitted.Add(1)
			f.firstID.CompareAndSwap(nil, id)
		})
	}
}

func (f *feeder) fail(err error) {
	f.errors.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.errs) < 3 {
		f.errs = append(f.errs, err.Error())
	}
}

func (f *feeder) firstErrors() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.errs...)
}
