package main

import (
	"context"
	"fmt"
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

	// Sample RSS every 100 ms until the end of the phase.
	var peakSampled atomic.Int64
	stopSampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if m, err := readMemory(g.pid()); err == nil && m.RSS > peakSampled.Load() {
				peakSampled.Store(m.RSS)
			}
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	}()
	defer func() { close(stopSampling); sampler.Wait() }()

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
	rep.add(row{Section: "memory", Key: "memory/create", System: "gateway",
		Measure: fmt.Sprintf("create %d slow jobs (16 clients)", n), Rate: float64(len(lats)) / submitted.Seconds(),
		Latency: summarise(lats, errs), ErrorSamples: firstErrs})

	// Wait until every job is processing (at most the sandbox latency, after
	// which the first ones finish).
	inFlight, atInFlight := 0, memory{}
	deadline := submitStart.Add(b.opts.MemoryDelay)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var list jobList
		if err := getJSON(ctx, b.hc, g.url("/v1/jobs?filter[status]=processing&page[size]=1"), token, &list); err != nil {
			return err
		}
		if list.Meta.Total >= inFlight {
			inFlight = list.Meta.Total
			if m, err := readMemory(g.pid()); err == nil {
				atInFlight = m
			}
		}
		if inFlight >= len(lats) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	b.logf("memory: %d jobs processing at once, %s after the first was submitted", inFlight, time.Since(submitStart).Round(time.Second))
	// Let them run a little: heartbeats and progress updates of every job.
	select {
	case <-ctx.Done():
	case <-time.After(min(5*time.Second, time.Until(deadline))):
	}
	if b.opts.ProfileDir != "" {
		for kind, name := range map[string]string{"heap": "heap-in-flight.pprof", "heap?debug=1": "heap-in-flight.txt",
			"goroutine?debug=1": "goroutines-in-flight.txt"} {
			if err := fetchProfile(g.pprof, kind, 0, b.opts.ProfileDir, name); err != nil {
				b.logf("profile %s: %v", name, err)
			}
		}
	}
	final, err := readMemory(g.pid())
	if err != nil {
		return err
	}
	rep.Memory = &memoryResult{
		Jobs: n, Processing: inFlight, SandboxLatencyMS: b.opts.MemoryDelay.Milliseconds(), Store: storeKind,
		IdleRSS: idle.RSS, InFlight: atInFlight, PeakSampledRSS: peakSampled.Load(), PeakRSS: final.Peak,
	}
	var problems []string
	if inFlight < n {
		problems = append(problems, fmt.Sprintf("only %d of %d jobs were processing at once; raise -memory-latency", inFlight, n))
	}
	rep.add(row{Section: "memory", Key: "memory/peak", System: "gateway",
		Measure: fmt.Sprintf("peak RSS (VmHWM), %d jobs in flight", inFlight),
		Value:   mib(final.Peak), Bytes: final.Peak, Latency: stats{N: n, Errors: len(problems)}, ErrorSamples: problems})
	rep.addInfo("memory", "RSS when idle after start", "gateway", mib(idle.RSS))
	rep.addInfo("memory", fmt.Sprintf("RSS with %d jobs processing (anonymous + file-backed)", inFlight), "gateway",
		fmt.Sprintf("%s = %s + %s", mib(atInFlight.RSS), mib(atInFlight.Anon), mib(atInFlight.File)))
	return nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
