package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"slices"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// bench is one benchmark run: the gateway binary, a work dir and the
// report being filled in.
type bench struct {
	opts          options
	log           io.Writer
	work          string
	bin           string
	src           string // the gateway's module, for building it and Temporal's tools
	hc            *http.Client
	temporalTools temporalTools // built by the first production-shape phase
	nodevBin      string        // the production build of the gateway, built by the first phase that needs it
	started       time.Time
	cleanups      []func()
}

func newBench(ctx context.Context, opts options, log io.Writer) (*bench, error) {
	if opts.ProfileDir != "" && opts.GatewayBin != "" {
		return nil, errors.New("-profile builds the gateway with a pprof listener; it cannot be combined with -gateway")
	}
	work, err := os.MkdirTemp("", "gatewaybench-")
	if err != nil {
		return nil, err
	}
	b := &bench{opts: opts, log: log, work: work, started: time.Now()}
	if !opts.Keep {
		b.cleanups = append(b.cleanups, func() { _ = os.RemoveAll(work) })
	}
	b.bin = opts.GatewayBin
	if b.src, err = moduleDir(ctx, opts.Src); err != nil && (b.bin == "" || opts.hasShape("production")) {
		b.close()
		return nil, err
	}
	if b.bin == "" {
		if b.bin, err = buildGateway(ctx, b.src, work, opts.ProfileDir != "", log); err != nil {
			b.close()
			return nil, err
		}
	}
	if opts.ProfileDir != "" {
		if err := os.MkdirAll(opts.ProfileDir, 0o755); err != nil {
			b.close()
			return nil, err
		}
	}
	b.hc = &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        maxInFlight,
			MaxIdleConnsPerHost: maxInFlight,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
	return b, nil
}

// close undoes what the run set up, newest first.
func (b *bench) close() {
	for _, f := range slices.Backward(b.cleanups) {
		f()
	}
	b.cleanups = nil
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "[%6.1fs] %s\n", time.Since(b.started).Seconds(), fmt.Sprintf(format, args...))
}

// run runs the selected phases; a phase that fails is reported and the
// others still run.
func (b *bench) run(ctx context.Context) (*report, error) {
	rep := newReport(b.opts)
	if la := rep.LoadAverage["start"]; la != "?" {
		var one float64
		if _, err := fmt.Sscan(la, &one); err == nil && one > 0.5*float64(runtime.NumCPU()) {
			b.logf("warning: load average %s on %d CPUs: other work on this machine will skew the results", la, runtime.NumCPU())
		}
	}
	var errs []error
	for _, phase := range []struct {
		name, shape string
		run         func(context.Context, *report) error
	}{
		{"e2e", "dev", b.e2ePhases},
		{"create", "dev", b.createPhases},
		{"memory", "dev", b.memoryPhase},
		{"reads", "dev", b.readsPhase},
		{"fairness", "dev", b.fairnessPhase},
		{"production", "production", b.productionPhases},
		{"overload", "production", b.overloadPhase},
		{"scaleout", "production", b.scaleoutPhase},
	} {
		// The production phases choose among e2e and create themselves.
		if !b.opts.hasShape(phase.shape) || (phase.name != "production" && !b.opts.has(phase.name)) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		start := time.Now()
		if err := phase.run(ctx, rep); err != nil {
			b.logf("%s phase failed: %v", phase.name, err)
			rep.Failures = append(rep.Failures, fmt.Sprintf("%s: %v", phase.name, err))
			errs = append(errs, fmt.Errorf("%s phase: %w", phase.name, err))
		}
		rep.PhaseSeconds[phase.name] = time.Since(start).Seconds()
	}
	rep.TotalSeconds = time.Since(b.started).Seconds()
	rep.LoadAverage["end"] = loadAverage()
	rep.evaluate()
	return rep, errors.Join(errs...)
}

// dial connects an SDK client to a gateway's embedded frontend with the
// options the gateway itself uses.
func dial(ctx context.Context, hostPort string) (client.Client, error) {
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	return client.DialContext(ctx, client.Options{
		HostPort:  hostPort,
		Namespace: "default",
		Logger:    sdklog.NewStructuredLogger(quiet),
	})
}

// storeURL is the database of a phase's gateway: DATABASE_URL's server in
// a fresh schema when it is set, otherwise "" (the SQLite file in the data
// dir).
func (b *bench) storeURL(ctx context.Context, tag string) (string, string, error) {
	if b.opts.DatabaseURL == "" {
		return "", "sqlite", nil
	}
	url, err := b.freshSchema(ctx, b.opts.DatabaseURL, tag)
	return url, "postgres", err
}
