package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// memoryPhase starts a fresh gateway whose only provider takes
// MemoryDelay per job, submits MemoryJobs jobs, and reads the process's
// resident memory once they are all processing. VmHWM is the peak over the
// process's whole life, start-up included. The jobs are not waited for:
// the process is stopped.
func (b *bench) memoryPhase(ctx context.Context, rep *report) error {
	dbURL, storeKind, err := b.storeURL(ctx, "memory")
	if err != nil {
		return err
	}
	b.logf("memory: starting gateway dev (store %s, sandbox latency %s)", storeKind, b.opts.MemoryDelay)
	g, err := startGateway(ctx, b.bin, b.work, gatewaySpec{name: "memory", databaseURL: dbURL,
		catalog: catalog("bench-slow", b.opts.MemoryDelay), pprof: b.opts.ProfileDir != ""})
	if err != nil {
		return err
	}
	defer g.kill()
	idle, err := readMemory(g.pid())
	if err != nil {
		return err
	}
	token, err := g.token("bench", benchScopes)
	if err != nil {
		return err
	}
	gw := &gatewaySystem{base: g.url(""), token: token, hc: b.hc}
	m, err := b.holdInFlight(ctx, rep, gw, g.pprof, "", []int{g.pid()})
	if err != nil {
		return err
	}
	inFlight, atInFlight, final := m.processing, m.at[0], m.final[0]
	n := b.opts.MemoryJobs
	rep.Memory = &memoryResult{
		Jobs: n, Processing: inFlight, SandboxLatencyMS: b.opts.MemoryDelay.Milliseconds(), Store: storeKind,
		IdleRSS: idle.RSS, InFlight: atInFlight, PeakSampledRSS: m.peakSampled[0], PeakRSS: final.Peak,
	}
	rep.add(row{Section: "memory", Key: "memory/peak", System: "gateway",
		Measure: fmt.Sprintf("peak RSS (VmHWM), %d jobs in flight", inFlight),
		Value:   mib(final.Peak), Bytes: final.Peak, Latency: stats{N: n, Errors: len(m.problems)}, ErrorSamples: m.problems})
	rep.addInfo("memory", "RSS when idle after start", "gateway", mib(idle.RSS))
	rep.addInfo("memory", fmt.Sprintf("RSS with %d jobs processing (anonymous + file-backed)", inFlight), "gateway",
		fmt.Sprintf("%s = %s + %s", mib(atInFlight.RSS), mib(atInFlight.Anon), mib(atInFlight.File)))
	return nil
}

// productionMemoryPhase is the memory phase on the production shape:
// Temporal on PostgreSQL in its own process, `gateway serve` and one
// `gateway worker` built as deploy/Dockerfile builds them (-tags nodev),
// MemoryJobs jobs of MemoryDelay in flight; it reports the peak RSS of
// serve and of the worker.
func (b *bench) productionMemoryPhase(ctx context.Context, rep *report) error {
	bin, err := b.productionBinary(ctx)
	if err != nil {
		return err
	}
	b.logf("memory: starting the production shape (sandbox latency %s, serve and worker built -tags nodev)", b.opts.MemoryDelay)
	p, err := b.startProductionWith(ctx, "production-memory", 1, catalog("bench-slow", b.opts.MemoryDelay), bin)
	if err != nil {
		return err
	}
	defer p.close()
	procs := []*process{p.api, p.workers[0]}
	names := []string{"serve", "worker"}
	var idle []memory
	for _, x := range procs {
		m, err := readMemory(x.pid())
		if err != nil {
			return err
		}
		idle = append(idle, m)
	}
	token, err := p.idp.token("bench", benchScopes)
	if err != nil {
		return err
	}
	gw := &gatewaySystem{base: p.api.url(""), token: token, hc: b.hc}
	m, err := b.holdInFlight(ctx, rep, gw, "", "production-", []int{p.api.pid(), p.workers[0].pid()})
	if err != nil {
		return err
	}
	res := &productionMemoryResult{Jobs: b.opts.MemoryJobs, Processing: m.processing,
		SandboxLatencyMS: b.opts.MemoryDelay.Milliseconds(), Processes: map[string]processMemory{}}
	for i, name := range names {
		res.Processes[name] = processMemory{IdleRSS: idle[i].RSS, InFlight: m.at[i], PeakSampledRSS: m.peakSampled[i], PeakRSS: m.final[i].Peak}
		rep.add(row{Section: "memory", Key: "memory/peak-" + name, System: "gateway",
			Measure: fmt.Sprintf("%s: peak RSS (VmHWM), %d jobs in flight", name, m.processing),
			Value:   mib(m.final[i].Peak), Bytes: m.final[i].Peak, Latency: stats{N: b.opts.MemoryJobs, Errors: len(m.problems)}, ErrorSamples: m.problems})
		rep.addInfo("memory", name+": RSS when idle after start", "gateway", mib(idle[i].RSS))
		rep.addInfo("memory", fmt.Sprintf("%s: RSS with %d jobs processing (anonymous + file-backed)", name, m.processing), "gateway",
			fmt.Sprintf("%s = %s + %s", mib(m.at[i].RSS), mib(m.at[i].Anon), mib(m.at[i].File)))
	}
	rep.ProductionMemory = res
	return nil
}

// productionBinary builds the gateway as deploy/Dockerfile does (-tags
// nodev: without the embedded Temporal server), once.
func (b *bench) productionBinary(ctx context.Context) (string, error) {
	bin := filepath.Join(b.work, "gateway-nodev")
	if b.nodevBin != "" {
		return b.nodevBin, nil
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "nodev", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/gateway")
	cmd.Dir = b.src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -tags nodev ./cmd/gateway: %w\n%s", err, out)
	}
	b.logf("built the production gateway (-tags nodev) in %s", time.Since(start).Round(100*time.Millisecond))
	b.nodevBin = bin
	return bin, nil
}

// inFlightMemory is what holdInFlight read of each process.
type inFlightMemory struct {
	processing  int
	at          []memory // when the most jobs were processing
	final       []memory // at the end, VmHWM the peak
	peakSampled []int64
	problems    []string
}

// holdInFlight submits MemoryJobs slow jobs through gw (16 clients),
// samples the RSS of pids every 100 ms, waits until every job is
// processing (at most the sandbox latency, after which the first ones
// finish), lets them run 5 s more, saves heap profiles when pprof is a
// listener's address, and reads each process's memory.
func (b *bench) holdInFlight(ctx context.Context, rep *report, gw *gatewaySystem, pprof, keyPrefix string, pids []int) (inFlightMemory, error) {
	res := inFlightMemory{at: make([]memory, len(pids)), final: make([]memory, len(pids)), peakSampled: make([]int64, len(pids))}
	peaks := make([]atomic.Int64, len(pids))
	stopSampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			for i, pid := range pids {
				if m, err := readMemory(pid); err == nil && m.RSS > peaks[i].Load() {
					peaks[i].Store(m.RSS)
				}
			}
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	})
	defer func() {
		close(stopSampling)
		sampler.Wait()
		for i := range peaks {
			res.peakSampled[i] = peaks[i].Load()
		}
	}()

	n := b.opts.MemoryJobs
	b.logf("memory: submitting %d jobs", n)
	submitStart := time.Now()
	samples := make([]sample, n)
	forEach(samples, 16, func(i int, _ sample) {
		due := time.Now()
		id, err := gw.submit(ctx)
		samples[i] = sample{due: due, lat: time.Since(due), id: id, err: err}
	})
	submitted := time.Since(submitStart)
	lats, errs, firstErrs := split(samples)
	rep.add(row{Section: "memory", Key: keyPrefix + "memory/create", System: "gateway",
		Measure: fmt.Sprintf("create %d slow jobs (16 clients)", n), Rate: float64(len(lats)) / submitted.Seconds(),
		Latency: summarise(lats, errs), ErrorSamples: firstErrs})

	deadline := submitStart.Add(b.opts.MemoryDelay)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var list jobList
		if err := getJSON(ctx, b.hc, gw.base+"/v1/jobs?filter[status]=processing&page[size]=1", gw.token, &list); err != nil {
			return res, err
		}
		if list.Meta.Total >= res.processing {
			res.processing = list.Meta.Total
			for i, pid := range pids {
				if m, err := readMemory(pid); err == nil {
					res.at[i] = m
				}
			}
		}
		if res.processing >= len(lats) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	b.logf("memory: %d jobs processing at once, %s after the first was submitted", res.processing, time.Since(submitStart).Round(time.Second))
	// Let them run a little: heartbeats and progress updates of every job.
	select {
	case <-ctx.Done():
	case <-time.After(min(5*time.Second, time.Until(deadline))):
	}
	if pprof != "" && b.opts.ProfileDir != "" {
		for kind, name := range map[string]string{"heap": "heap-in-flight.pprof", "heap?debug=1": "heap-in-flight.txt",
			"goroutine?debug=1": "goroutines-in-flight.txt"} {
			if err := fetchProfile(pprof, kind, 0, b.opts.ProfileDir, name); err != nil {
				b.logf("profile %s: %v", name, err)
			}
		}
	}
	for i, pid := range pids {
		m, err := readMemory(pid)
		if err != nil {
			return res, err
		}
		res.final[i] = m
	}
	if res.processing < n {
		res.problems = append(res.problems, fmt.Sprintf("only %d of %d jobs were processing at once; raise -memory-latency", res.processing, n))
	}
	return res, nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
