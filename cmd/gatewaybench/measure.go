package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// sample is one operation: when it was due, how long it took from then,
// and what it returned.
type sample struct {
	due time.Time
	lat time.Duration
	id  string
	err error
}

// stats summarises latencies in milliseconds.
type stats struct {
	N      int     `json:"n"`
	Errors int     `json:"errors"`
	P50    float64 `json:"p50_ms"`
	P95    float64 `json:"p95_ms"`
	P99    float64 `json:"p99_ms"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// split separates the successful samples from the failures' messages.
func split(samples []sample) (ok []sample, errs []string) {
	for _, s := range samples {
		if s.err != nil {
			errs = append(errs, s.err.Error())
		} else {
			ok = append(ok, s)
		}
	}
	return ok, errs
}

// summary is the nearest-rank percentiles of the successful samples'
// latencies, and the first failures' messages.
func summary(samples []sample) (stats, []string) {
	ok, errs := split(samples)
	s := stats{N: len(ok), Errors: len(errs)}
	slices.SortFunc(ok, func(a, b sample) int { return cmp.Compare(a.lat, b.lat) })
	if len(ok) > 0 {
		at := func(q float64) float64 { return ms(ok[min(int(q*float64(len(ok))+0.999999), len(ok))-1].lat) }
		s.P50, s.P95, s.P99 = at(0.50), at(0.95), at(0.99)
	}
	return s, firstN(errs, 3)
}

// lastEnd is when the last of the samples ended.
func lastEnd(samples []sample) (last time.Time) {
	for _, s := range samples {
		if end := s.due.Add(s.lat); s.err == nil && end.After(last) {
			last = end
		}
	}
	return last
}

// maxInFlight bounds the open-loop generator; a request due while this
// many are outstanding is counted as an error rather than sent late.
const maxInFlight = 4000

// openLoop sends rate operations per second for d, each due at a fixed
// time; latency runs from it, so a stalled server is charged for the
// requests it delays (no coordinated omission).
func openLoop(ctx context.Context, rate int, d time.Duration, op func(context.Context) (string, error)) []sample {
	samples := make([]sample, int(float64(rate)*d.Seconds()))
	var wg sync.WaitGroup
	var inFlight atomic.Int64
	start := time.Now()
	for i := range samples {
		due := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
		select {
		case <-ctx.Done():
			wg.Wait()
			return samples[:i]
		case <-time.After(time.Until(due)):
		}
		if inFlight.Load() >= maxInFlight {
			samples[i] = sample{due: due, err: fmt.Errorf("generator: %d requests outstanding", maxInFlight)}
			continue
		}
		inFlight.Add(1)
		wg.Go(func() {
			defer inFlight.Add(-1)
			id, err := op(ctx)
			samples[i] = sample{due: due, lat: time.Since(due), id: id, err: err}
		})
	}
	wg.Wait()
	return samples
}

// closedLoop runs clients, each starting its next operation when the
// previous one returns, for d or, if n > 0, until n have started.
func closedLoop(ctx context.Context, clients int, d time.Duration, n int, op func(context.Context) (string, error)) []sample {
	deadline := time.Now().Add(d)
	var mu sync.Mutex
	var samples []sample
	var started atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil && (n <= 0 || started.Add(1) <= int64(n)) {
				due := time.Now()
				id, err := op(ctx)
				mu.Lock()
				samples = append(samples, sample{due: due, lat: time.Since(due), id: id, err: err})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return samples
}

// forEach runs fn over items with n goroutines.
func forEach[T any](items []T, n int, fn func(int, T)) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range min(n, len(items)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(items); i = int(next.Add(1)) - 1 {
				fn(i, items[i])
			}
		})
	}
	wg.Wait()
}

// steadyCount is what a closed loop completed after its first completion
// (the end of the ramp-up) until deadline, and that time; with fewer than
// 20 such, all its completions and the time from first start to last end.
func steadyCount(samples []sample, deadline time.Time) (int, float64) {
	ok, _ := split(samples)
	if len(ok) == 0 {
		return 0, 0
	}
	slices.SortFunc(ok, func(a, b sample) int { return a.due.Add(a.lat).Compare(b.due.Add(b.lat)) })
	first, within := ok[0].due.Add(ok[0].lat), 0
	for _, s := range ok[1:] {
		if !s.due.Add(s.lat).After(deadline) {
			within++
		}
	}
	if within >= 20 && deadline.After(first) {
		return within, deadline.Sub(first).Seconds()
	}
	earliest := slices.MinFunc(ok, func(a, b sample) int { return a.due.Compare(b.due) }).due
	return len(ok), lastEnd(ok).Sub(earliest).Seconds()
}

// cpuTimes are CPU times: cumulative (a reading) or between two readings.
type cpuTimes struct {
	wall        time.Duration
	busy, total int64 // the machine's, in clock ticks
	// procs are the measured processes by name, "postgres" (all its
	// processes) and "bench" (this one: load, SDK clients, the floor's and
	// the baseline's workers).
	procs map[string]time.Duration
}

// clockTicks is USER_HZ, the unit of /proc CPU times.
const clockTicks = 100

func readCPU(procs []*process) cpuTimes {
	r := cpuTimes{wall: time.Duration(time.Now().UnixNano()), procs: map[string]time.Duration{}}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		fields := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal …
		for i, f := range fields[1:min(len(fields), 9)] {
			v, _ := strconv.ParseInt(f, 10, 64)
			r.total += v
			if i != 3 && i != 4 {
				r.busy += v
			}
		}
	}
	for _, p := range procs {
		r.procs[p.name] += pidCPU(p.pid())
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if comm, err := os.ReadFile("/proc/" + e.Name() + "/comm"); err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			pid, _ := strconv.Atoi(e.Name())
			r.procs["postgres"] += pidCPU(pid)
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		r.procs["bench"] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r
}

// pidCPU is the user and system time a process has used.
func pidCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// After the parenthesised command: utime is field 14, stime 15.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) <= 12 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * time.Second / clockTicks
}

// since is the CPU the same processes used from the reading r to now.
func (r cpuTimes) since(procs []*process) cpuTimes {
	now := readCPU(procs)
	now.add(r, -1)
	return now
}

// add adds sign times t to s.
func (s *cpuTimes) add(t cpuTimes, sign int64) {
	s.wall, s.busy, s.total = s.wall+time.Duration(sign)*t.wall, s.busy+sign*t.busy, s.total+sign*t.total
	if s.procs == nil {
		s.procs = map[string]time.Duration{}
	}
	for name, d := range t.procs {
		s.procs[name] += time.Duration(sign) * d
	}
}

// cpuUse is what a stretch of time cost in CPU, as reported.
type cpuUse struct {
	Seconds    float64            `json:"seconds"`
	Cores      map[string]float64 `json:"cores"`       // used by the measured processes and PostgreSQL
	BenchCores float64            `json:"bench_cores"` // used by this process
	OtherCores float64            `json:"other_cores"` // used by other work on the machine
	PerJobMS   float64            `json:"per_job_ms"`  // CPU of all but other work, per job
}

// use is s reported, jobs being the work done.
func (s cpuTimes) use(jobs int) *cpuUse {
	wall := s.wall.Seconds()
	if wall <= 0 {
		return nil
	}
	u := &cpuUse{Seconds: wall, Cores: map[string]float64{}, BenchCores: s.procs["bench"].Seconds() / wall}
	used := s.procs["bench"]
	for name, t := range s.procs {
		if name != "bench" && t > 0 {
			u.Cores[name] = t.Seconds() / wall
			used += t
		}
	}
	if s.total > 0 {
		u.OtherCores = max(0, float64(s.busy)/float64(s.total)*float64(runtime.NumCPU())-used.Seconds()/wall)
	}
	if jobs > 0 {
		u.PerJobMS = used.Seconds() * 1000 / float64(jobs)
	}
	return u
}

// memory is a reading of /proc/<pid>/status, in bytes.
type memory struct {
	RSS  int64 // VmRSS: resident now
	Peak int64 // VmHWM: the high-water mark of VmRSS
	Anon int64 // RssAnon: heap, stacks, SQLite's caches
	File int64 // RssFile: the mapped binary and files
}

func readMemory(pid int) (m memory, err error) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	fields := map[string]*int64{"VmRSS": &m.RSS, "VmHWM": &m.Peak, "RssAnon": &m.Anon, "RssFile": &m.File}
	for line := range strings.Lines(string(status)) {
		name, value, _ := strings.Cut(line, ":")
		if dst, ok := fields[name]; ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
			*dst = kb << 10
		}
	}
	return m, err
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// stages of a job's time: the gap before each event of its history counts
// to the stage of the event's type (one task or activity runs at a time;
// the gateway's local activities run inside workflow tasks).
var stages = map[enumspb.EventType]string{
	enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED: "submit→started",
	enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:      "workflow tasks queued",
	enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:    "workflow tasks running",
	enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:       "workflow tasks running",
	enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:      "activities queued",
	enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:    "activities running",
	enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:       "activities running",
}

// breakDown notes where the submit→completed time of up to 50 of the jobs
// (spread evenly) went, means in ms, and what the last one's history holds.
func (d *deployment) breakDown(ctx context.Context, phase string, sys *system, jobs []sample) {
	spent := map[string]float64{} // ms, by stage
	var n, events int
	var counts map[enumspb.EventType]int
	var last string
	for i := 0; i < len(jobs) && n < 50; i += max(1, len(jobs)/50) {
		counts, last, events = map[enumspb.EventType]int{}, jobs[i].id, 0
		prev := jobs[i].due
		iter := d.obs.GetWorkflowHistory(ctx, last, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				d.b.logf("breakdown of %s (%s): %v", phase, sys.name, err)
				return
			}
			counts[ev.GetEventType()]++
			events++
			spent[cmp.Or(stages[ev.GetEventType()], "other")] += ms(ev.GetEventTime().AsTime().Sub(prev))
			prev = ev.GetEventTime().AsTime()
		}
		n += counts[enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED]
	}
	if n == 0 {
		return
	}
	var parts []string
	total := 0.0
	for _, stage := range []string{"submit→started", "workflow tasks queued", "workflow tasks running", "activities queued", "activities running", "other"} {
		parts, total = append(parts, fmt.Sprintf("%s %.1f", stage, spent[stage]/float64(n))), total+spent[stage]/float64(n)
	}
	d.b.rep.note("where the time goes", sys.name, phase, "%s; %.1f ms in all (%d jobs)", strings.Join(parts, ", "), total, n)
	desc, _ := d.obs.DescribeWorkflowExecution(ctx, last, "") // nil on error: its size reads 0
	d.b.rep.note("history per job", sys.name, phase, "%d events, %d workflow tasks, %d activities, %d local activities (markers), %d bytes", events,
		counts[enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED], counts[enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED], counts[enumspb.EVENT_TYPE_MARKER_RECORDED],
		desc.GetWorkflowExecutionInfo().GetHistorySizeBytes())
}
