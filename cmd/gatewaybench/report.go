package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Targets (docs/benchmarks.md, Targets): the gateway against the floor.
const (
	targetThroughputRatio = 0.7
	targetSerialP50Ratio  = 1.5
	targetCreateP99MS     = 25
	targetCreateRate      = 200
)

// row is one figure: a line of its shape's table, or a note below it when
// it has only a value.
type row struct {
	Shape        string             `json:"shape"`
	Section      string             `json:"section"`
	Key          string             `json:"key,omitempty"`
	Measure      string             `json:"measure"`
	System       string             `json:"system"`
	Offered      float64            `json:"offered_per_s,omitempty"`
	Rate         float64            `json:"achieved_per_s,omitempty"`
	Latency      stats              `json:"latency"`
	Value        string             `json:"value,omitempty"`
	Bytes        int64              `json:"bytes,omitempty"`
	Vs           map[string]*ratios `json:"vs,omitempty"` // the gateway's against the floor's and the baseline's
	Target       string             `json:"target,omitempty"`
	Pass         *bool              `json:"pass,omitempty"`
	ErrorSamples []string           `json:"error_samples,omitempty"`
	RunsP99      []float64          `json:"runs_p99_ms,omitempty"` // the p99 of each run of a repeated phase
	RunsErrors   int                `json:"runs_errors,omitempty"` // … and their failed requests, in all
	CPU          *cpuUse            `json:"cpu,omitempty"`
}

// ratios are the gateway's figures over another system's.
type ratios struct {
	Throughput *float64 `json:"throughput,omitempty"` // none at a fixed offered rate: both get what was offered
	P50        *float64 `json:"p50,omitempty"`
	P99        *float64 `json:"p99,omitempty"`
}

// judge sets the row's target and whether it passed: ok and no error.
func (x *row) judge(ok bool, target string) {
	ok = ok && x.Latency.Errors == 0 && x.RunsErrors == 0
	x.Target, x.Pass = target, &ok
}

func (x row) note() bool {
	return x.Latency.N == 0 && x.Latency.Errors == 0 && x.Rate == 0 && x.Pass == nil
}

// report is the whole run, as printed and as written to JSON.
type report struct {
	StartedAt    time.Time      `json:"started_at"`
	Host         map[string]any `json:"host"`
	Options      options        `json:"options"`
	Rows         []row          `json:"rows"`
	Failures     []string       `json:"failures,omitempty"`
	TotalSeconds float64        `json:"total_seconds"`
	shape        string         // of the rows being added
}

func newReport(opts options) *report {
	host, _ := os.Hostname()
	return &report{StartedAt: time.Now().UTC(), Options: opts, shape: "dev",
		Host: map[string]any{"hostname": host, "cpus": runtime.NumCPU(), "go": runtime.Version()}}
}

// add adds a row of the shape being measured.
func (r *report) add(x row) {
	x.Shape = r.shape
	r.Rows = append(r.Rows, x)
}

// note adds a row that only carries a value.
func (r *report) note(section, system, measure, format string, args ...any) {
	r.add(row{Section: section, Measure: measure, System: system, Value: fmt.Sprintf(format, args...)})
}

// errorCount is the number of the gateway's failed requests and jobs (bare
// Temporal past its capacity refuses starts: a figure, not a failure).
func (r *report) errorCount() int {
	n := 0
	for _, x := range r.Rows {
		if x.System == "gateway" {
			n += x.Latency.Errors
		}
	}
	return n
}

// find is the row of that shape, key and system, or an empty one.
func (r *report) find(shape, key, system string) row {
	for _, x := range r.Rows {
		if x.Shape == shape && x.Key == key && x.System == system {
			return x
		}
	}
	return row{}
}

// evaluate fills in the gateway's ratios to the floor and the baseline of
// the same shape, and the targets set against the floor.
func (r *report) evaluate() {
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
		x.Vs = map[string]*ratios{} // empty: omitted from the JSON
		for _, other := range []string{"floor", "baseline"} {
			if ref := r.find(x.Shape, x.Key, other); ref.Key != "" {
				rs := &ratios{P50: ratio(x.Latency.P50, ref.Latency.P50), P99: ratio(x.Latency.P99, ref.Latency.P99)}
				if x.Offered == 0 || !strings.HasPrefix(x.Key, "create/") {
					rs.Throughput = ratio(x.Rate, ref.Rate)
				}
				x.Vs[other] = rs
			}
		}
		f := cmp.Or(x.Vs["floor"], &ratios{})
		switch x.Key {
		case "e2e/sustained":
			x.judge(f.Throughput != nil && *f.Throughput >= targetThroughputRatio, fmt.Sprintf("≥ %.1f× floor", targetThroughputRatio))
		case "e2e/serial":
			x.judge(f.P50 != nil && *f.P50 <= targetSerialP50Ratio, fmt.Sprintf("p50 ≤ %.1f× floor", targetSerialP50Ratio))
		}
	}
}

// print writes a table per shape with its notes and headlines, then the
// errors and the failed phases.
func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nGateway benchmark, %s, %d CPUs\n", r.StartedAt.Format(time.RFC3339), runtime.NumCPU())
	for _, shape := range []string{"dev", "production"} {
		if !slices.ContainsFunc(r.Rows, func(x row) bool { return x.Shape == shape }) {
			continue
		}
		title := "DEV SHAPE: gateway dev, one process (API, worker, embedded Temporal on SQLite, store)"
		if shape == "production" {
			title = "PRODUCTION SHAPE: Temporal server (PostgreSQL), gateway serve and gateway worker(s) as separate processes, store on PostgreSQL"
		}
		fmt.Fprintf(w, "\n%s\n\n", title)
		r.printShape(w, shape)
		for _, x := range r.Rows {
			if x.Shape == shape && x.note() {
				fmt.Fprintf(w, "  %s, %s (%s): %s\n", x.Section, x.Measure, x.System, x.Value)
			}
		}
		g, f, bl := r.find(shape, "e2e/sustained", "gateway"), r.find(shape, "e2e/sustained", "floor"), r.find(shape, "e2e/sustained", "baseline")
		if g.Vs["floor"] != nil && g.Vs["baseline"] != nil {
			fmt.Fprintf(w, "\nHeadline (%s): the gateway completes %s the jobs per second of the floor and %s the baseline's (%.1f/s vs %.1f/s and %.1f/s).\n",
				shape, times(g.Vs["floor"].Throughput), times(g.Vs["baseline"].Throughput), g.Rate, f.Rate, bl.Rate)
		}
		g, f, bl = r.find(shape, "e2e/serial", "gateway"), r.find(shape, "e2e/serial", "floor"), r.find(shape, "e2e/serial", "baseline")
		if g.Vs["floor"] != nil && g.Vs["baseline"] != nil {
			fmt.Fprintf(w, "Headline (%s): one job at a time takes %s the floor's time and %s the baseline's (p50 %.1f ms vs %.1f ms and %.1f ms).\n",
				shape, times(g.Vs["floor"].P50), times(g.Vs["baseline"].P50), g.Latency.P50, f.Latency.P50, bl.Latency.P50)
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
	fmt.Fprintf(w, "\nTook %.0f s.\n", r.TotalSeconds)
}

// printShape writes the table of one shape.
func (r *report) printShape(w io.Writer, shape string) {
	// Every line has all the columns, each cell tab-terminated: tabwriter
	// aligns a column over consecutive lines that have it.
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tsystem\tn\terr\tvalue\tp50 ms\tp95 ms\tp99 ms\tthr ×floor\tp50 ×floor\tp99 ×floor\tthr ×base\tp50 ×base\tp99 ×base\tcpu ms/job\tother cpu\ttarget\tresult\t")
	section := ""
	for _, x := range r.Rows {
		if x.Shape != shape || x.note() {
			continue
		}
		if x.Section != section {
			section = x.Section
			fmt.Fprintln(tw, strings.ToUpper(section)+strings.Repeat("\t", 18))
		}
		value := cmp.Or(x.Value, cond(x.Rate > 0, fmt.Sprintf("%.1f/s", x.Rate)))
		cells := []string{"  " + x.Measure, x.System, fmt.Sprint(x.Latency.N), fmt.Sprint(x.Latency.Errors), value}
		for _, v := range []float64{x.Latency.P50, x.Latency.P95, x.Latency.P99} {
			cells = append(cells, cond(x.Latency.N > 0 && x.Bytes == 0, fmt.Sprintf("%.1f", v)))
		}
		for _, other := range []string{"floor", "baseline"} {
			rs := cmp.Or(x.Vs[other], &ratios{})
			cells = append(cells, times(rs.Throughput), times(rs.P50), times(rs.P99))
		}
		// CPU per job of end-to-end rows only: during a create phase the CPU
		// also runs the workflows of earlier creates.
		cpu := cmp.Or(x.CPU, &cpuUse{})
		cells = append(cells, cond(cpu.PerJobMS > 0 && x.Section == "end to end", fmt.Sprintf("%.1f", cpu.PerJobMS)),
			cond(x.CPU != nil, fmt.Sprintf("%.2f", cpu.OtherCores)), x.Target)
		result := cond(x.Pass != nil && *x.Pass, "pass") + cond(x.Pass != nil && !*x.Pass, "FAIL")
		fmt.Fprintln(tw, strings.Join(append(cells, strings.TrimSpace(result+cond(x.Latency.Errors > 0, " errors"))), "\t")+"\t")
	}
	tw.Flush()
	for line := range strings.Lines(table.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}

// cond is s if ok, else "".
func cond(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

func times(v *float64) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%.2f×", *v)
}

func (r *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	return errors.Join(err, os.MkdirAll(filepath.Dir(path), 0o755), os.WriteFile(path, append(b, '\n'), 0o644))
}

func firstN(s []string, n int) []string { return s[:min(n, len(s))] }
