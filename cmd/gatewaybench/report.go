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
	Shape        string    `json:"shape"` // "dev" (one process) or "production" (separate processes)
	Section      string    `json:"section"`
	Key          string    `json:"key"`
	Measure      string    `json:"measure"`
	System       string    `json:"system"`
	Offered      float64   `json:"offered_per_s,omitempty"`
	Rate         float64   `json:"achieved_per_s,omitempty"`
	Latency      stats     `json:"latency"`
	Value        string    `json:"value,omitempty"`
	Bytes        int64     `json:"bytes,omitempty"`
	ThrRatio     *float64  `json:"throughput_vs_baseline,omitempty"`
	P50Ratio     *float64  `json:"p50_vs_baseline,omitempty"`
	P99Ratio     *float64  `json:"p99_vs_baseline,omitempty"`
	FloorThr     *float64  `json:"throughput_vs_floor,omitempty"`
	FloorP50     *float64  `json:"p50_vs_floor,omitempty"`
	FloorP99     *float64  `json:"p99_vs_floor,omitempty"`
	Target       string    `json:"target,omitempty"`
	Pass         *bool     `json:"pass,omitempty"`
	ErrorSamples []string  `json:"error_samples,omitempty"`
	RunsP99      []float64 `json:"runs_p99_ms,omitempty"` // the p99 of each run of a repeated phase
	RunsErrors   int       `json:"runs_errors,omitempty"` // … and their failed requests, in all
	CPU          *cpuUse   `json:"cpu,omitempty"`
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

// productionMemoryResult is the memory phase on the production shape,
// by process (serve, worker).
type productionMemoryResult struct {
	Jobs             int                      `json:"jobs"`
	Processing       int                      `json:"max_processing_seen"`
	SandboxLatencyMS int64                    `json:"sandbox_latency_ms"`
	Processes        map[string]processMemory `json:"processes"`
}

type processMemory struct {
	IdleRSS        int64  `json:"idle_rss_bytes"`
	InFlight       memory `json:"in_flight"`
	PeakSampledRSS int64  `json:"peak_sampled_rss_bytes"`
	PeakRSS        int64  `json:"peak_rss_bytes"`
}

type readsResult struct {
	Jobs        int     `json:"jobs"`
	Tenant      string  `json:"tenant"`
	SeedSeconds float64 `json:"seed_seconds"`
}

// report is the whole run, as printed and as written to JSON.
type report struct {
	StartedAt        time.Time               `json:"started_at"`
	Host             map[string]any          `json:"host"`
	Options          options                 `json:"options"`
	Store            string                  `json:"store"`
	Rows             []row                   `json:"rows"`
	Headline         map[string]float64      `json:"headline"`
	PerJob           perJobCost              `json:"per_job"`
	Breakdowns       []breakdown             `json:"breakdowns,omitempty"`
	Memory           *memoryResult           `json:"memory,omitempty"`
	ProductionMemory *productionMemoryResult `json:"memory_production,omitempty"`
	Reads            *readsResult            `json:"reads,omitempty"`
	Failures         []string                `json:"failures,omitempty"`
	PhaseSeconds     map[string]float64      `json:"phase_seconds"`
	LoadAverage      map[string]string       `json:"load_average"`
	TotalSeconds     float64                 `json:"total_seconds"`
	shape            string                  // of the rows being added
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
		shape:        "dev",
		PerJob:       perJobCost{Temporal: map[string]temporalCost{}},
		PhaseSeconds: map[string]float64{},
		LoadAverage:  map[string]string{"start": loadAverage()},
	}
}

// add adds a row of the shape being measured.
func (r *report) add(x row) {
	if x.Shape == "" {
		x.Shape = r.shape
	}
	r.Rows = append(r.Rows, x)
}

// addInfo adds a row that only carries a value.
func (r *report) addInfo(section, measure, system, value string) {
	r.add(row{Section: section, Measure: measure, System: system, Value: value, info: true})
}

// errorCount is the number of the gateway's failed requests and jobs; the
// floor's and the baseline's are reported in their rows but fail nothing.
func (r *report) errorCount() int {
	n := 0
	for _, x := range r.Rows {
		if x.System != "gateway" {
			continue // bare Temporal past its capacity is a figure, not a failure
		}
		n += x.Latency.Errors
	}
	return n
}

// Targets (docs/benchmarks.md): the gateway against the floor.
const (
	targetThroughputRatio = 0.7
	targetSerialP50Ratio  = 1.5
	targetCreateP99MS     = 25
	targetCreateRate      = 200
	targetPeakRSS         = 250 << 20 // gateway dev
	targetServePeakRSS    = 100 << 20 // gateway serve, production shape
)

// evaluate fills in the ratios to the floor and the baseline (of the
// same shape) and the targets.
func (r *report) evaluate() {
	type ref struct{ shape, system, key string }
	refs := map[ref]row{}
	for _, x := range r.Rows {
		if x.System != "gateway" {
			refs[ref{x.Shape, x.System, x.Key}] = x
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
		fixedRate := x.Offered > 0 && strings.HasPrefix(x.Key, "create/")
		if b, ok := refs[ref{x.Shape, "baseline", x.Key}]; ok {
			if !fixedRate { // at a fixed offered rate both get what was offered
				x.ThrRatio = ratio(x.Rate, b.Rate)
			}
			x.P50Ratio = ratio(x.Latency.P50, b.Latency.P50)
			x.P99Ratio = ratio(x.Latency.P99, b.Latency.P99)
		}
		if f, ok := refs[ref{x.Shape, "floor", x.Key}]; ok {
			if !fixedRate {
				x.FloorThr = ratio(x.Rate, f.Rate)
			}
			x.FloorP50 = ratio(x.Latency.P50, f.Latency.P50)
			x.FloorP99 = ratio(x.Latency.P99, f.Latency.P99)
		}
		pass := func(ok bool, target string) {
			x.Target = target
			ok = ok && x.Latency.Errors == 0 && x.Latency.N > 0
			x.Pass = &ok
		}
		prefix := x.Shape + "_"
		switch {
		case x.Key == "e2e/sustained":
			pass(x.FloorThr != nil && *x.FloorThr >= targetThroughputRatio, fmt.Sprintf("≥ %.1f× floor", targetThroughputRatio))
			if x.FloorThr != nil {
				r.Headline[prefix+"throughput_vs_floor"] = *x.FloorThr
			}
			if x.ThrRatio != nil {
				r.Headline[prefix+"throughput_vs_baseline"] = *x.ThrRatio
			}
		case x.Key == "e2e/serial":
			pass(x.FloorP50 != nil && *x.FloorP50 <= targetSerialP50Ratio, fmt.Sprintf("p50 ≤ %.1f× floor", targetSerialP50Ratio))
			if x.FloorP50 != nil {
				r.Headline[prefix+"serial_p50_vs_floor"] = *x.FloorP50
			}
			if x.P50Ratio != nil {
				r.Headline[prefix+"serial_p50_vs_baseline"] = *x.P50Ratio
			}
		case x.Key == fmt.Sprintf("create/%d", targetCreateRate):
			pass(x.Latency.P99 < targetCreateP99MS, fmt.Sprintf("p99 < %d ms", targetCreateP99MS))
		case x.Key == fmt.Sprintf("create/%d/runs", targetCreateRate):
			x.Target = fmt.Sprintf("every p99 < %d ms", targetCreateP99MS)
			ok := len(x.RunsP99) > 0 && slices.Max(x.RunsP99) < targetCreateP99MS && x.RunsErrors == 0
			x.Pass = &ok
		case x.p99Target > 0:
			pass(x.Latency.P99 < x.p99Target, fmt.Sprintf("p99 < %.0f ms", x.p99Target))
		case x.Key == "memory/peak":
			pass(x.Bytes < targetPeakRSS, fmt.Sprintf("< %d MiB", targetPeakRSS>>20))
		case x.Key == "memory/peak-serve":
			pass(x.Bytes < targetServePeakRSS, fmt.Sprintf("< %d MiB", targetServePeakRSS>>20))
		}
	}
	for _, x := range r.Rows {
		prefix := x.Shape + "_"
		switch x.Key {
		case "create/max", "e2e/sustained":
			r.Headline[prefix+strings.ReplaceAll(strings.TrimPrefix(x.Key, "e2e/"), "/", "_")+"_"+x.System+"_per_s"] = x.Rate
		case "e2e/serial":
			r.Headline[prefix+"serial_p50_"+x.System+"_ms"] = x.Latency.P50
		}
	}
}

// print writes a table per shape, the headlines and the per-job costs.
func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nGateway benchmark, %s, %d CPUs, gateway store %s\n", r.StartedAt.Format(time.RFC3339), runtime.NumCPU(), orDash(r.Store))
	var shapes []string
	for _, x := range r.Rows {
		if !slices.Contains(shapes, x.Shape) {
			shapes = append(shapes, x.Shape)
		}
	}
	for _, shape := range shapes {
		fmt.Fprintf(w, "\n%s\n\n", shapeTitle(shape))
		r.printShape(w, shape)
	}
	for _, shape := range shapes {
		prefix := shape + "_"
		v, ok := r.Headline[prefix+"throughput_vs_floor"]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "\nHeadline (%s): the gateway completes %.2f× the jobs per second of the floor and %.2f× the baseline's (%.1f/s vs %.1f/s and %.1f/s)",
			shape, v, r.Headline[prefix+"throughput_vs_baseline"], r.Headline[prefix+"sustained_gateway_per_s"],
			r.Headline[prefix+"sustained_floor_per_s"], r.Headline[prefix+"sustained_baseline_per_s"])
		if p, ok := r.Headline[prefix+"serial_p50_vs_floor"]; ok {
			fmt.Fprintf(w, ";\none job at a time takes %.2f× the floor's time and %.2f× the baseline's (p50 %.1f ms vs %.1f ms and %.1f ms)",
				p, r.Headline[prefix+"serial_p50_vs_baseline"], r.Headline[prefix+"serial_p50_gateway_ms"],
				r.Headline[prefix+"serial_p50_floor_ms"], r.Headline[prefix+"serial_p50_baseline_ms"])
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
	for _, name := range []string{"e2e", "create", "memory", "reads", "fairness", "production", "scaleout"} {
		if s, ok := r.PhaseSeconds[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %.0f s", name, s))
		}
	}
	fmt.Fprintf(w, "%s).\n", strings.Join(parts, ", "))
}

// printShape writes the table of one shape.
func (r *report) printShape(w io.Writer, shape string) {
	cells := [][]string{{"measure", "system", "n", "err", "value", "p50 ms", "p95 ms", "p99 ms",
		"thr ×floor", "p50 ×floor", "p99 ×floor", "thr ×base", "p50 ×base", "p99 ×base", "cpu ms/job", "other cpu", "target", "result"}}
	section := ""
	for _, x := range r.Rows {
		if x.Shape != shape {
			continue
		}
		if x.Section != section {
			section = x.Section
			cells = append(cells, []string{strings.ToUpper(section)})
		}
		value := x.Value
		if value == "" && x.Rate > 0 {
			value = fmt.Sprintf("%.1f/s", x.Rate)
		}
		lat := func(v float64) string {
			if x.info || x.Latency.N == 0 || strings.HasPrefix(x.Key, "memory/peak") {
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
			times(x.FloorThr), times(x.FloorP50), times(x.FloorP99),
			times(x.ThrRatio), times(x.P50Ratio), times(x.P99Ratio), cpuPerJob(x), otherCPU(x.CPU), x.Target, result})
	}
	printTable(w, cells, 2)
}

// shapeTitle says what a shape runs.
func shapeTitle(shape string) string {
	switch shape {
	case "production":
		return "PRODUCTION SHAPE: Temporal server (PostgreSQL), gateway serve and gateway worker(s) as separate processes, store on PostgreSQL"
	default:
		return "DEV SHAPE: gateway dev, one process (API, worker, embedded Temporal on SQLite, store)"
	}
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
