package main

import (
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests cover the arithmetic and the flags only; the benchmark
// itself runs with `make bench-load`, never in `make test`.

func TestSummaryNearestRank(t *testing.T) {
	t.Parallel()
	var samples []sample
	for i := 100; i >= 1; i-- {
		samples = append(samples, sample{lat: time.Duration(i) * time.Millisecond})
	}
	samples = append(samples, sample{err: errors.New("a")}, sample{err: errors.New("b")})
	s, errs := summary(samples)
	require.Equal(t, stats{N: 100, Errors: 2, P50: 50, P95: 95, P99: 99}, s)
	require.Equal(t, []string{"a", "b"}, errs)
	s, _ = summary([]sample{{lat: 7 * time.Millisecond}})
	require.Equal(t, 7.0, s.P99)
}

func TestSteadyCountSkipsTheRampUp(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var samples []sample
	// The first completion comes after 1 s; then 10 per second until the
	// deadline, and a few stragglers after it.
	for i := range 100 {
		samples = append(samples, sample{due: start, lat: time.Second + time.Duration(i)*100*time.Millisecond})
	}
	samples = append(samples, sample{due: start, err: errors.New("x")})
	done, secs := steadyCount(samples, start.Add(10*time.Second))
	require.Equal(t, 90, done)
	require.InDelta(t, 9.0, secs, 1e-9)
}

func TestQuickShortensWhatWasNotSet(t *testing.T) {
	t.Setenv("BENCH_JOBS", "")
	o, err := parseFlags([]string{"-quick", "-serial", "7"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, o.Duration)
	require.Equal(t, 7, o.SerialJobs)
	require.Equal(t, 100_000, o.Jobs)
	require.Equal(t, 100, o.ReadRequests)
	require.Equal(t, 40*time.Second, o.MemoryDelay)
	require.Equal(t, []int{50, 100, 200}, o.Rates)
	require.Equal(t, []string{"e2e", "create", "reads", "memory"}, o.Phases)
	require.Equal(t, []string{"dev", "production"}, o.Shapes)
	require.Equal(t, 5, o.CreateRuns)
	require.Equal(t, 10, o.FairnessBJobs)
	require.Equal(t, 5, o.FairnessRuns)

	_, err = parseFlags([]string{"-phases", "load,nope"}, io.Discard)
	require.ErrorContains(t, err, `unknown phase "nope"`)
	_, err = parseFlags([]string{"-fairness-b-jobs", "0"}, io.Discard)
	require.ErrorContains(t, err, "counts at least 1")
}

func TestEnvFollowsTheFlags(t *testing.T) {
	t.Setenv("GATEWAY_JOB_GENERATION", "9")
	t.Setenv("DATABASE_URL", "postgres://elsewhere")
	b := &bench{opts: options{JobGeneration: -1}}
	require.Contains(t, b.env(), "GATEWAY_PAYLOAD_KEYS="+benchPayloadKeys)
	require.NotContains(t, strings.Join(b.env(), "\n"), "GATEWAY_JOB_GENERATION", "the gateways' own default")
	require.NotContains(t, "\n"+strings.Join(b.env(), "\n"), "\nDATABASE_URL=", "the shell's settings are not the benchmark's")
	b.opts.JobGeneration = 4
	require.Contains(t, b.env(), "GATEWAY_JOB_GENERATION=4")
}

func TestTargets(t *testing.T) {
	t.Parallel()
	r := newReport(options{})
	r.add(row{Section: "end to end", Key: "e2e/sustained", System: "gateway", Rate: 26, Latency: stats{N: 10, P50: 10, P99: 20}})
	r.add(row{Section: "end to end", Key: "e2e/sustained", System: "floor", Rate: 40, Latency: stats{N: 10, P50: 5, P99: 10}})
	r.add(row{Section: "end to end", Key: "e2e/sustained", System: "baseline", Rate: 20, Latency: stats{N: 10, P50: 20, P99: 20}})
	r.add(row{Section: "end to end", Key: "e2e/serial", System: "gateway", Latency: stats{N: 10, P50: 7}})
	r.add(row{Section: "end to end", Key: "e2e/serial", System: "floor", Latency: stats{N: 10, P50: 5}})
	r.add(row{Section: "create", Key: "create/200", System: "gateway", Offered: 200, Rate: 200, Latency: stats{N: 10, P99: 3}})
	r.add(row{Section: "create", Key: "create/200", System: "floor", Offered: 200, Rate: 190, Latency: stats{N: 10, P99: 2}})
	r.shape = "production"
	r.add(row{Section: "end to end", Key: "e2e/sustained", System: "gateway", Rate: 10, Latency: stats{N: 10, P50: 10, P99: 20}})
	r.add(row{Section: "end to end", Key: "e2e/sustained", System: "floor", Rate: 40, Latency: stats{N: 10, P50: 5, P99: 10}})
	r.add(row{Section: "end to end", Key: "e2e/sustained", System: "gateway", Rate: 40, Latency: stats{N: 10, Errors: 1}})
	r.evaluate()

	x := r.Rows[0]
	require.InDelta(t, 1.3, *x.Vs["baseline"].Throughput, 1e-9)
	require.InDelta(t, 0.65, *x.Vs["floor"].Throughput, 1e-9)
	require.InDelta(t, 2.0, *x.Vs["floor"].P50, 1e-9)
	require.False(t, *x.Pass, "0.65× the floor misses 0.7×")
	require.Equal(t, "≥ 0.7× floor", x.Target)
	require.Nil(t, r.Rows[1].Pass, "the floor has no target")
	require.True(t, *r.Rows[3].Pass, "p50 1.4× the floor's")
	require.Nil(t, r.Rows[5].Vs["floor"].Throughput, "at a fixed offered rate both get what was offered")
	require.InDelta(t, 1.5, *r.Rows[5].Vs["floor"].P99, 1e-9)
	require.InDelta(t, 0.25, *r.Rows[7].Vs["floor"].Throughput, 1e-9, "each shape is compared with its own floor")
	require.False(t, *r.Rows[9].Pass, "an error fails the target")
	_, err := json.Marshal(r)
	require.NoError(t, err, "the report is written as JSON")

	var out strings.Builder
	r.print(&out)
	require.Contains(t, out.String(), "Headline (dev): the gateway completes 0.65× the jobs per second of the floor and 1.30× the baseline's (26.0/s vs 40.0/s and 20.0/s)")
	require.Contains(t, out.String(), "PRODUCTION SHAPE")
}

func TestJudge(t *testing.T) {
	t.Parallel()
	x := row{Latency: stats{N: 3}}
	x.judge(true, "t")
	require.True(t, *x.Pass)
	x.RunsErrors = 1
	x.judge(true, "t")
	require.False(t, *x.Pass, "a failed request in any run fails")
}

func TestOnlyTheGatewaysErrorsFailTheRun(t *testing.T) {
	t.Parallel()
	r := newReport(options{})
	r.add(row{Key: "create/200", System: "baseline", Latency: stats{N: 10, Errors: 4}})
	require.Zero(t, r.errorCount(), "bare Temporal refusing starts past its capacity is a figure")
	r.add(row{Key: "create/200", System: "gateway", Latency: stats{N: 10, Errors: 2}})
	r.add(row{Key: "reads/get", System: "gateway", Latency: stats{N: 10, Errors: 1}})
	require.Equal(t, 3, r.errorCount())
}

func TestCPUTimesAdd(t *testing.T) {
	t.Parallel()
	var total cpuTimes
	total.add(cpuTimes{wall: time.Second, busy: 50, total: 100, procs: map[string]time.Duration{"gateway": 500 * time.Millisecond, "bench": 100 * time.Millisecond}}, 1)
	total.add(cpuTimes{wall: time.Second, busy: 150, total: 200, procs: map[string]time.Duration{"gateway": 300 * time.Millisecond, "postgres": 200 * time.Millisecond}}, 1)
	u := total.use(10)
	require.InDelta(t, 2, u.Seconds, 1e-9)
	require.Equal(t, map[string]float64{"gateway": 0.4, "postgres": 0.1}, u.Cores)
	require.InDelta(t, 0.05, u.BenchCores, 1e-9)
	require.InDelta(t, 200.0/300*float64(runtime.NumCPU())-0.55, u.OtherCores, 1e-9)
	require.InDelta(t, 110, u.PerJobMS, 1e-9, "the measured processes' and the benchmark's CPU, per job")
	require.Nil(t, cpuTimes{}.use(1))
}

func TestScaleoutConfigs(t *testing.T) {
	t.Parallel()
	o, err := parseFlags([]string{"-phases", "scaleout"}, io.Discard)
	require.NoError(t, err)
	require.True(t, o.has("production", "scaleout"))
	require.Equal(t, []scaleoutConfig{{Workers: 1, Slots: 4}, {Workers: 2, Slots: 4}, {Workers: 1, Slots: 16}, {Workers: 1}, {Workers: 2}}, o.ScaleoutConfigs)
	require.Equal(t, "2x16", scaleoutConfig{Workers: 2, Slots: 16}.key())
	require.Equal(t, "1", scaleoutConfig{Workers: 1}.key())
	for _, bad := range []string{"0", "1x1", "two", "1x", "", "1s32"} {
		_, err := parseFlags([]string{"-scaleout-configs", bad}, io.Discard)
		require.ErrorContains(t, err, "-scaleout-configs", bad)
	}
}
