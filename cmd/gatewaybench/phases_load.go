package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// e2ePhases runs the end-to-end phases on one `gateway dev` (zero-latency
// sandbox): the gateway, the floor and the baseline on the same embedded
// Temporal.
func (b *bench) e2ePhases(ctx context.Context, rep *report) error {
	l, err := b.startLoadRun(ctx, rep, "load")
	if err != nil {
		return err
	}
	defer l.close()
	rep.Store = l.store
	return l.endToEnd(ctx)
}

// productionPhases runs the end-to-end and create phases on the
// production shape: end to end with one gateway worker, the sustained
// phase again with two, then the create phases.
func (b *bench) productionPhases(ctx context.Context, rep *report) error {
	rep.shape = "production"
	defer func() { rep.shape = "dev" }()
	if b.opts.has("e2e") {
		l, err := b.startProductionRun(ctx, rep, "production-load", 1)
		if err != nil {
			return err
		}
		defer l.close()
		if err := l.endToEnd(ctx); err != nil {
			return err
		}
		if err := l.prod.addWorker(ctx, b.bin); err != nil {
			return err
		}
		l.setProcs()
		l.sustained(ctx, []system{l.gw}, "2 gateway workers")
		l.close()
	}
	if b.opts.has("create") {
		if err := b.createPhases(ctx, rep); err != nil {
			return err
		}
	}
	if b.opts.has("memory") {
		return b.productionMemoryPhase(ctx, rep)
	}
	return nil
}

// endToEnd runs the end-to-end phases on a load run: preflight, warm-up,
// one at a time, sustained, and at half the baseline's sustained rate.
func (l *loadRun) endToEnd(ctx context.Context) error {
	b, rep := l.b, l.rep
	systems := l.systems()
	d := b.opts.Duration

	b.logf("load: preflight, one job through the typed client")
	if err := l.gw.preflight(ctx); err != nil {
		return err
	}
	b.logf("load: warm-up")
	for _, sys := range systems {
		samples := openLoop(ctx, 10, 3*time.Second, sys.submit)
		if _, err := l.drain(ctx, sys, samples); err != nil {
			return fmt.Errorf("warm-up of %s: %w", sys.name(), err)
		}
	}
	b.logf("load: one at a time (%d jobs each, in turns)", b.opts.SerialJobs)
	l.serial(ctx, systems)
	b.logf("load: gateway one at a time, polling GET every %s", b.opts.PollInterval)
	l.serialPolling(ctx, l.gw)
	l.sustained(ctx, systems, "")
	rate := b.opts.E2ERate
	if rate == 0 {
		rate = 1
		for _, x := range rep.Rows {
			if x.Key == "e2e/sustained" && x.System == "baseline" && x.Shape == rep.shape {
				rate = max(1, int(x.Rate/2))
			}
		}
	}
	for _, sys := range systems {
		b.logf("load: %s at %d jobs/s for %s, submit→completed", sys.name(), rate, d)
		stop := l.profile(sys, fmt.Sprintf("e2e-%d", rate), d)
		err := l.e2eAt(ctx, sys, rate)
		stop()
		if err != nil {
			return err
		}
	}
	l.saveProfile("block-load", "block", 0)
	l.saveProfile("heap-load", "heap", 0)
	for _, sys := range systems {
		if id := l.lastID[sys.name()]; id != "" {
			cost, err := historyCost(ctx, l.obs, id)
			if err != nil {
				return err
			}
			rep.PerJob.Temporal[sys.name()] = cost
		}
	}
	if l.g == nil {
		return nil
	}
	if m, err := readMemory(l.g.pid()); err == nil {
		rep.addInfo("memory", "peak RSS over the end-to-end phases (informational)", "gateway", mib(m.Peak))
	}
	return nil
}

// createPhases runs the creation phases, each on a fresh deployment of
// the report's shape, so that no phase inherits another's backlog. The
// gateway's create at the target rate runs CreateRuns times.
func (b *bench) createPhases(ctx context.Context, rep *report) error {
	d := b.opts.Duration
	rates := slices.Clone(b.opts.Rates)
	if b.opts.MaxWorkers > 0 {
		rates = append(rates, 0) // 0: maximum
	}
	for _, rate := range rates {
		for _, name := range []string{"gateway", "floor", "baseline"} {
			runs := 1
			if rate == targetCreateRate && name == "gateway" {
				runs = b.opts.CreateRuns
			}
			var p99s []float64
			failed := 0
			for run := 1; run <= runs; run++ {
				phase := fmt.Sprintf("%s-create-%d-%s", rep.shape, rate, name)
				if rate == 0 {
					phase = rep.shape + "-create-max-" + name
				}
				if runs > 1 {
					phase += fmt.Sprintf("-run-%d", run)
				}
				var l *loadRun
				var err error
				if rep.shape == "production" {
					l, err = b.startProductionRun(ctx, rep, phase, 1)
				} else {
					l, err = b.startLoadRun(ctx, rep, phase)
				}
				if err != nil {
					return err
				}
				if rep.shape == "dev" {
					rep.Store = l.store
				}
				sys := l.system(name)
				// Unmeasured: the first requests set up connections and caches.
				for range 20 {
					if _, err := sys.submit(ctx); err != nil {
						l.close()
						return fmt.Errorf("%s warm-up: %w", phase, err)
					}
				}
				stop := l.profile(sys, strings.TrimSuffix(phase, "-"+name), d)
				if rate == 0 {
					b.logf("load: %s creates as fast as %d clients can for %s", name, b.opts.MaxWorkers, d)
					l.createMax(ctx, sys)
				} else {
					b.logf("load: %s creates at %d/s for %s (run %d of %d)", name, rate, d, run, runs)
					p99, errs := l.createAt(ctx, sys, rate, run, runs)
					p99s = append(p99s, p99)
					failed += errs
				}
				stop()
				l.close()
			}
			if runs > 1 {
				rep.add(row{Section: "create", Key: fmt.Sprintf("create/%d/runs", rate), System: name, RunsP99: p99s, RunsErrors: failed,
					Measure: fmt.Sprintf("create at %d/s offered, p99 of each of %d runs", rate, runs), Value: spread(p99s), info: true})
			}
		}
	}
	return nil
}

// spread is "min–max ms (a, b, c…)".
func spread(p99s []float64) string {
	if len(p99s) == 0 {
		return ""
	}
	parts := make([]string, len(p99s))
	for i, v := range p99s {
		parts[i] = fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("p99 %.1f–%.1f ms (%s)", slices.Min(p99s), slices.Max(p99s), strings.Join(parts, ", "))
}

// startLoadRun starts a gateway with the zero-latency sandbox, mints a
// token, and connects the floor and the baseline (starter and workers) and
// the observer to its embedded Temporal.
func (b *bench) startLoadRun(ctx context.Context, rep *report, name string) (_ *loadRun, err error) {
	dbURL, storeKind, err := b.storeURL(ctx, strings.ReplaceAll(name, "-", "_"))
	if err != nil {
		return nil, err
	}
	b.logf("%s: starting gateway dev (store %s)", name, storeKind)
	l := &loadRun{b: b, rep: rep, store: storeKind}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if l.g, err = startGateway(ctx, b.bin, b.work, gatewaySpec{name: name, databaseURL: dbURL,
		catalog: catalog("bench-zero", 0), pprof: b.opts.ProfileDir != ""}); err != nil {
		return nil, err
	}
	l.procs = []namedPID{{"gateway", l.g.pid()}}
	if dbURL == "" {
		dbURL = "sqlite:" + filepath.Join(l.g.dataDir, "gateway.db")
	}
	if err := l.connect(ctx, l.g, l.g, l.g.temporal, dbURL); err != nil {
		return nil, err
	}
	return l, nil
}

// startProductionRun deploys the production shape with workers gateway
// workers, mints a token, and connects the floor and the baseline and the
// observer to its Temporal server; env adds settings of serve and the
// workers.
func (b *bench) startProductionRun(ctx context.Context, rep *report, name string, workers int, env ...string) (_ *loadRun, err error) {
	b.logf("%s: starting the production shape (%d worker(s))", name, workers)
	l := &loadRun{b: b, rep: rep, store: "postgres"}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if l.prod, err = b.startProduction(ctx, name, workers, env...); err != nil {
		return nil, err
	}
	l.setProcs()
	if err := l.connect(ctx, l.prod.idp, l.prod.api, l.prod.frontend, l.prod.storeURL); err != nil {
		return nil, err
	}
	return l, nil
}

// setProcs names the production shape's processes for the CPU figures.
func (l *loadRun) setProcs() {
	l.procs = []namedPID{{"temporal", l.prod.temporal.pid()}, {"serve", l.prod.api.pid()}}
	for i, w := range l.prod.workers {
		l.procs = append(l.procs, namedPID{fmt.Sprintf("worker-%d", i+1), w.pid()})
	}
}

// connect mints a token with the issuer's data dir, points the gateway
// system at api (its store at databaseURL) and starts the floor and the
// baseline on temporal.
func (l *loadRun) connect(ctx context.Context, issuer, api *process, temporal, databaseURL string) (err error) {
	token, err := issuer.token("bench", benchScopes)
	if err != nil {
		return err
	}
	results, starts, closeResults, err := jobResults(ctx, databaseURL)
	if err != nil {
		return err
	}
	l.closeResults = closeResults
	l.gw = &gatewaySystem{base: api.url(""), token: token, hc: l.b.hc, results: results, starts: starts}
	if l.starter, err = dial(ctx, temporal); err != nil {
		return err
	}
	if l.obs, err = dial(ctx, temporal); err != nil {
		return err
	}
	if l.floor, err = newFloor(l.starter); err != nil {
		return err
	}
	if l.baseline, err = newBaseline(l.starter); err != nil {
		return err
	}
	return nil
}

// loadRun is one gateway process and the clients of its Temporal.
type loadRun struct {
	b        *bench
	rep      *report
	store    string
	g        *process         // the dev shape's one process
	prod     *productionShape // the production shape's processes
	procs    []namedPID       // whose CPU the figures count
	gw       *gatewaySystem
	starter  client.Client
	obs      client.Client
	floor    *taskQueueSystem
	baseline *taskQueueSystem
	mu       sync.Mutex
	lastID   map[string]string
	profiles int
	// closeResults closes the store gw's results read secrets from.
	closeResults func()
}

// close stops the floor's and the baseline's workers, the clients and the gateway; it may be
// called more than once.
func (l *loadRun) close() {
	for _, s := range []**taskQueueSystem{&l.floor, &l.baseline} {
		if *s != nil {
			(*s).w.Stop()
			*s = nil
		}
	}
	for _, c := range []*client.Client{&l.starter, &l.obs} {
		if *c != nil {
			(*c).Close()
			*c = nil
		}
	}
	if l.closeResults != nil {
		l.closeResults()
		l.closeResults = nil
	}
	if l.g != nil {
		l.g.kill()
		l.g = nil
	}
	if l.prod != nil {
		l.prod.close()
		l.prod = nil
	}
}

// closed is a job's submission and completion.
type closed struct {
	due, at time.Time
	err     error
}

// drain waits until the workflows of the successful samples have closed
// and returns their close times.
func (l *loadRun) drain(ctx context.Context, sys system, samples []sample) ([]closed, error) {
	ctx, cancel := context.WithTimeout(ctx, l.b.opts.DrainTimeout)
	defer cancel()
	out := make([]closed, len(samples))
	forEach(samples, 64, func(i int, s sample) {
		if s.err != nil {
			out[i] = closed{due: s.due, err: s.err}
			return
		}
		at, err := awaitClose(ctx, l.obs, sys, s.id)
		out[i] = closed{due: s.due, at: at, err: err}
	})
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return out, fmt.Errorf("jobs still running after the drain timeout (%s)", l.b.opts.DrainTimeout)
	}
	for i := len(samples) - 1; i >= 0; i-- {
		if samples[i].err == nil {
			l.remember(sys, samples[i].id)
			break
		}
	}
	return out, nil
}

func (l *loadRun) remember(sys system, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lastID == nil {
		l.lastID = map[string]string{}
	}
	l.lastID[sys.name()] = id
}

// serial submits jobs one at a time, each after the previous completed;
// latency runs from the submission to the close event of the workflow.
// The systems take turns in the order gateway, floor, baseline,
// baseline, floor, gateway, so that a change in the machine's background
// load weighs on all alike.
func (l *loadRun) serial(ctx context.Context, systems []system) {
	accs := map[string]*accumulator{}
	inTurns(systems, func(sys system) {
		a := accs[sys.name()]
		if a == nil {
			a = &accumulator{}
			accs[sys.name()] = a
		}
		cpu := readCPU(l.procs)
		jobs := 0
		for range max(1, l.b.opts.SerialJobs/2) {
			due := time.Now()
			id, err := sys.submit(ctx)
			var at time.Time
			if err == nil {
				at, err = awaitClose(ctx, l.obs, sys, id)
				l.remember(sys, id)
			}
			if err != nil {
				a.fail(err.Error())
				continue
			}
			a.lats = append(a.lats, at.Sub(due))
			a.traces = append(a.traces, traced{id: id, due: due, lat: at.Sub(due)})
			jobs++
		}
		a.cpu = a.cpu.merge(cpu.since(0, l.procs), jobs)
	})
	for _, sys := range systems {
		a := accs[sys.name()]
		l.rep.add(row{Section: "end to end", Key: "e2e/serial", Measure: "submit→completed, one at a time", System: sys.name(),
			Latency: summarise(a.lats, a.errCount), ErrorSamples: a.errs, CPU: a.cpu})
		l.breakDown(ctx, "one at a time", sys, a.traces, false)
	}
}

// breakDown adds where the time of (up to 50 of) the jobs went to the
// report; slowest picks the 10 slowest.
func (l *loadRun) breakDown(ctx context.Context, phase string, sys system, traces []traced, slowest bool) {
	n := 50
	if slowest {
		n, phase = 10, phase+", slowest 10"
	}
	b, err := breakDown(ctx, l.obs, phase, sys.name(), traces, n, slowest)
	if err != nil {
		l.b.logf("breakdown of %s (%s): %v", phase, sys.name(), err)
		return
	}
	l.rep.Breakdowns = append(l.rep.Breakdowns, *b)
}

// accumulator gathers a system's results over its turns.
type accumulator struct {
	lats      []time.Duration
	traces    []traced
	errCount  int
	errs      []string // the first three
	cpu       *cpuUse
	completed int
	seconds   float64
}

func (a *accumulator) fail(msg ...string) {
	a.errCount += len(msg)
	a.errs = firstN(append(a.errs, msg...), 3)
}

// inTurns runs fn for each system in order, then in reverse order (a, b,
// c, c, b, a).
func inTurns(systems []system, fn func(system)) {
	for _, sys := range systems {
		fn(sys)
	}
	for _, sys := range slices.Backward(systems) {
		fn(sys)
	}
}

// systems are the three systems, in the order they take turns.
func (l *loadRun) systems() []system { return []system{l.gw, l.floor, l.baseline} }

// system is the system of that name.
func (l *loadRun) system(name string) system {
	for _, s := range l.systems() {
		if s.name() == name {
			return s
		}
	}
	panic("gatewaybench: no system " + name)
}

// serialPolling is serial as a client sees it: POST, then GET every
// PollInterval until the job reads completed.
func (l *loadRun) serialPolling(ctx context.Context, gw *gatewaySystem) {
	n := max(10, l.b.opts.SerialJobs/3)
	var lats []time.Duration
	var errs []string
	for range n {
		due := time.Now()
		id, err := gw.submit(ctx)
		for err == nil {
			var doc struct {
				Data struct {
					Attributes struct {
						Status string `json:"status"`
					} `json:"attributes"`
				} `json:"data"`
			}
			if err = getJSON(ctx, gw.hc, gw.base+"/v1/llm-tasks/"+id, gw.token, &doc); err != nil {
				break
			}
			if s := doc.Data.Attributes.Status; s == "completed" {
				break
			} else if s == "failed" {
				err = fmt.Errorf("job %s failed", id)
				break
			}
			if time.Since(due) > time.Minute {
				err = fmt.Errorf("job %s not completed after a minute", id)
				break
			}
			time.Sleep(l.b.opts.PollInterval)
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		lats = append(lats, time.Since(due))
	}
	l.rep.add(row{Section: "end to end", Key: "e2e/serial-get", System: "gateway",
		Measure: fmt.Sprintf("submit→completed, one at a time, seen by GET every %s", l.b.opts.PollInterval),
		Latency: summarise(lats, len(errs)), ErrorSamples: firstN(errs, 3)})
}

// createAt offers rate creates per second for the phase's duration and
// records their latency, as run run of runs; it returns the p99 and the
// number of failed requests. The jobs
// are left running: the processes are thrown away after the phase.
func (l *loadRun) createAt(ctx context.Context, sys system, rate, run, runs int) (p99 float64, errs int) {
	d := l.b.opts.Duration
	cpu := readCPU(l.procs)
	samples := openLoop(ctx, rate, d, sys.submit)
	lats, errs, firstErrs := split(samples)
	measure := fmt.Sprintf("create at %d/s offered", rate)
	if runs > 1 {
		measure += fmt.Sprintf(", run %d of %d", run, runs)
	}
	lat := summarise(lats, errs)
	l.rep.add(row{Section: "create", Key: fmt.Sprintf("create/%d", rate), System: sys.name(),
		Measure: measure, Offered: float64(rate),
		Rate: float64(len(lats)) / d.Seconds(), Latency: lat, ErrorSamples: firstErrs,
		CPU: cpu.since(len(lats), l.procs)})
	return lat.P99, errs
}

// createMax creates with MaxWorkers clients back to back.
func (l *loadRun) createMax(ctx context.Context, sys system) {
	cpu := readCPU(l.procs)
	samples, _ := closedLoop(ctx, l.b.opts.MaxWorkers, l.b.opts.Duration, sys.submit)
	lats, errs, firstErrs := split(samples)
	l.rep.add(row{Section: "create", Key: "create/max", System: sys.name(),
		Measure: fmt.Sprintf("create, maximum (%d clients)", l.b.opts.MaxWorkers),
		Rate:    float64(len(lats)) / l.b.opts.Duration.Seconds(), Latency: summarise(lats, errs), ErrorSamples: firstErrs,
		CPU: cpu.since(len(lats), l.procs)})
}

// e2eAt offers rate jobs per second for the phase's duration, waits for
// all of them, and records submit→completed latency from the workflows'
// close events.
func (l *loadRun) e2eAt(ctx context.Context, sys system, rate int) error {
	d := l.b.opts.Duration
	start := time.Now()
	cpu := readCPU(l.procs)
	samples := openLoop(ctx, rate, d, sys.submit)
	done, err := l.drain(ctx, sys, samples)
	if err != nil {
		return fmt.Errorf("%s at %d/s: %w", sys.name(), rate, err)
	}
	var e2e []time.Duration
	var errs []string
	var last time.Time
	var traces []traced
	for i, c := range done {
		if c.err != nil {
			errs = append(errs, c.err.Error())
			continue
		}
		e2e = append(e2e, c.at.Sub(c.due))
		traces = append(traces, traced{id: samples[i].id, due: c.due, lat: c.at.Sub(c.due)})
		if c.at.After(last) {
			last = c.at
		}
	}
	completedRate := 0.0
	if span := last.Sub(start).Seconds(); span > 0 {
		completedRate = float64(len(e2e)) / span
	}
	l.rep.add(row{Section: "end to end", Key: "e2e/rate", System: sys.name(),
		Measure: fmt.Sprintf("submit→completed at %d/s offered", rate), Offered: float64(rate),
		Rate: completedRate, Latency: summarise(e2e, len(errs)), ErrorSamples: firstN(errs, 3),
		CPU: cpu.since(len(e2e), l.procs)})
	l.breakDown(ctx, fmt.Sprintf("%d/s offered", rate), sys, traces, false)
	return nil
}

// sustained keeps Sustained jobs in flight: each client submits, waits for
// completion and submits again. Throughput counts the jobs completed once
// the loop is running (steadyCount). The systems take turns as in serial,
// each turn half the phase's duration. A variant ("2 gateway workers")
// names a second measurement of the same phase.
func (l *loadRun) sustained(ctx context.Context, systems []system, variant string) {
	d := l.b.opts.SustainedFor / 2
	accs := map[string]*accumulator{}
	inTurns(systems, func(sys system) {
		l.b.logf("load: %s keeps %d jobs in flight for %s %s", sys.name(), l.b.opts.Sustained, d, variant)
		a := accs[sys.name()]
		if a == nil {
			a = &accumulator{}
			accs[sys.name()] = a
		}
		stop := l.profile(sys, "e2e-sustained", d)
		start := time.Now()
		cpu := readCPU(l.procs)
		samples, _ := closedLoop(ctx, l.b.opts.Sustained, d, func(ctx context.Context) (string, error) {
			id, err := sys.submit(ctx)
			if err != nil {
				return "", err
			}
			_, err = awaitClose(ctx, l.obs, sys, id)
			return id, err
		})
		stop()
		lats, errs, firstErrs := split(samples)
		a.cpu = a.cpu.merge(cpu.since(0, l.procs), len(lats))
		a.lats = append(a.lats, lats...)
		a.fail(firstErrs...)
		a.errCount += errs - len(firstErrs)
		for _, x := range samples {
			if x.err == nil {
				a.traces = append(a.traces, traced{id: x.id, due: x.due, lat: x.lat})
			}
		}
		done, secs := steadyCount(samples, start.Add(d))
		a.completed += done
		a.seconds += secs
	})
	for _, sys := range systems {
		a := accs[sys.name()]
		rate := 0.0
		if a.seconds > 0 {
			rate = float64(a.completed) / a.seconds
		}
		key, measure := "e2e/sustained", fmt.Sprintf("jobs completed per second, %d in flight", l.b.opts.Sustained)
		if variant != "" {
			key, measure = key+"/"+strings.ReplaceAll(variant, " ", "-"), measure+", "+variant
		}
		l.rep.add(row{Section: "end to end", Key: key, System: sys.name(),
			Measure: measure, Rate: rate, Latency: summarise(a.lats, a.errCount), ErrorSamples: a.errs, CPU: a.cpu})
		l.breakDown(ctx, strings.TrimSuffix(fmt.Sprintf("%d in flight, %s", l.b.opts.Sustained, variant), ", "), sys, a.traces, false)
		l.breakDown(ctx, strings.TrimSuffix(fmt.Sprintf("%d in flight, %s", l.b.opts.Sustained, variant), ", "), sys, a.traces, true)
	}
}

// steadyCount is what a closed loop completed once it was running: the
// completions after the first one and until the deadline, and that time
// (the first completion marks the end of the ramp-up, when every client
// has a job in flight). With fewer than 20 such completions it is all
// completions and the whole time to the last one.
func steadyCount(samples []sample, deadline time.Time) (int, float64) {
	var ends []time.Time
	first, last := deadline, time.Time{}
	for _, s := range samples {
		if s.err != nil {
			continue
		}
		end := s.due.Add(s.lat)
		ends = append(ends, end)
		if end.Before(first) {
			first = end
		}
		if end.After(last) {
			last = end
		}
	}
	within := 0
	for _, end := range ends {
		if end.After(first) && !end.After(deadline) {
			within++
		}
	}
	if span := deadline.Sub(first).Seconds(); within >= 20 && span > 0 {
		return within, span
	}
	if len(ends) == 0 {
		return 0, 0
	}
	earliest := slices.MinFunc(samples, func(a, b sample) int { return a.due.Compare(b.due) }).due
	return len(ends), last.Sub(earliest).Seconds()
}

// historyCost counts what one workflow cost Temporal, from its history.
func historyCost(ctx context.Context, obs client.Client, id string) (temporalCost, error) {
	var c temporalCost
	iter := obs.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return c, err
		}
		c.Events++
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			c.WorkflowTasks++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			c.Activities++
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			c.LocalActivities++
		}
	}
	desc, err := obs.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return c, err
	}
	c.HistoryBytes = desc.GetWorkflowExecutionInfo().GetHistorySizeBytes()
	return c, nil
}

// profile collects CPU, block and mutex profiles of the gateway process
// (where the embedded Temporal server runs, so baseline phases show the
// server's cost) while a phase runs; the returned func waits for them.
// The block and mutex profiles are deltas over the phase: where goroutines
// waited, which is what a latency tail is made of.
func (l *loadRun) profile(sys system, phase string, d time.Duration) func() {
	if l.g == nil || l.g.pprof == "" {
		return func() {}
	}
	seconds := max(1, int(d.Seconds())-1)
	l.profiles++
	var wg sync.WaitGroup
	for prefix, kind := range map[string]string{"cpu": "profile", "block": "block", "mutex": "mutex"} {
		name := fmt.Sprintf("%s-%s-%s-%d", prefix, phase, sys.name(), l.profiles)
		wg.Go(func() { l.saveProfile(name, kind, seconds) })
	}
	if strings.HasPrefix(phase, "create-") {
		name := fmt.Sprintf("trace-%s-%s-%d.out", phase, sys.name(), l.profiles)
		wg.Go(func() { l.saveProfile(name, "trace", min(seconds, 5)) })
	}
	return wg.Wait
}

// saveProfile fetches /debug/pprof/<kind> into the profile dir.
func (l *loadRun) saveProfile(name, kind string, seconds int) {
	if l.g == nil || l.g.pprof == "" {
		return
	}
	if err := fetchProfile(l.g.pprof, kind, seconds, l.b.opts.ProfileDir, name); err != nil {
		l.b.logf("profile %s: %v", name, err)
	}
}
