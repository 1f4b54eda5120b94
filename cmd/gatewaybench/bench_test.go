package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

	_, err = parseFlags([]string{"-phases", "load,nope"}, io.Discard)
	require.ErrorContains(t, err, `unknown phase "nope"`)
}

func TestTargets(t *testing.T) {
	t.Parallel()
	r := newReport(options{})
	r.add(row{Section: "end to end", Key: "e2e/sustained", System: "gateway", Rate: 30, Latency: stats{N: 10, P50: 10, P99: 20}})
	r.add(row{Section: "end to end", Key: "e2e/sustained", System: "baseline", Rate: 20, Latency: stats{N: 10, P50: 20, P99: 20}})
	r.add(row{Section: "create", Key: "create/200", System: "gateway", Offered: 200, Rate: 200, Latency: stats{N: 10, P99: 30}})
	r.add(row{Section: "reads", Key: "reads/get", System: "gateway", Latency: stats{N: 10, P99: 3, Errors: 1}, p99Target: 10})
	r.evaluate()
	require.InDelta(t, 1.5, *r.Rows[0].ThrRatio, 1e-9)
	require.True(t, *r.Rows[0].Pass)
	require.InDelta(t, 1.5, r.Headline["throughput_vs_baseline"], 1e-9)
	require.Nil(t, r.Rows[1].Pass, "baseline rows have no target")
	require.False(t, *r.Rows[2].Pass, "p99 30 ms misses 25 ms")
	require.False(t, *r.Rows[3].Pass, "any error fails")

	var out strings.Builder
	r.print(&out)
	require.Contains(t, out.String(), "Headline: the gateway completes 1.50× the jobs per second")
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
