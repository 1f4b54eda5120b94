package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store/benchdb"
)

// bench is one run: the binaries, a work dir and the report.
type bench struct {
	opts     options
	log      io.Writer
	rep      *report
	work     string
	src      string // the gateway's module, where the gateway and Temporal's tools are built
	bin      string
	nodevBin string        // the production build, made by the first phase that needs it
	tools    temporalTools // made by the first production deployment
	hc       *http.Client
	started  time.Time
	undo
}

func newBench(ctx context.Context, opts options, log io.Writer) (b *bench, err error) {
	b = &bench{opts: opts, log: log, rep: newReport(opts), started: time.Now(),
		hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			MaxIdleConns: maxInFlight, MaxIdleConnsPerHost: maxInFlight, DisableCompression: true}}}
	if b.work, err = os.MkdirTemp("", "gatewaybench-"); err != nil {
		return nil, err
	}
	if !opts.Keep {
		b.undo = append(b.undo, func() { _ = os.RemoveAll(b.work) })
	}
	if b.src, err = filepath.Abs(cmp.Or(opts.Src, ".")); err == nil {
		b.bin = filepath.Join(b.work, "gateway")
		err = b.goBuild(ctx, "the gateway", "-o", b.bin, "./cmd/gateway")
	}
	if err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// undo is what to undo when closing, newest first.
type undo []func()

func (u *undo) close() {
	for _, f := range slices.Backward(*u) {
		f()
	}
	*u = nil
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "[%6.1fs] %s\n", time.Since(b.started).Seconds(), fmt.Sprintf(format, args...))
}

// run runs the selected phases in the order of docs/benchmarks.md
// (Running them); a phase that fails is reported and the others run.
func (b *bench) run(ctx context.Context) error {
	var errs []error
	for _, p := range []struct {
		shape, phase string
		run          func(context.Context, string) error
	}{
		{"dev", "e2e", b.e2e}, {"dev", "create", b.create}, {"dev", "memory", b.memory}, {"dev", "reads", b.reads},
		{"dev", "fairness", b.fairness}, {"production", "e2e", b.e2e}, {"production", "create", b.create},
		{"production", "memory", b.memory}, {"production", "overload", b.overload}, {"production", "scaleout", b.scaleout},
	} {
		if !b.opts.has(p.shape, p.phase) || ctx.Err() != nil {
			continue
		}
		b.rep.shape = p.shape
		if err := p.run(ctx, p.shape); err != nil {
			b.logf("%s %s phase failed: %v", p.shape, p.phase, err)
			b.rep.Failures = append(b.rep.Failures, fmt.Sprintf("%s %s: %v", p.shape, p.phase, err))
			errs = append(errs, fmt.Errorf("%s %s phase: %w", p.shape, p.phase, err))
		}
	}
	b.rep.TotalSeconds = time.Since(b.started).Seconds()
	b.rep.evaluate()
	return errors.Join(errs...)
}

// goBuild runs `go build args…` in the gateway's module.
func (b *bench) goBuild(ctx context.Context, what string, args ...string) error {
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", append([]string{"build"}, args...)...)
	cmd.Dir = b.src
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s in %s: %w\n%s", what, b.src, err, out)
	}
	b.logf("built %s in %s", what, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// nodevBinary is the gateway built as deploy/Dockerfile builds it (-tags
// nodev: without the embedded Temporal server), built once.
func (b *bench) nodevBinary(ctx context.Context) (string, error) {
	if b.nodevBin == "" {
		bin := filepath.Join(b.work, "gateway-nodev")
		if err := b.goBuild(ctx, "the production gateway (-tags nodev)", "-tags", "nodev", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/gateway"); err != nil {
			return "", err
		}
		b.nodevBin = bin
	}
	return b.nodevBin, nil
}

// freshSchema creates an empty schema in the database at base and returns
// a URL whose connections use it; it is dropped at the end unless -keep.
func (b *bench) freshSchema(ctx context.Context, base, tag string) (string, error) {
	schema := "gatewaybench_" + strings.ReplaceAll(tag, "-", "_") + "_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	u, drop, err := benchdb.NewSchema(ctx, base, schema)
	if err == nil && !b.opts.Keep {
		b.undo = append(b.undo, drop)
	}
	return u, err
}

// benchPayloadKeys is the GATEWAY_PAYLOAD_KEYS of every gateway process
// the benchmark starts: payloads are encrypted as in production.
var benchPayloadKeys = payloadcodec.FormatKey("bench1", payloadcodec.GenerateKey())

// env is the environment of every process the benchmark starts: its own
// without the gateway's and Temporal's settings, so that the shell's
// exports change nothing, plus the payload keys and -job-generation.
func (b *bench) env() []string {
	env := []string{"GATEWAY_PAYLOAD_KEYS=" + benchPayloadKeys}
	if b.opts.JobGeneration >= 0 {
		env = append(env, fmt.Sprintf("GATEWAY_JOB_GENERATION=%d", b.opts.JobGeneration))
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "GATEWAY_") && !strings.HasPrefix(name, "TEMPORAL_") &&
			!strings.HasPrefix(name, "OIDC_") && name != "DATABASE_URL" {
			env = append(env, kv)
		}
	}
	return env
}
