package main

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// These tests cover the arithmetic and the flags only; the benchmark
// itself runs with `make bench-load`, never in `make test`.

func TestSummariseNearestRank(t *testing.T) {
	t.Parallel()
	var lats []time.Duration
	for i := 100; i >= 1; i-- {
		lats = append(lats, time.Duration(i)*time.Millisecond)
	}
	s := summarise(lats, 2)
	require.Equal(t, stats{N: 100, Errors: 2, P50: 50, P95: 95, P99: 99, Max: 100}, s)
	require.Equal(t, stats{Errors: 3}, summarise(nil, 3))
	require.Equal(t, 7.0, summarise([]time.Duration{7 * time.Millisecond}, 0).P99)
}

func TestSteadyCountSkipsTheRampUp(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	deadline := start.Add(10 * time.Second)
	var samples []sample
	// The first completion comes after 1 s; then 10 per second until the
	// deadline, and a few stragglers after it.
	for i := range 100 {
		samples = append(samples, sample{due: start, lat: time.Second + time.Duration(i)*100*time.Millisecond})
	}
	samples = append(samples, sample{due: start, err: errors.New("x")})
	done, secs := steadyCount(samples, deadline)
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
	require.Equal(t, []int{50, 100, 200}, o.Rates)
	require.Equal(t, []string{"e2e", "create", "reads", "memory"}, o.Phases)
	require.Equal(t, []string{"dev", "production"}, o.Shapes)
	require.Equal(t, 5, o.CreateRuns)

	_, err = parseFlags([]string{"-phases", "load,nope"}, io.Discard)
	require.ErrorContains(t, err, `unknown phase "nope"`)
}

// serve keeps its own pacing target unless the benchmark is told one:
// passing the flag's zero value would turn serve's pacing off.
func TestServeKeepsItsAcceptTargetUnlessGiven(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Nil(t, o.AcceptTarget)

	o, err = parseFlags([]string{"-accept-latency-target", "25ms"}, io.Discard)
	require.NoError(t, err)
	require.NotNil(t, o.AcceptTarget)
	require.Equal(t, 25*time.Millisecond, *o.AcceptTarget)

	_, err = parseFlags([]string{"-accept-latency-target", "soon"}, io.Discard)
	require.Error(t, err)
}

func TestGatewaySettingsFollowTheFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Empty(t, gatewaySettings(o), "the gateways' own defaults")

	o, err = parseFlags([]string{"-job-generation", "4", "-gateway-log-level", "debug"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"GATEWAY_JOB_GENERATION=4", "GATEWAY_LOG_LEVEL=debug"}, gatewaySettings(o))
}

func TestTargets(t *testing.T) {
	t.Parallel()
	r := newReport(options{})
	r.add(row{Section: "end to end", Key: "e2e/sustained", System: "gateway", Rate: 26, Latency: stats{N: 10, P50: 10, P99: 20}})
	r.add(row{Section: "end to end", Key: "e2e/sustained", System: "floor", Rate: 40, Latency: stats{N: 10, P50: 5, P99: 10}})
	r.add(row{Section: "end to end", Key: "e2e/sustained", System: "baseline", Rate: 20, Latency: stats{N: 10, P50: 20, P99: 20}})
	r.add(row{Section: "create", Key: "create/200", System: "gateway", Offered: 200, Rate: 200, Latency: stats{N: 10, P99: 30}})
	r.add(row{Section: "reads", Key: "reads/get", System: "gateway", Latency: stats{N: 10, P99: 3, Errors: 1}, p99Target: 10})
	r.add(row{Section: "create", Key: "create/200/runs", System: "gateway", RunsP99: []float64{9, 24.9, 12}, info: true})
	r.shape = "production"
	r.add(row{Section: "end to end", Key: "e2e/sustained", System: "gateway", Rate: 10, Latency: stats{N: 10, P50: 10, P99: 20}})
	r.add(row{Section: "end to end", Key: "e2e/sustained", System: "floor", Rate: 40, Latency: stats{N: 10, P50: 5, P99: 10}})
	r.add(row{Section: "create", Key: "create/200/runs", System: "gateway", RunsP99: []float64{9, 25, 12}, info: true})
	r.add(row{Section: "create", Key: "create/200/runs", System: "gateway", RunsP99: []float64{9, 9, 9}, RunsErrors: 1, info: true})
	r.evaluate()

	require.InDelta(t, 1.3, *r.Rows[0].ThrRatio, 1e-9)
	require.InDelta(t, 0.65, *r.Rows[0].FloorThr, 1e-9)
	require.InDelta(t, 2.0, *r.Rows[0].FloorP50, 1e-9)
	require.False(t, *r.Rows[0].Pass, "0.65× the floor misses 0.7×")
	require.InDelta(t, 1.3, r.Headline["dev_throughput_vs_baseline"], 1e-9)
	require.InDelta(t, 0.65, r.Headline["dev_throughput_vs_floor"], 1e-9)
	require.Nil(t, r.Rows[1].Pass, "floor rows have no target")
	require.Nil(t, r.Rows[2].Pass, "baseline rows have no target")
	require.False(t, *r.Rows[3].Pass, "p99 30 ms misses 25 ms")
	require.False(t, *r.Rows[4].Pass, "any error fails")
	require.True(t, *r.Rows[5].Pass, "every run under 25 ms")
	require.InDelta(t, 0.25, *r.Rows[6].FloorThr, 1e-9, "each shape is compared with its own floor")
	require.False(t, *r.Rows[8].Pass, "one run of five at 25 ms fails the spread")
	require.False(t, *r.Rows[9].Pass, "a failed request in any run fails the spread")
	_, err := json.Marshal(r)
	require.NoError(t, err, "the report is written as JSON")

	var out strings.Builder
	r.print(&out)
	require.Contains(t, out.String(), "Headline (dev): the gateway completes 0.65× the jobs per second of the floor and 1.30× the baseline's")
	require.Contains(t, out.String(), "PRODUCTION SHAPE")
}

func TestSpread(t *testing.T) {
	t.Parallel()
	require.Equal(t, "p99 8.0–31.5 ms (9.0, 8.0, 31.5)", spread([]float64{9, 8, 31.5}))
}

func TestOnlyTheGatewaysErrorsFailTheRun(t *testing.T) {
	t.Parallel()
	r := newReport(options{})
	r.add(row{Section: "create", Key: "create/200", System: "baseline", Latency: stats{N: 10, Errors: 4}})
	require.Zero(t, r.errorCount(), "bare Temporal refusing starts past its capacity is a figure")
	r.add(row{Section: "create", Key: "create/200", System: "gateway", Latency: stats{N: 10, Errors: 2}})
	r.add(row{Section: "reads", Key: "reads/get", System: "gateway", Latency: stats{N: 10, Errors: 1}})
	require.Equal(t, 3, r.errorCount())
}

func TestPrintTableAligns(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	printTable(&out, [][]string{{"a", "n"}, {"HEAD"}, {"→ long", "1"}, {"b", "100"}}, 1)
	require.Equal(t, "a         n\nHEAD\n→ long    1\nb       100\n", out.String())
}

func TestMemoryTargets(t *testing.T) {
	r := &report{Headline: map[string]float64{}}
	r.Rows = []row{
		{Shape: "dev", Key: "memory/peak", System: "gateway", Bytes: 260 << 20, Latency: stats{N: 1000}},
		{Shape: "production", Key: "memory/peak-serve", System: "gateway", Bytes: 63 << 20, Latency: stats{N: 1000}},
		{Shape: "production", Key: "memory/peak-worker", System: "gateway", Bytes: 150 << 20, Latency: stats{N: 1000}},
	}
	r.evaluate()
	require.NotNil(t, r.Rows[0].Pass)
	require.False(t, *r.Rows[0].Pass)
	require.Equal(t, "< 250 MiB", r.Rows[0].Target)
	require.NotNil(t, r.Rows[1].Pass)
	require.True(t, *r.Rows[1].Pass)
	require.Equal(t, "< 100 MiB", r.Rows[1].Target)
	require.Nil(t, r.Rows[2].Pass) // the worker's is read, not checked
}

func TestScaleoutConfigs(t *testing.T) {
	t.Parallel()
	o, err := parseFlags([]string{"-phases", "scaleout"}, io.Discard)
	require.NoError(t, err)
	require.True(t, o.has("scaleout"))
	require.Equal(t, []scaleoutConfig{{Workers: 1, Slots: 4}, {Workers: 2, Slots: 4}, {Workers: 1, Slots: 16}, {Workers: 1}, {Workers: 2}}, o.ScaleoutConfigs)
	require.Equal(t, 1000, o.ScaleoutJobs)
	require.Equal(t, 200*time.Millisecond, o.ScaleoutLatency)
	require.Equal(t, []string{"--worker-stop-timeout", "5s", "--max-concurrent-workflow-tasks", "16", "--max-concurrent-local-activities", "16"},
		scaleoutConfig{Workers: 2, Slots: 16}.args())
	require.Equal(t, "2x16", scaleoutConfig{Workers: 2, Slots: 16}.String())
	o, err = parseFlags([]string{"-scaleout-configs", "1s32,2x16s4"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []scaleoutConfig{{Workers: 1, Starts: 32}, {Workers: 2, Slots: 16, Starts: 4}}, o.ScaleoutConfigs)
	require.Equal(t, "2x16s4", o.ScaleoutConfigs[1].String())
	require.Contains(t, strings.Join(o.ScaleoutConfigs[0].args(), " "), "--start-concurrency 32")
	for _, bad := range []string{"0", "1x1", "two", "1x", "", "1s0", "1x8s"} {
		_, err := parseFlags([]string{"-scaleout-configs", bad}, io.Discard)
		require.ErrorContains(t, err, "-scaleout-configs", bad)
	}
}

func TestCatalogIsValidAndCoversEveryService(t *testing.T) {
	t.Parallel()
	c, err := providers.ParseCatalog([]byte(catalog("s", 250*time.Millisecond)))
	require.NoError(t, err)
	p, ok := c.Lookup("s")
	require.True(t, ok)
	require.Len(t, p.Services, len(jobs.Services()))
	require.EqualValues(t, 250, p.Settings["latency_ms"])
}
