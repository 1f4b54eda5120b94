package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// row is one line of the table.
type row struct {
	Section      string   `json:"section"`
	Key          string   `json:"key"`
	Measure      string   `json:"measure"`
	System       string   `json:"system"`
	Offered      float64  `json:"offered_per_s,omitempty"`
	Rate         float64  `json:"achieved_per_s,omitempty"`
	Latency      stats    `json:"latency"`
	Value        string   `json:"value,omitempty"`
	Bytes        int64    `json:"bytes,omitempty"`
	ThrRatio     *float64 `json:"throughput_vs_baseline,omitempty"`
	P50Ratio     *float64 `json:"p50_vs_baseline,omitempty"`
	P99Ratio     *float64 `json:"p99_vs_baseline,omitempty"`
	Target       string   `json:"target,omitempty"`
	Pass         *bool    `json:"pass,omitempty"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	CPU          *cpuUse  `json:"cpu,omitempty"`
	info         bool
	p99Target    float64
}

// temporalCost is what one workflow cost Temporal.
type temporalCost struct {
	Events          int   `json:"history_events"`
	WorkflowTasks   int   `json:"workflow_tasks"`
	Activities      int   `json:"activities"`
	LocalActivities int   `json:"local_activities"`
	HistoryBytes    int64 `json:"history_bytes"`
}

// dbCost is what one job cost one table, per job.
type dbCost struct {
	Inserted   float64 `json:"inserted"`
	Updated    float64 `json:"updated"`
	HotUpdated float64 `json:"hot_updated"`
	Deleted    float64 `json:"deleted"`
	IndexScans float64 `json:"index_scans"`
	SeqScans   float64 `json:"seq_scans"`
}

type memoryResult struct {
	Jobs             int    `json:"jobs"`
	Processing       int    `json:"max_processing_seen"`
	SandboxLatencyMS int64  `json:"sandbox_latency_ms"`
	Store            string `json:"store"`
	IdleRSS          int64  `json:"idle_rss_bytes"`
	InFlight         memory `json:"in_flight"`
	PeakSampledRSS   int64  `json:"peak_sampled_rss_bytes"`
	PeakRSS          int64  `json:"peak_rss_bytes"`
	Errors           int    `json:"errors"`
}

type readsResult struct {
	Jobs        int     `json:"jobs"`
	Tenant      string  `json:"tenant"`
	SeedSeconds float64 `json:"seed_seconds"`
}

// report is the whole run, as printed and as written to JSON.
type report struct {
	StartedAt    time.Time          `json:"started_at"`
	Host         map[string]any     `json:"host"`
	Options      options            `json:"options"`
	Store        string             `json:"store"`
	Rows         []row              `json:"rows"`
	Headline     map[string]float64 `json:"headline"`
	PerJob       perJobCost         `json:"per_job"`
	Breakdowns   []breakdown        `json:"breakdowns,omitempty"`
	Memory       *memoryResult      `json:"memory,omitempty"`
	Reads        *readsResult       `json:"reads,omitempty"`
	Failures     []string           `json:"failures,omitempty"`
	PhaseSeconds map[string]float64 `json:"phase_seconds"`
	LoadAverage  map[string]string  `json:"load_average"`
	TotalSeconds float64            `json:"total_seconds"`
}

type perJobCost struct {
	Temporal map[string]temporalCost `json:"temporal"`
	Database map[string]dbCost       `json:"database_postgres,omitempty"`
}

func newReport(opts options) *report {
	host, _ := os.Hostname()
	return &report{
		StartedAt: time.Now().UTC(),
		Host: map[string]any{"hostname": host, "cpus": runtime.NumCPU(), "go": runtime.Version(),
			"os": runtime.GOOS, "arch": runtime.GOARCH},
		Options:      opts,
		Headline:     map[string]float64{},
		PerJob:       perJobCost{Temporal: map[string]temporalCost{}},
		PhaseSeconds: map[string]float64{},
		LoadAverage:  map[string]string{"start": loadAverage()},
	}
}

func (r *report) add(x row) { r.Rows = append(r.Rows, x) }

// addInfo adds a row that only carries a value.
func (r *report) addInfo(section, measure, system, value string) {
	r.add(row{Section: section, Measure: measure, System: system, Value: value, info: true})
}

// errorCount is the number of the gateway's failed requests and jobs; the
// baseline's are reported in its rows but fail nothing.
func (r *report) errorCount() int {
	n := 0
	for _, x := range r.Rows {
		if x.System == "baseline" {
			continue // bare Temporal past its capacity is a figure, not a failure
		}
		n += x.Latency.Errors
	}
	return n
}

// Targets (the issue's, for information).
const (
	targetThroughputRatio = 1.0
	targetSerialP50Ratio  = 1.0
	targetCreateP99MS     = 25
	targetCreateRate      = 200
	targetPeakRSS         = 300 << 20
)

// evaluate fills in the ratios to the baseline and the targets.
func (r *report) evaluate() {
	base := map[string]row{}
	for _, x := range r.Rows {
		if x.System == "baseline" {
			base[x.Key] = x
		}
	}
	ratio := func(a, b float64) *float64 {
		if a <= 0 || b <= 0 {
			return nil
		}
		v := a / b
		return &v
	}
	for i := range r.Rows {
		x := &r.Rows[i]
		if x.System != "gateway" || x.Key == "" {
			continue
		}
		if b, ok := base[x.Key]; ok {
			x.ThrRatio = ratio(x.Rate, b.Rate)
			if x.Offered > 0 && x.Key != "" && strings.HasPrefix(x.Key, "create/") {
				x.ThrRatio = nil // both get what was offered; the ratio says nothing
			}
			x.P50Ratio = ratio(x.Latency.P50, b.Latency.P50)
			x.P99Ratio = ratio(x.Latency.P99, b.Latency.P99)
		}
		pass := func(ok bool, target string) {
			x.Target = target
			ok = ok && x.Latency.Errors == 0 && x.Latency.N > 0
			x.Pass = &ok
		}
		switch {
		case x.Key == "e2e/sustained":
			pass(x.ThrRatio != nil && *x.ThrRatio >= targetThroughputRatio, fmt.Sprintf("≥ %.1f× baseline", targetThroughputRatio))
			if x.ThrRatio != nil {
				r.Headline["throughput_vs_baseline"] = *x.ThrRatio
			}
		case x.Key == "e2e/serial":
			pass(x.P50Ratio != nil && *x.P50Ratio <= targetSerialP50Ratio, fmt.Sprintf("p50 ≤ %.1f× baseline", targetSerialP50Ratio))
			if x.P50Ratio != nil {
				r.Headline["serial_p50_vs_baseline"] = *x.P50Ratio
			}
		case x.Key == fmt.Sprintf("create/%d", targetCreateRate):
			pass(x.Latency.P99 < targetCreateP99MS, fmt.Sprintf("p99 < %d ms", targetCreateP99MS))
		case x.p99Target > 0:
			pass(x.Latency.P99 < x.p99Target, fmt.Sprintf("p99 < %.0f ms", x.p99Target))
		case x.Key == "memory/peak":
			pass(x.Bytes < targetPeakRSS, fmt.Sprintf("< %d MiB", targetPeakRSS>>20))
		}
	}
	for _, key := range []string{"create/max", "e2e/sustained", "e2e/serial"} {
		var g, b *row
		for i := range r.Rows {
			if r.Rows[i].Key == key && r.Rows[i].System == "gateway" {
				g = &r.Rows[i]
			}
			if r.Rows[i].Key == key && r.Rows[i].System == "baseline" {
				b = &r.Rows[i]
			}
		}
		if g == nil || b == nil {
			continue
		}
		name := strings.ReplaceAll(strings.TrimPrefix(key, "e2e/"), "/", "_")
		if key != "e2e/serial" {
			r.Headline[name+"_gateway_per_s"] = g.Rate
			r.Headline[name+"_baseline_per_s"] = b.Rate
		} else {
			r.Headline["serial_p50_gateway_ms"] = g.Latency.P50
			r.Headline["serial_p50_baseline_ms"] = b.Latency.P50
		}
	}
}

// print writes the table, the headline and the per-job costs.
func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nGateway benchmark, %s, %d CPUs, gateway store %s\n\n", r.StartedAt.Format(time.RFC3339), runtime.NumCPU(), orDash(r.Store))
	cells := [][]string{{"measure", "system", "n", "err", "value", "p50 ms", "p95 ms", "p99 ms", "thr ×base", "p50 ×base", "p99 ×base", "cpu ms/job", "other cpu", "target", "result"}}
	section := ""
	for _, x := range r.Rows {
		if x.Section != section {
			section = x.Section
			cells = append(cells, []string{strings.ToUpper(section)})
		}
		value := x.Value
		if value == "" && x.Rate > 0 {
			value = fmt.Sprintf("%.1f/s", x.Rate)
		}
		lat := func(v float64) string {
			if x.info || x.Latency.N == 0 || x.Key == "memory/peak" {
				return ""
			}
			return fmt.Sprintf("%.1f", v)
		}
		n, errs := fmt.Sprint(x.Latency.N), fmt.Sprint(x.Latency.Errors)
		if x.info {
			n, errs = "", ""
		}
		result := ""
		if x.Pass != nil {
			result = "FAIL"
			if *x.Pass {
				result = "pass"
			}
		}
		if x.Latency.Errors > 0 {
			result = strings.TrimSpace(result + " errors")
		}
		cells = append(cells, []string{"  " + x.Measure, x.System, n, errs, value,
			lat(x.Latency.P50), lat(x.Latency.P95), lat(x.Latency.P99),
			times(x.ThrRatio), times(x.P50Ratio), times(x.P99Ratio), cpuPerJob(x), otherCPU(x.CPU), x.Target, result})
	}
	printTable(w, cells, 2)

	if v, ok := r.Headline["throughput_vs_baseline"]; ok {
		fmt.Fprintf(w, "\nHeadline: the gateway completes %.2f× the jobs per second of bare Temporal (%.1f/s vs %.1f/s)",
			v, r.Headline["sustained_gateway_per_s"], r.Headline["sustained_baseline_per_s"])
		if p, ok := r.Headline["serial_p50_vs_baseline"]; ok {
			fmt.Fprintf(w, ";\none job at a time takes %.2f× as long from submit to completed (p50 %.1f ms vs %.1f ms)",
				p, r.Headline["serial_p50_gateway_ms"], r.Headline["serial_p50_baseline_ms"])
		}
		fmt.Fprintln(w, ".")
	}
	if len(r.PerJob.Temporal) > 0 {
		fmt.Fprintln(w, "\nPer job, in Temporal (one workflow's history):")
		for _, name := range sortedKeys(r.PerJob.Temporal) {
			c := r.PerJob.Temporal[name]
			fmt.Fprintf(w, "  %-9s %2d events, %d workflow tasks, %d activities, %d local activities, %d history bytes\n",
				name, c.Events, c.WorkflowTasks, c.Activities, c.LocalActivities, c.HistoryBytes)
		}
	}
	if len(r.Breakdowns) > 0 {
		fmt.Fprintln(w, "\nWhere submit→completed goes (mean ms per job, from workflow histories; a workflow task includes its local activities):")
		cells := [][]string{{"  phase", "system", "jobs", "submit→started", "task queue", "task run", "activity queue", "activity run", "other", "total", "tasks/job"}}
		for _, b := range r.Breakdowns {
			f := func(v float64) string { return fmt.Sprintf("%.1f", v) }
			cells = append(cells, []string{"  " + b.Phase, b.System, fmt.Sprint(b.Jobs), f(b.Submit), f(b.TaskQueue), f(b.TaskRun),
				f(b.ActivityQueue), f(b.ActivityRun), f(b.Other), f(b.Total), f(b.WorkflowTasks)})
		}
		printTable(w, cells, 2)
	}
	if len(r.PerJob.Database) > 0 {
		fmt.Fprintln(w, "\nPer job, in the gateway's PostgreSQL store (tuples and scans per job, pg_stat_user_tables):")
		for _, name := range sortedKeys(r.PerJob.Database) {
			c := r.PerJob.Database[name]
			fmt.Fprintf(w, "  %-18s inserted %.2f, updated %.2f (HOT %.2f), deleted %.2f, index scans %.2f, seq scans %.2f\n",
				name, c.Inserted, c.Updated, c.HotUpdated, c.Deleted, c.IndexScans, c.SeqScans)
		}
	}
	for _, x := range r.Rows {
		if len(x.ErrorSamples) > 0 {
			fmt.Fprintf(w, "\nerrors in %q (%s): %s", x.Measure, x.System, strings.Join(x.ErrorSamples, "; "))
		}
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "\nphase failed: %s", f)
	}
	fmt.Fprintf(w, "\nLoad average (1, 5, 15 min) at the start: %s; at the end: %s.", r.LoadAverage["start"], r.LoadAverage["end"])
	fmt.Fprintf(w, "\nTook %.0f s (", r.TotalSeconds)
	var parts []string
	for _, name := range []string{"e2e", "create", "memory", "reads"} {
		if s, ok := r.PhaseSeconds[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %.0f s", name, s))
		}
	}
	fmt.Fprintf(w, "%s).\n", strings.Join(parts, ", "))
}

func (r *report) writeJSON(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func times(v *float64) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%.2f×", *v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func firstN(s []string, n int) []string { return s[:min(n, len(s))] }

// printTable writes cells in aligned columns: the first left columns
// left-aligned, the others right-aligned. A row of one cell is a heading.
func printTable(w io.Writer, cells [][]string, left int) {
	var widths []int
	for _, r := range cells {
		if len(r) == 1 {
			continue
		}
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range cells {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", max(0, widths[i]-utf8.RuneCountInString(c)))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < left || len(r) == 1 {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// cpuPerJob is shown for end-to-end rows only: during a create phase the
// CPU also runs the workflows of earlier creates.
func cpuPerJob(x row) string {
	if x.CPU == nil || x.CPU.PerJobMS == 0 || x.Section != "end to end" {
		return ""
	}
	return fmt.Sprintf("%.1f", x.CPU.PerJobMS)
}

func otherCPU(u *cpuUse) string {
	if u == nil {
		return ""
	}
	return fmt.Sprintf("%.2f", u.OtherCores)
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
